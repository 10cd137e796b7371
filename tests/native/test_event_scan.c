/* Harness for monitor/ingest/event_scan.c.
 *
 *   test_event_scan            table of cases + byte-mutation fuzz; exit 0 when all pass
 *   test_event_scan cli MAX    stdin: one hex-encoded record per line; stdout: one JSON line
 *                              per record with the status and the fields as [offset, length]
 *   test_event_scan bench [N]  ns/event for a typical 100-doc event (informational)
 *
 * Every input is copied into a heap buffer of exactly its length (no terminator), so under
 * -fsanitize=address a read past buf+len is caught; the docs array is followed by a canary.
 */
#define _POSIX_C_SOURCE 199309L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event_scan.h"

#define CANARY_OFF 0xDEADBEEFu
#define MAX_DOCS_ROOM 1100

static int failures;
static int checks;

/* The scanner's result as text, for comparing with a table's expectation:
 * "e=<event_id> q=<query_id> r=<doc>,<doc> t=<ms or -> j=<0|1> s=<key>:<value>,..." */
static void render(const char *buf, const rm_event *ev, const rm_span *docs, char *out,
                   size_t room)
{
    size_t n = 0;
#define PUT(...) n += (size_t)snprintf(out + n, n < room ? room - n : 0, __VA_ARGS__)
#define SPAN(s) (int)(s).len, buf + (s).off
    PUT("e=%.*s q=%.*s r=", SPAN(ev->event_id), SPAN(ev->query_id));
    for (uint32_t i = 0; i < ev->n_docs; i++) {
        PUT("%s%.*s", i ? "," : "", SPAN(docs[i]));
    }
    if (ev->has_event_time) {
        PUT(" t=%lld", (long long)ev->event_time_ms);
    } else {
        PUT(" t=-");
    }
    PUT(" j=%d s=", ev->has_judgments);
    for (uint32_t i = 0; i < ev->n_segment; i++) {
        PUT("%s%.*s:%.*s", i ? "," : "", SPAN(ev->segment_keys[i]),
            SPAN(ev->segment_values[i]));
    }
#undef PUT
#undef SPAN
}

/* Scan `len` bytes of `input` from an exact-size heap copy, checking the docs canary and
 * that every span lies inside the buffer. Returns the status; fills `text` when OK. */
static int scan_checked(const char *input, size_t len, uint32_t max_docs, char *text,
                        size_t room, const char *label)
{
    char *buf = malloc(len ? len : 1);
    rm_span *docs = malloc((max_docs + 1) * sizeof(rm_span));
    rm_event ev;
    if (!buf || !docs) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memcpy(buf, input, len);
    docs[max_docs].off = CANARY_OFF;
    docs[max_docs].len = CANARY_OFF;
    int status = rm_scan_event(buf, len, max_docs, docs, &ev);
    checks++;
    if (docs[max_docs].off != CANARY_OFF || docs[max_docs].len != CANARY_OFF) {
        fprintf(stderr, "FAIL %s: wrote past docs[max_docs - 1]\n", label);
        failures++;
    }
    if (status != RM_SCAN_OK && status != RM_SCAN_PUNT) {
        fprintf(stderr, "FAIL %s: status %d\n", label, status);
        failures++;
    }
    if (status == RM_SCAN_OK) {
        int bad = ev.n_docs < 1 || ev.n_docs > max_docs || ev.n_segment > RM_MAX_SEGMENT ||
                  ev.event_id.len == 0 || ev.query_id.len == 0 ||
                  (ev.has_event_time && ev.event_time_ms < 0);
        rm_span all[4 + 2 * RM_MAX_SEGMENT];
        size_t n_all = 0;
        all[n_all++] = ev.event_id;
        all[n_all++] = ev.query_id;
        for (uint32_t i = 0; !bad && i < ev.n_segment; i++) {
            all[n_all++] = ev.segment_keys[i];
            all[n_all++] = ev.segment_values[i];
        }
        for (size_t i = 0; i < n_all; i++) {
            bad |= (uint64_t)all[i].off + all[i].len > len;
        }
        for (uint32_t i = 0; !bad && i < ev.n_docs; i++) {
            bad |= docs[i].len == 0 || (uint64_t)docs[i].off + docs[i].len > len;
        }
        if (bad) {
            fprintf(stderr, "FAIL %s: OK with an inconsistent result\n", label);
            failures++;
        } else if (text) {
            render(buf, &ev, docs, text, room);
        }
    }
    free(docs);
    free(buf);
    return status;
}

/* One table case: `expected` is NULL for a punt, else the rendered result. */
static void expect(int line, const char *input, uint32_t max_docs, const char *expected)
{
    char text[8192] = "";
    char label[64];
    snprintf(label, sizeof label, "line %d", line);
    int status = scan_checked(input, strlen(input), max_docs, text, sizeof text, label);
    if (!expected && status != RM_SCAN_PUNT) {
        fprintf(stderr, "FAIL %s: expected PUNT, got OK (%s)\n  input: %s\n", label, text,
                input);
        failures++;
    } else if (expected && status != RM_SCAN_OK) {
        fprintf(stderr, "FAIL %s: expected OK, got PUNT\n  input: %s\n", label, input);
        failures++;
    } else if (expected && strcmp(text, expected) != 0) {
        fprintf(stderr, "FAIL %s:\n  input:    %s\n  expected: %s\n  got:      %s\n", label,
                input, expected, text);
        failures++;
    }
}

#define OK(input, expected) expect(__LINE__, input, 10, expected)
#define PUNT(input) expect(__LINE__, input, 10, NULL)
#define ID "\"event_id\":\"e1\",\"query_id\":\"q1\",\"ranking\":[\"a\",\"b\"]"
#define BASE_OUT "e=e1 q=q1 r=a,b"
/* The minimal event with one more field. */
#define WITH(field) "{" ID "," field "}"

static void test_structure(void)
{
    OK("{" ID "}", BASE_OUT " t=- j=0 s=");
    OK(" \t\r\n{ \"event_id\" : \"e1\" ,\n\"query_id\"\t:\"q1\", \"ranking\" : [ \"a\" , \"b\" ] "
       "} \n\r\t ",
       BASE_OUT " t=- j=0 s=");
    OK("{\"ranking\":[\"a\",\"b\"],\"query_id\":\"q1\",\"event_id\":\"e1\"}",
       BASE_OUT " t=- j=0 s=");
    OK(WITH("\"schema_version\":1"), BASE_OUT " t=- j=0 s=");
    /* DEL (0x7f) and other printable ASCII are plain string bytes. */
    OK("{\"event_id\":\"e\x7f/ '{}[]:,\",\"query_id\":\"q1\",\"ranking\":[\"a\",\"b\"]}",
       "e=e\x7f/ '{}[]:, q=q1 r=a,b t=- j=0 s=");
    PUNT("");
    PUNT("   ");
    PUNT("{}");
    PUNT("[]");
    PUNT("\"x\"");
    PUNT("{" ID "} {}");
    PUNT("{" ID "}x");
    PUNT("{" ID ",}");
    PUNT("{," ID "}");
    PUNT("{" ID);
    PUNT("{\"event_id\" \"e1\",\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"e1\";\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{event_id:\"e1\",\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("\xef\xbb\xbf{" ID "}"); /* a BOM */
    PUNT("\f{" ID "}");           /* not JSON whitespace */
    /* Non-ASCII, backslashes, control characters: anywhere. */
    PUNT("{\"event_id\":\"\xc3\xa9\",\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT(WITH("\"x\":\"caf\xc3\xa9\""));
    PUNT(WITH("\"x\xc3\xa9\":1"));
    PUNT(WITH("\"x\":\"\\n\""));
    PUNT(WITH("\"x\\u0041\":1"));
    PUNT("{\"event_id\":\"e\\\"1\",\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"e1\",\"query_id\":\"q1\",\"ranking\":[\"a\\/\"]}");
    PUNT(WITH("\"x\":\"tab\there\""));
    PUNT(WITH("\"x\":\"nl\nhere\""));
    /* Embedded NUL: built by hand, strlen would stop at it. */
    {
        const char with_nul[] = "{" ID ",\"x\":\"a\0b\"}";
        if (scan_checked(with_nul, sizeof with_nul - 1, 10, NULL, 0, "NUL") != RM_SCAN_PUNT) {
            fprintf(stderr, "FAIL NUL in a string: expected PUNT\n");
            failures++;
        }
        const char nul_after[] = "{" ID "}\0";
        if (scan_checked(nul_after, sizeof nul_after - 1, 10, NULL, 0, "NUL") != RM_SCAN_PUNT) {
            fprintf(stderr, "FAIL NUL after the object: expected PUNT\n");
            failures++;
        }
    }
}

static void test_identifiers_and_duplicates(void)
{
    OK("{\"event_id\":\"4c1f9a2e-0d7b\",\"query_id\":\"shoes red\",\"ranking\":[\"d\"]}",
       "e=4c1f9a2e-0d7b q=shoes red r=d t=- j=0 s=");
    PUNT("{\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"e1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"e1\",\"query_id\":\"q1\"}");
    PUNT("{\"event_id\":null,\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"\",\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"e1\",\"query_id\":\"\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":1,\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":[\"e1\"],\"query_id\":\"q1\",\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"e1\",\"query_id\":{},\"ranking\":[\"a\"]}");
    PUNT("{\"event_id\":\"e1\",\"query_id\":true,\"ranking\":[\"a\"]}");
    /* Duplicate keys punt, known or not (Python's dict keeps the last). */
    PUNT("{" ID ",\"event_id\":\"e2\"}");
    PUNT("{" ID ",\"ranking\":[\"c\"]}");
    PUNT(WITH("\"event_time\":null,\"event_time\":5"));
    PUNT(WITH("\"segment\":null,\"segment\":null"));
    PUNT(WITH("\"judgments\":{},\"judgments\":{}"));
    PUNT(WITH("\"schema_version\":1,\"schema_version\":1"));
    PUNT(WITH("\"x\":1,\"y\":2,\"x\":1"));
    PUNT(WITH("\"\":1,\"\":1"));
    OK(WITH("\"x\":1,\"xx\":2,\"\":3,\"event_idx\":4,\"Event_id\":5,\"event_i\":6"),
       BASE_OUT " t=- j=0 s=");
}

static void test_ranking(void)
{
    OK("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"only\"]}", "e=e q=q r=only t=- j=0 s=");
    /* Duplicates are the caller's check, not the scanner's. */
    OK("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\",\"a\"]}", "e=e q=q r=a,a t=- j=0 s=");
    OK("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a long document id, with spaces\"]}",
       "e=e q=q r=a long document id, with spaces t=- j=0 s=");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[ ]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":null}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":\"a\"}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":{\"a\":\"b\"}}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"\"]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\",\"\"]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[1]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\",null]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\",[\"b\"]]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\",]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[,\"a\"]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\" \"b\"]}");
    PUNT("{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\"}");
    /* The max_docs boundary: exactly max is OK, one more punts without touching the canary
     * (scan_checked checks it). */
    const char *three = "{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\",\"b\",\"c\"]}";
    const char *four = "{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\",\"b\",\"c\",\"d\"]}";
    expect(__LINE__, three, 3, "e=e q=q r=a,b,c t=- j=0 s=");
    expect(__LINE__, four, 3, NULL);
    expect(__LINE__, four, 4, "e=e q=q r=a,b,c,d t=- j=0 s=");
    expect(__LINE__, three, 1, NULL);
    expect(__LINE__, "{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\"]}", 1,
           "e=e q=q r=a t=- j=0 s=");
    expect(__LINE__, "{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"a\"]}", 0, NULL);
    /* A long ranking over a long max: exactly 1000, then 1001. */
    static char big[16000];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[");
    for (int i = 0; i < 1001; i++) {
        n += (size_t)snprintf(big + n, sizeof big - n, "%s\"d%d\"", i ? "," : "", i);
        if (i == 999) {
            char text[16000];
            char head[16000];
            memcpy(head, big, n);
            memcpy(head + n, "]}", 3);
            if (scan_checked(head, n + 2, 1000, text, sizeof text, "1000 docs") != RM_SCAN_OK ||
                strncmp(text, "e=e q=q r=d0,d1,d2,", 19) != 0 ||
                !strstr(text, ",d998,d999 t=-")) {
                fprintf(stderr, "FAIL 1000 docs with max 1000: expected OK\n");
                failures++;
            }
        }
    }
    memcpy(big + n, "]}", 3);
    if (scan_checked(big, n + 2, 1000, NULL, 0, "1001 docs") != RM_SCAN_PUNT) {
        fprintf(stderr, "FAIL 1001 docs with max 1000: expected PUNT\n");
        failures++;
    }
}

static void test_schema_version(void)
{
    OK(WITH("\"schema_version\":1"), BASE_OUT " t=- j=0 s=");
    OK(WITH("\"schema_version\" : 1 "), BASE_OUT " t=- j=0 s=");
    PUNT(WITH("\"schema_version\":null"));
    PUNT(WITH("\"schema_version\":1.0"));
    PUNT(WITH("\"schema_version\":true"));
    PUNT(WITH("\"schema_version\":\"1\""));
    PUNT(WITH("\"schema_version\":01"));
    PUNT(WITH("\"schema_version\":-1"));
    PUNT(WITH("\"schema_version\":1e0"));
    PUNT(WITH("\"schema_version\":2"));
    PUNT(WITH("\"schema_version\":0"));
    PUNT(WITH("\"schema_version\":10"));
    PUNT(WITH("\"schema_version\":[1]"));
}

#define TIME(value, expected) OK(WITH("\"event_time\":" value), BASE_OUT " t=" expected " j=0 s=")
#define BAD_TIME(value) PUNT(WITH("\"event_time\":" value))

static void test_event_time(void)
{
    OK(WITH("\"event_time\":null"), BASE_OUT " t=- j=0 s=");
    TIME("100000000000", "100000000000"); /* MIN_EPOCH_MS, 1973-03-03 */
    TIME("1700000000000", "1700000000000");
    BAD_TIME("0");                        /* under MIN_EPOCH_MS: epoch seconds? Python says */
    BAD_TIME("1796120000");
    BAD_TIME("99999999999");
    TIME("999999999999999", "999999999999999"); /* 15 digits */
    BAD_TIME("1000000000000000");               /* 16 digits */
    BAD_TIME("-1");
    BAD_TIME("-0");
    BAD_TIME("01");
    BAD_TIME("1.5");
    BAD_TIME("1.0");
    BAD_TIME("1e3");
    BAD_TIME("true");
    BAD_TIME("[]");
    BAD_TIME("{}");
    BAD_TIME("\"\"");
    BAD_TIME("\"1700000000000\"");
    /* RFC 3339, hand-derived: 2024-01-01T00:00:00Z is 1704067200 s (19723 days); Feb 29 is
     * day 19723 + 31 + 28 = 19782, 1709164800 s; 12:34:56 adds 45296 s. */
    TIME("\"1970-01-01T00:00:00Z\"", "0");
    TIME("\"2024-02-29T12:34:56Z\"", "1709210096000");
    TIME("\"2024-02-29t12:34:56.123z\"", "1709210096123");
    TIME("\"2024-02-29 12:34:56.123456+00:00\"", "1709210096123");
    TIME("\"2024-02-29T12:34:56.999999Z\"", "1709210096999"); /* truncated, not rounded */
    /* +05:30: UTC is 07:04:56.123456, 19800 s earlier. */
    TIME("\"2024-02-29T12:34:56.123456+05:30\"", "1709190296123");
    /* -08:00 across a year end: UTC 2024-01-01T07:59:59.999999 = 1704067200 + 28799 s. */
    TIME("\"2023-12-31T23:59:59.999999-08:00\"", "1704095999999");
    TIME("\"2023-12-31T23:59:59.999-08:00\"", "1704095999999");
    TIME("\"2024-01-01T00:00:00.000-00:00\"", "1704067200000");
    /* 2000 is a leap year (divisible by 400): 946684800 s + 59 days. */
    TIME("\"2000-02-29T00:00:00Z\"", "951782400000");
    /* Before 1970 locally, after it in UTC: 1970-01-01T01:00:00Z. */
    TIME("\"1969-12-31T20:00:00-05:00\"", "3600000");
    /* The far end: 9999-12-31T23:59:59Z is 253402300799 s; -23:59 adds 86340 s. */
    TIME("\"9999-12-31T23:59:59.999999-23:59\"", "253402387139999");
    TIME("\"2024-12-31T23:59:59Z\"", "1735689599000");
    TIME("\"2025-03-01T00:00:00+23:59\"", "1740700860000");
    /* Before 1970 in UTC: Python rejects. */
    BAD_TIME("\"1969-12-31T23:59:59.999Z\"");
    BAD_TIME("\"1970-01-01T00:00:00+00:01\"");
    BAD_TIME("\"0001-01-01T00:00:00Z\"");
    /* Calendar and clock ranges. */
    BAD_TIME("\"2023-02-29T00:00:00Z\"");
    BAD_TIME("\"2100-02-29T00:00:00Z\"");
    BAD_TIME("\"2024-04-31T00:00:00Z\"");
    BAD_TIME("\"2024-13-01T00:00:00Z\"");
    BAD_TIME("\"2024-00-01T00:00:00Z\"");
    BAD_TIME("\"2024-01-00T00:00:00Z\"");
    BAD_TIME("\"2024-01-32T00:00:00Z\"");
    BAD_TIME("\"2024-01-01T24:00:00Z\"");
    BAD_TIME("\"2024-01-01T00:60:00Z\"");
    BAD_TIME("\"2024-01-01T00:00:60Z\"");
    BAD_TIME("\"0000-01-01T00:00:00Z\"");
    BAD_TIME("\"2024-01-01T00:00:00+24:00\"");
    BAD_TIME("\"2024-01-01T00:00:00+05:60\"");
    /* Shapes outside the accepted subset. */
    BAD_TIME("\"2024-01-01T00:00:00\"");
    BAD_TIME("\"2024-01-01T00:00:00.1Z\"");
    BAD_TIME("\"2024-01-01T00:00:00.12Z\"");
    BAD_TIME("\"2024-01-01T00:00:00.1234Z\"");
    BAD_TIME("\"2024-01-01T00:00:00.1234567Z\"");
    BAD_TIME("\"2024-01-01T00:00:00.123456789Z\"");
    BAD_TIME("\"2024-01-01T00:00:00.12345678901234567890123Z\"");
    BAD_TIME("\"2024-01-01T00:00:00.Z\"");
    BAD_TIME("\"2024-01-01T00:00:00+0530\"");
    BAD_TIME("\"2024-01-01T00:00:00+05\"");
    BAD_TIME("\"2024-01-01T00:00:00+05:30:00\"");
    BAD_TIME("\"2024-01-01T00:00:00ZZ\"");
    BAD_TIME("\"2024-01-01T00:00:00Z \"");
    BAD_TIME("\" 2024-01-01T00:00:00Z\"");
    BAD_TIME("\"2024-01-01x00:00:00Z\"");
    BAD_TIME("\"2024-01-01_00:00:00Z\"");
    BAD_TIME("\"2024-1-01T00:00:00Z\"");
    BAD_TIME("\"24-01-01T00:00:00Z\"");
    BAD_TIME("\"20240101T000000Z\"");
    BAD_TIME("\"2024-01-01\"");
    BAD_TIME("\"2024-01-01T00:00Z\"");
    BAD_TIME("\"2024/01/01T00:00:00Z\"");
    BAD_TIME("\"2024-01-01T00:00:00-\"");
    BAD_TIME("\"2024-01-01T0a:00:00Z\"");
    BAD_TIME("\"+2024-01-01T00:00:00Z\"");
}

#define JUDGED(value, j) OK(WITH("\"judgments\":" value), BASE_OUT " t=- j=" j " s=")
#define BAD_JUDGED(value) PUNT(WITH("\"judgments\":" value))

static void test_judgments(void)
{
    JUDGED("null", "0");
    JUDGED("{}", "0"); /* events.py: `value or None` */
    JUDGED("{ }", "0");
    JUDGED("{\"a\":0}", "1");
    JUDGED("{\"a\":1000,\"b\":3,\"\":7}", "1");
    JUDGED("{ \"a\" : 12 , \"zz\" : 999 }", "1");
    JUDGED("{\"not-in-ranking\":2}", "1");
    BAD_JUDGED("{\"a\":1001}");
    BAD_JUDGED("{\"a\":10000}");
    BAD_JUDGED("{\"a\":-1}");
    BAD_JUDGED("{\"a\":-0}");
    BAD_JUDGED("{\"a\":01}");
    BAD_JUDGED("{\"a\":1.0}");
    BAD_JUDGED("{\"a\":1e2}");
    BAD_JUDGED("{\"a\":true}");
    BAD_JUDGED("{\"a\":null}");
    BAD_JUDGED("{\"a\":\"1\"}");
    BAD_JUDGED("{\"a\":[1]}");
    BAD_JUDGED("{\"a\":{}}");
    BAD_JUDGED("{\"a\":1,}");
    BAD_JUDGED("{\"a\"1}");
    BAD_JUDGED("{\"a\":}");
    BAD_JUDGED("{a:1}");
    BAD_JUDGED("[]");
    BAD_JUDGED("[{\"a\":1}]");
    BAD_JUDGED("\"a\"");
    BAD_JUDGED("0");
    BAD_JUDGED("{\"a\\n\":1}");
}

#define SEG(value, s) OK(WITH("\"segment\":" value), BASE_OUT " t=- j=0 s=" s)
#define BAD_SEG(value) PUNT(WITH("\"segment\":" value))

static void test_segment(void)
{
    SEG("null", "");
    SEG("{}", "");
    SEG("{\"model\":\"v42\",\"market\":\"de\"}", "model:v42,market:de");
    SEG("{ \"\" : \"\" , \"k\":\"\" }", ":,k:");
    SEG("{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"e\":\"5\",\"f\":\"6\",\"g\":\"7\","
        "\"h\":\"8\",\"i\":\"9\",\"j\":\"10\",\"k\":\"11\",\"l\":\"12\",\"m\":\"13\",\"n\":\"14\","
        "\"o\":\"15\",\"p\":\"16\"}",
        "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9,j:10,k:11,l:12,m:13,n:14,o:15,p:16");
    BAD_SEG("{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"e\":\"5\",\"f\":\"6\",\"g\":\"7\","
            "\"h\":\"8\",\"i\":\"9\",\"j\":\"10\",\"k\":\"11\",\"l\":\"12\",\"m\":\"13\",\"n\":\"14\","
            "\"o\":\"15\",\"p\":\"16\",\"q\":\"17\"}");
    BAD_SEG("{\"a\":\"1\",\"a\":\"2\"}");
    BAD_SEG("{\"a\":\"1\",\"b\":\"2\",\"a\":\"1\"}");
    BAD_SEG("{\"\":\"1\",\"\":\"2\"}");
    BAD_SEG("{\"a\":1}");
    BAD_SEG("{\"a\":null}");
    BAD_SEG("{\"a\":true}");
    BAD_SEG("{\"a\":[\"x\"]}");
    BAD_SEG("{\"a\":{\"b\":\"c\"}}");
    BAD_SEG("{\"a\":\"x\\\"y\"}");
    BAD_SEG("{\"a\":\"x\",}");
    BAD_SEG("{\"a\":\"x\" \"b\":\"y\"}");
    BAD_SEG("[]");
    BAD_SEG("\"model\"");
    BAD_SEG("1");
}

static void test_unknown_fields(void)
{
    OK(WITH("\"x\":{\"a\":[1,2.5,-0,-0.25,0.0,true,false,null,{\"b\":\"c\"},[],{}],\"d\":{}},"
            "\"y\":[],\"z\":\"\",\"w\":123456789012345,\"v\":-1.2345678901234"),
       BASE_OUT " t=- j=0 s=");
    OK("{\"pre\":[{\"event_id\":\"nested\"}],\"event_id\":\"e1\",\"query_id\":\"q1\","
       "\"ranking\":[\"a\",\"b\"],\"post\":{\"ranking\":[]}}",
       BASE_OUT " t=- j=0 s=");
    OK(WITH("\"x\" : [ 1 , { \"k\" : [ ] } ] "), BASE_OUT " t=- j=0 s=");
    /* Invalid JSON in an unknown field punts. */
    PUNT(WITH("\"x\":"));
    PUNT(WITH("\"x\":tru"));
    PUNT(WITH("\"x\":True"));
    PUNT(WITH("\"x\":nul"));
    PUNT(WITH("\"x\":undefined"));
    PUNT(WITH("\"x\":NaN"));
    PUNT(WITH("\"x\":Infinity"));
    PUNT(WITH("\"x\":[1,]"));
    PUNT(WITH("\"x\":[1 2]"));
    PUNT(WITH("\"x\":{\"a\"}"));
    PUNT(WITH("\"x\":{\"a\":1,}"));
    PUNT(WITH("\"x\":{1:2}"));
    PUNT(WITH("\"x\":[}"));
    PUNT(WITH("\"x\":'a'"));
    /* Numbers: the JSON grammar, narrowed to 15 digits without exponent. */
    PUNT(WITH("\"x\":01"));
    PUNT(WITH("\"x\":+1"));
    PUNT(WITH("\"x\":.5"));
    PUNT(WITH("\"x\":1."));
    PUNT(WITH("\"x\":-"));
    PUNT(WITH("\"x\":--1"));
    PUNT(WITH("\"x\":0x10"));
    PUNT(WITH("\"x\":1e5"));
    PUNT(WITH("\"x\":1E5"));
    PUNT(WITH("\"x\":1.5e-3"));
    PUNT(WITH("\"x\":1234567890123456"));
    PUNT(WITH("\"x\":12345678901234567890"));
    PUNT(WITH("\"x\":1.234567890123456"));
    PUNT(WITH("\"x\":-0.000000000000001"));
    /* Nesting: 32 levels counting the top-level object, then 33. */
    char deep[256];
    char text[256];
    for (int levels = 31; levels <= 32; levels++) {
        size_t n = (size_t)snprintf(deep, sizeof deep, "{" ID ",\"x\":");
        for (int i = 0; i < levels; i++) {
            deep[n++] = i % 2 ? '[' : '{';
            if (i % 2 == 0) {
                memcpy(deep + n, "\"k\":", 4);
                n += 4;
            }
        }
        memcpy(deep + n, "0", 1);
        n += 1;
        for (int i = levels - 1; i >= 0; i--) {
            deep[n++] = i % 2 ? ']' : '}';
        }
        deep[n++] = '}';
        int status = scan_checked(deep, n, 10, text, sizeof text, "nesting");
        int want = levels == 31 ? RM_SCAN_OK : RM_SCAN_PUNT;
        if (status != want) {
            fprintf(stderr, "FAIL nesting %d levels: status %d, want %d\n", levels + 1, status,
                    want);
            failures++;
        }
    }
    /* Too many top-level fields punt (the duplicate check stays bounded). */
    char many[2048];
    size_t n = (size_t)snprintf(many, sizeof many, "{" ID);
    for (int i = 0; i < 33; i++) {
        n += (size_t)snprintf(many + n, sizeof many - n, ",\"f%d\":%d", i, i);
        if (i == 31) {
            many[n] = '}';
            if (scan_checked(many, n + 1, 10, NULL, 0, "32 unknown") != RM_SCAN_OK) {
                fprintf(stderr, "FAIL 32 unknown fields: expected OK\n");
                failures++;
            }
        }
    }
    many[n] = '}';
    if (scan_checked(many, n + 1, 10, NULL, 0, "33 unknown") != RM_SCAN_PUNT) {
        fprintf(stderr, "FAIL 33 unknown fields: expected PUNT\n");
        failures++;
    }
}

static const char *const SEEDS[] = {
    "{\"event_id\":\"e1\",\"query_id\":\"q1\",\"ranking\":[\"a\",\"b\"]}",
    "{\"event_id\":\"4c1f-9a\",\"query_id\":\"shoes\",\"ranking\":[\"d3\",\"d1\",\"d2\"],"
    "\"event_time\":\"2024-02-29T12:34:56.123456+05:30\",\"judgments\":{\"d3\":2,\"d9\":0},"
    "\"segment\":{\"model\":\"v42\",\"market\":\"de\"},\"schema_version\":1}",
    " { \"schema_version\" : 1 , \"event_time\" : 1700000000000 , \"event_id\" : \"e\" , "
    "\"query_id\" : \"q\" , \"ranking\" : [ \"x\" , \"y\" ] , \"extra\" : [ 1 , -2.5 , "
    "{ \"k\" : [ true , false , null ] } ] } ",
    "{\"event_id\":\"e\",\"query_id\":\"q\",\"ranking\":[\"x\"],\"event_time\":null,"
    "\"judgments\":null,\"segment\":null,\"u\":{\"v\":{\"w\":[[[]]]}}}",
};

/* Deterministic PRNG for the random mutations (xorshift64). */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Mutate valid events byte by byte (flip, replace, delete, insert) and at random: the scanner
 * must never crash, read out of bounds (ASan) or report an inconsistent OK. */
static void test_mutations(double budget_s)
{
    static const unsigned char specials[] = {'"', '\\', '{', '}', '[', ']', ',', ':', '0', '1',
                                             '-', '.', 'e', ' ', 'n', 't', 0x00, 0x1f, 0x7f,
                                             0x80, 0xc3, 0xff};
    char scratch[1024];
    int seeds = (int)(sizeof SEEDS / sizeof SEEDS[0]);
    for (int s = 0; s < seeds; s++) {
        const char *seed = SEEDS[s];
        size_t len = strlen(seed);
        if (scan_checked(seed, len, 10, NULL, 0, "seed") != RM_SCAN_OK) {
            fprintf(stderr, "FAIL seed %d does not scan OK\n", s);
            failures++;
        }
        /* Every proper prefix is truncated JSON: always a punt. */
        for (size_t cut = 0; cut < len; cut++) {
            int status = scan_checked(seed, cut, 10, NULL, 0, "prefix");
            if (status == RM_SCAN_OK && strspn(seed + cut, " ") != len - cut) {
                fprintf(stderr, "FAIL seed %d cut at %zu scans OK\n", s, cut);
                failures++;
            }
        }
        for (size_t i = 0; i < len; i++) {
            for (int bit = 0; bit < 8; bit++) {
                memcpy(scratch, seed, len);
                scratch[i] = (char)(scratch[i] ^ (1 << bit));
                scan_checked(scratch, len, 10, NULL, 0, "flip");
            }
            for (size_t k = 0; k < sizeof specials; k++) {
                memcpy(scratch, seed, len);
                scratch[i] = (char)specials[k];
                scan_checked(scratch, len, 10, NULL, 0, "replace");
                memcpy(scratch, seed, i);
                scratch[i] = (char)specials[k];
                memcpy(scratch + i + 1, seed + i, len - i);
                scan_checked(scratch, len + 1, 10, NULL, 0, "insert");
            }
            memcpy(scratch, seed, i);
            memcpy(scratch + i, seed + i + 1, len - i - 1);
            scan_checked(scratch, len - 1, 10, NULL, 0, "delete");
            /* A small max_docs, so the ranking bound is hit under mutation too. */
            scan_checked(scratch, len - 1, 1, NULL, 0, "delete, max 1");
        }
    }
    /* Random multi-byte mutations until the time budget runs out. */
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    double deadline = seconds_now() + budget_s;
    long rounds = 0;
    while (seconds_now() < deadline) {
        for (int batch = 0; batch < 1000; batch++, rounds++) {
            const char *seed = SEEDS[next_random(&state) % (uint64_t)seeds];
            size_t len = strlen(seed);
            memcpy(scratch, seed, len);
            int edits = 1 + (int)(next_random(&state) % 4);
            for (int e = 0; e < edits && len > 1 && len < sizeof scratch - 1; e++) {
                size_t at = (size_t)(next_random(&state) % len);
                unsigned char c = specials[next_random(&state) % sizeof specials];
                switch (next_random(&state) % 3) {
                case 0:
                    scratch[at] = (char)c;
                    break;
                case 1:
                    memmove(scratch + at, scratch + at + 1, len - at - 1);
                    len--;
                    break;
                default:
                    memmove(scratch + at + 1, scratch + at, len - at);
                    scratch[at] = (char)c;
                    len++;
                }
            }
            uint32_t max_docs = (uint32_t)(next_random(&state) % 4);
            scan_checked(scratch, len, max_docs, NULL, 0, "random");
        }
    }
    printf("mutations: %d checks so far, %ld random rounds\n", checks, rounds);
}

static int run_tests(void)
{
    test_structure();
    test_identifiers_and_duplicates();
    test_ranking();
    test_schema_version();
    test_event_time();
    test_judgments();
    test_segment();
    test_unknown_fields();
    int table_failures = failures;
    const char *budget = getenv("EVENT_SCAN_FUZZ_SECONDS");
    test_mutations(budget ? atof(budget) : 2.0);
    printf("%d checks, %d failures (%d in the table)\n", checks, failures, table_failures);
    return failures ? 1 : 0;
}

/* ---- cli: hex records in, one JSON line per record out ---- */

static int hex_value(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static void print_span(rm_span s)
{
    printf("[%u,%u]", s.off, s.len);
}

static int run_cli(uint32_t max_docs)
{
    size_t cap = 1 << 16, used = 0;
    char *text = malloc(cap);
    rm_span *docs = malloc((max_docs + 1) * sizeof(rm_span));
    if (!text || !docs) {
        return 2;
    }
    size_t got;
    while ((got = fread(text + used, 1, cap - used, stdin)) > 0) {
        used += got;
        if (used == cap) {
            cap *= 2;
            text = realloc(text, cap);
            if (!text) {
                return 2;
            }
        }
    }
    size_t start = 0;
    while (start < used) {
        size_t stop = start;
        while (stop < used && text[stop] != '\n') {
            stop++;
        }
        size_t n = (stop - start) / 2;
        char *record = malloc(n ? n : 1); /* exact size: ASan sees over-reads */
        if (!record) {
            return 2;
        }
        for (size_t i = 0; i < n; i++) {
            int hi = hex_value(text[start + 2 * i]), lo = hex_value(text[start + 2 * i + 1]);
            if (hi < 0 || lo < 0) {
                fprintf(stderr, "bad hex\n");
                return 2;
            }
            record[i] = (char)(hi * 16 + lo);
        }
        rm_event ev;
        docs[max_docs].off = CANARY_OFF;
        int status = rm_scan_event(record, n, max_docs, docs, &ev);
        if (docs[max_docs].off != CANARY_OFF) {
            fprintf(stderr, "canary overwritten\n");
            return 3;
        }
        if (status != RM_SCAN_OK) {
            printf("{\"ok\":false}\n");
        } else {
            printf("{\"ok\":true,\"event_id\":");
            print_span(ev.event_id);
            printf(",\"query_id\":");
            print_span(ev.query_id);
            printf(",\"ranking\":[");
            for (uint32_t i = 0; i < ev.n_docs; i++) {
                printf(i ? "," : "");
                print_span(docs[i]);
            }
            printf("],\"has_event_time\":%d,\"event_time_ms\":%lld,\"has_judgments\":%d,"
                   "\"segment\":[",
                   ev.has_event_time, (long long)ev.event_time_ms, ev.has_judgments);
            for (uint32_t i = 0; i < ev.n_segment; i++) {
                printf(i ? ",[" : "[");
                print_span(ev.segment_keys[i]);
                printf(",");
                print_span(ev.segment_values[i]);
                printf("]");
            }
            printf("]}\n");
        }
        free(record);
        start = stop + 1;
    }
    free(docs);
    free(text);
    return 0;
}

/* ---- bench: a typical 100-doc event ---- */

static int run_bench(long iterations)
{
    static char event[4096];
    size_t n = (size_t)snprintf(event, sizeof event,
                                "{\"event_id\":\"7f3c2a90-4b1e-4d8a-9c55-1e2f3a4b5c6d\","
                                "\"query_id\":\"q-00042137\",\"ranking\":[");
    for (int i = 0; i < 100; i++) {
        n += (size_t)snprintf(event + n, sizeof event - n, "%s\"doc-%07d\"", i ? "," : "",
                              1000000 + i * 7919 % 9000000);
    }
    n += (size_t)snprintf(event + n, sizeof event - n,
                          "],\"event_time\":\"2026-11-30T14:22:29.123Z\","
                          "\"judgments\":{\"doc-1000000\":3,\"doc-1007919\":1},"
                          "\"segment\":{\"model\":\"ranker-v42\",\"market\":\"de\","
                          "\"device\":\"mobile\"},\"schema_version\":1}");
    rm_span docs[128];
    rm_event ev;
    if (rm_scan_event(event, n, 128, docs, &ev) != RM_SCAN_OK || ev.n_docs != 100) {
        fprintf(stderr, "bench event does not scan OK\n");
        return 1;
    }
    volatile uint32_t sink = 0;
    double start = seconds_now();
    for (long i = 0; i < iterations; i++) {
        sink += (uint32_t)rm_scan_event(event, n, 128, docs, &ev) + ev.n_docs;
    }
    double elapsed = seconds_now() - start;
    double ns = elapsed * 1e9 / (double)iterations;
    printf("%zu-byte 100-doc event: %.1f ns/event, %.2f GB/s (%ld iterations)\n", n, ns,
           (double)n / ns, iterations);
    (void)sink;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "cli") == 0) {
        return run_cli(argc >= 3 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000);
    }
    if (argc >= 2 && strcmp(argv[1], "bench") == 0) {
        return run_bench(argc >= 3 ? strtol(argv[2], NULL, 10) : 1000000);
    }
    return run_tests();
}
