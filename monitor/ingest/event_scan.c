/* A strict, punt-on-doubt scanner for rankmon's ranking events: see event_scan.h.
 *
 * One forward pass over the bytes, no backtracking, no allocation, no globals. Every helper
 * returns the position just past what it read, or NULL for "punt": the caller then runs
 * monitor/ingest/events.py `decode_event`, the reference, which decides the outcome. So each rule
 * below either mirrors what events.py accepts (and then must agree with it exactly) or is a
 * narrowing of it (a punt where Python might accept, which only costs speed).
 */
#include "event_scan.h"

#include <string.h>

typedef unsigned char u8;

/* Containers nested deeper than this punt; the top-level object is depth 1. orjson allows
 * far more, so this only narrows. */
#define RM_MAX_NESTING 32
/* Numbers with more digits than this punt (orjson's big-int / float-rounding edges). */
#define RM_MAX_NUMBER_DIGITS 15
/* The schema's limits, as monitor/ingest/schema.py defines them (tests/unit/test_event_schema.py
 * reads these lines against it). */
#define RM_MIN_EPOCH_MS 100000000000LL /* schema.py MIN_EPOCH_MS */
#define RM_MAX_GRADE 1000              /* schema.py MAX_GRADE */
#define RM_SCHEMA_VERSION 1            /* schema.py EVENT_SCHEMA_VERSION, one digit */
/* Top-level keys besides the known ones; more punt (duplicate checks stay small). */
#define RM_MAX_UNKNOWN_KEYS 32

#define IS_DIGIT(c) ((u8)((c) - '0') <= 9)

static inline const u8 *skip_ws(const u8 *p, const u8 *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
        p++;
    }
    return p;
}

/* `p` is just past an opening quote. Returns the position of the closing quote, or NULL on
 * an unterminated string, a backslash (any escape: punt, so a span's bytes are the Python
 * str), a control character (invalid JSON) or a byte >= 0x80 (non-ASCII: punt, so UTF-8
 * validity, events.py INVALID_UTF8, never needs checking here). */
static inline const u8 *scan_string(const u8 *p, const u8 *end)
{
    /* Eight bytes at a time: a word without any special byte is skipped whole. The tests are
     * the classic "has a byte less than n" / "has a zero byte" tricks; they can report false
     * positives above a true one, so a flagged word is re-read byte by byte below. */
    const uint64_t ones = 0x0101010101010101ULL;
    const uint64_t high = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t q = w ^ (ones * '"');
        uint64_t b = w ^ (ones * '\\');
        uint64_t flags = (w | ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b));
        if (flags & high) {
            break;
        }
        p += 8;
    }
    for (; p < end; p++) {
        u8 c = *p;
        if (c == '"') {
            return p;
        }
        if (c == '\\' || c < 0x20 || c >= 0x80) {
            return NULL;
        }
    }
    return NULL;
}

/* A JSON number (RFC 8259 grammar) at `p`, for skipped fields. Narrowed: more than 15 digits
 * or an exponent punt. What follows the number is checked by the caller (",", "}" or "]"
 * after whitespace), which also rejects "01" and the like. */
static const u8 *skip_number(const u8 *p, const u8 *end)
{
    int digits = 0;
    if (p < end && *p == '-') {
        p++;
    }
    if (p >= end) {
        return NULL;
    }
    if (*p == '0') {
        p++;
        digits = 1;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && IS_DIGIT(*p)) {
            p++;
            digits++;
        }
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        const u8 *frac = ++p;
        while (p < end && IS_DIGIT(*p)) {
            p++;
        }
        if (p == frac) {
            return NULL;
        }
        digits += (int)(p - frac);
    }
    if (digits > RM_MAX_NUMBER_DIGITS) {
        return NULL;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        return NULL;
    }
    return p;
}

static inline const u8 *skip_literal(const u8 *p, const u8 *end, const char *word, size_t n)
{
    if ((size_t)(end - p) < n || memcmp(p, word, n) != 0) {
        return NULL;
    }
    return p + n;
}

/* Any JSON value at `p` (unknown fields: events.py ignores them, but orjson must still parse
 * the whole record, so they must be valid JSON). `depth` is the depth a container here has. */
/* After a member or an element: whitespace, then `close` (*closed = 1; returns the byte after
   it) or a comma (*closed = 0; returns the next one's first byte, whitespace skipped). */
static inline const u8 *after_item(const u8 *p, const u8 *end, u8 close, int *closed)
{
    p = skip_ws(p, end);
    if (p >= end) {
        return NULL;
    }
    if (*p == close) {
        *closed = 1;
        return p + 1;
    }
    if (*p != ',') {
        return NULL;
    }
    *closed = 0;
    return skip_ws(p + 1, end);
}

/* An object member's key and the colon after it: p at the opening quote. Returns the first
   byte of the value (whitespace skipped) and the key's bytes, or NULL. */
static inline const u8 *scan_member_key(const u8 *p, const u8 *end, const u8 **key,
                                        size_t *key_len)
{
    if (p >= end || *p != '"') {
        return NULL;
    }
    const u8 *close = scan_string(p + 1, end);
    if (!close) {
        return NULL;
    }
    *key = p + 1;
    *key_len = (size_t)(close - p - 1);
    p = skip_ws(close + 1, end);
    if (p >= end || *p != ':') {
        return NULL;
    }
    return skip_ws(p + 1, end);
}

static const u8 *skip_value(const u8 *p, const u8 *end, int depth)
{
    if (p >= end) {
        return NULL;
    }
    switch (*p) {
    case '"':
        p = scan_string(p + 1, end);
        return p ? p + 1 : NULL;
    case '{':
        if (depth > RM_MAX_NESTING) {
            return NULL;
        }
        p = skip_ws(p + 1, end);
        if (p < end && *p == '}') {
            return p + 1;
        }
        for (;;) {
            const u8 *key;
            size_t key_len;
            p = scan_member_key(p, end, &key, &key_len);
            if (!p) {
                return NULL;
            }
            p = skip_value(p, end, depth + 1);
            if (!p) {
                return NULL;
            }
            int closed;
            p = after_item(p, end, '}', &closed);
            if (!p || closed) {
                return p;
            }
        }
    case '[':
        if (depth > RM_MAX_NESTING) {
            return NULL;
        }
        p = skip_ws(p + 1, end);
        if (p < end && *p == ']') {
            return p + 1;
        }
        for (;;) {
            p = skip_value(p, end, depth + 1);
            if (!p) {
                return NULL;
            }
            int closed;
            p = after_item(p, end, ']', &closed);
            if (!p || closed) {
                return p;
            }
        }
    case 't':
        return skip_literal(p, end, "true", 4);
    case 'f':
        return skip_literal(p, end, "false", 5);
    case 'n':
        return skip_literal(p, end, "null", 4);
    default:
        return skip_number(p, end);
    }
}

/* A non-empty string value: events.py `_identifier` (None -> missing, non-str -> wrong type,
 * "" -> missing; all punt here). */
static inline const u8 *scan_identifier(const u8 *p, const u8 *end, const u8 *base, rm_span *out)
{
    if (p >= end || *p != '"') {
        return NULL;
    }
    const u8 *close = scan_string(p + 1, end);
    if (!close || close == p + 1) {
        return NULL;
    }
    out->off = (uint32_t)(p + 1 - base);
    out->len = (uint32_t)(close - p - 1);
    return close + 1;
}

/* events.py `_ranking`: a list (None -> missing, non-list -> wrong type), non-empty, at most
 * max_depth (= max_docs) long, of non-empty strings. Distinctness is the caller's check. */
static const u8 *scan_ranking(const u8 *p, const u8 *end, const u8 *base, uint32_t max_docs,
                              rm_span *docs, uint32_t *n_docs)
{
    if (p >= end || *p != '[') {
        return NULL;
    }
    uint32_t n = 0;
    p = skip_ws(p + 1, end);
    for (;;) {
        /* An empty ranking lands here too: "]" is not a string. */
        if (p >= end || *p != '"' || n == max_docs) {
            return NULL;
        }
        const u8 *close = scan_string(p + 1, end);
        if (!close || close == p + 1) {
            return NULL;
        }
        docs[n].off = (uint32_t)(p + 1 - base);
        docs[n].len = (uint32_t)(close - p - 1);
        n++;
        p = close + 1;
        /* The common layout has no whitespace: test for the separator first. */
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        int closed;
        p = after_item(p, end, ']', &closed);
        if (!p || closed) {
            *n_docs = n;
            return p;
        }
    }
}

/* events.py `_judgments`: None -> None; else a dict (non-dict -> wrong type) whose values are
 * all ints 0..MAX_GRADE (type() is int, so true/false and floats are bad grades). Narrowed:
 * a grade must be the plain token 0..1000 ("-0" punts). `{}` -> None via `value or None`. */
static const u8 *scan_judgments(const u8 *p, const u8 *end, const u8 *base, rm_event *out)
{
    out->has_judgments = 0;
    out->n_judgments = 0;
    if (p >= end) {
        return NULL;
    }
    if (*p == 'n') {
        return skip_literal(p, end, "null", 4);
    }
    if (*p != '{') {
        return NULL;
    }
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        return p + 1;
    }
    for (;;) {
        const u8 *key;
        size_t key_len;
        p = scan_member_key(p, end, &key, &key_len);
        if (!p) {
            return NULL;
        }
        const u8 *start = p;
        uint32_t grade = 0;
        while (p < end && IS_DIGIT(*p) && p - start < 5) {
            grade = grade * 10 + (uint32_t)(*p - '0');
            p++;
        }
        size_t n = (size_t)(p - start);
        if (n == 0 || n > 4 || grade > RM_MAX_GRADE || (*start == '0' && n > 1)) {
            return NULL;
        }
        if (out->n_judgments < RM_MAX_JUDGMENTS) {
            out->judgment_docs[out->n_judgments].off = (uint32_t)(key - base);
            out->judgment_docs[out->n_judgments].len = (uint32_t)key_len;
            out->judgment_grades[out->n_judgments] = (uint16_t)grade;
        }
        out->n_judgments++;
        int closed;
        p = after_item(p, end, '}', &closed);
        if (!p || closed) {
            out->has_judgments = 1;
            return p;
        }
    }
}

static inline int same_bytes(const u8 *base, rm_span a, rm_span b)
{
    return a.len == b.len && memcmp(base + a.off, base + b.off, a.len) == 0;
}

/* events.py `_segment`: None -> empty; else a dict (non-dict -> wrong type) whose values are
 * all str (keys and values may be empty). Narrowed: at most RM_MAX_SEGMENT pairs, and a
 * duplicate key punts (Python would keep the last value). */
static const u8 *scan_segment(const u8 *p, const u8 *end, const u8 *base, rm_event *out)
{
    if (p >= end) {
        return NULL;
    }
    if (*p == 'n') {
        out->n_segment = 0;
        return skip_literal(p, end, "null", 4);
    }
    if (*p != '{') {
        return NULL;
    }
    uint32_t n = 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        out->n_segment = 0;
        return p + 1;
    }
    for (;;) {
        const u8 *key_start;
        size_t key_len;
        if (n == RM_MAX_SEGMENT) {
            return NULL;
        }
        p = scan_member_key(p, end, &key_start, &key_len);
        if (!p) {
            return NULL;
        }
        rm_span key = {(uint32_t)(key_start - base), (uint32_t)key_len};
        for (uint32_t i = 0; i < n; i++) {
            if (same_bytes(base, out->segment_keys[i], key)) {
                return NULL;
            }
        }
        if (p >= end || *p != '"') {
            return NULL;
        }
        const u8 *close = scan_string(p + 1, end);
        if (!close) {
            return NULL;
        }
        out->segment_keys[n] = key;
        out->segment_values[n].off = (uint32_t)(p + 1 - base);
        out->segment_values[n].len = (uint32_t)(close - p - 1);
        n++;
        int closed;
        p = after_item(close + 1, end, '}', &closed);
        if (!p || closed) {
            out->n_segment = n;
            return p;
        }
    }
}

/* Two ASCII digits as a number, or -1. */
static inline int two_digits(const u8 *s)
{
    if (!IS_DIGIT(s[0]) || !IS_DIGIT(s[1])) {
        return -1;
    }
    return (s[0] - '0') * 10 + (s[1] - '0');
}

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (H. Hinnant's days_from_civil),
 * for y >= 1. */
static inline int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = y / 400; /* y >= 0 here */
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static inline int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* An RFC 3339 event_time string (the bytes between the quotes), events.py `_event_time`:
 * `_RFC3339.fullmatch` then `datetime.fromisoformat(value.upper())`, epoch ms by integer
 * arithmetic, floor of the microseconds. Narrowed to YYYY-MM-DD(T|t| )HH:MM:SS, then no
 * fraction or exactly 3 or 6 digits, then Z, z or +HH:MM/-HH:MM with hours 0..23; fields in
 * range (what fromisoformat checks); a result before 1970 punts (Python rejects it). */
static int parse_event_time(const u8 *s, size_t n, int64_t *ms)
{
    if (n < 20) {
        return 0;
    }
    int y_hi = two_digits(s), y_lo = two_digits(s + 2);
    int mon = two_digits(s + 5), day = two_digits(s + 8);
    int hour = two_digits(s + 11), min = two_digits(s + 14), sec = two_digits(s + 17);
    if (y_hi < 0 || y_lo < 0 || mon < 0 || day < 0 || hour < 0 || min < 0 || sec < 0) {
        return 0;
    }
    if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        s[13] != ':' || s[16] != ':') {
        return 0;
    }
    int year = y_hi * 100 + y_lo;
    static const u8 month_days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (year < 1 || mon < 1 || mon > 12 || day < 1 || hour > 23 || min > 59 || sec > 59) {
        return 0;
    }
    if (day > month_days[mon - 1] + (mon == 2 && is_leap(year))) {
        return 0;
    }
    size_t i = 19;
    int64_t micros = 0;
    if (s[i] == '.') {
        size_t start = ++i;
        /* At most 7 digits are read: 7 is already a punt, and micros cannot overflow. */
        while (i < n && IS_DIGIT(s[i]) && i - start < 7) {
            micros = micros * 10 + (s[i] - '0');
            i++;
        }
        if (i - start == 3) {
            micros *= 1000;
        } else if (i - start != 6) {
            return 0;
        }
    }
    int64_t offset_s = 0;
    if (i + 1 == n && (s[i] == 'Z' || s[i] == 'z')) {
        offset_s = 0;
    } else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh = two_digits(s + i + 1), om = two_digits(s + i + 4);
        if (oh < 0 || om < 0 || oh > 23 || om > 59) {
            return 0;
        }
        offset_s = (int64_t)oh * 3600 + om * 60;
        if (s[i] == '-') {
            offset_s = -offset_s;
        }
    } else {
        return 0;
    }
    /* UTC = local time minus the offset. */
    int64_t secs = days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec -
                   offset_s;
    int64_t total_us = secs * 1000000 + micros;
    if (total_us < 0) {
        return 0;
    }
    *ms = total_us / 1000;
    return 1;
}

/* events.py `_event_time`: None -> the record timestamp (has_event_time = 0); an int from
 * MIN_EPOCH_MS on as is; an RFC 3339 string. Narrowed: the int is a plain token of 1..15
 * digits ("-0" punts); a smaller int (epoch seconds, refused with a reason), bool, float,
 * and other types punt (Python rejects them). */
static const u8 *scan_event_time(const u8 *p, const u8 *end, rm_event *out)
{
    if (p >= end) {
        return NULL;
    }
    if (*p == 'n') {
        out->has_event_time = 0;
        return skip_literal(p, end, "null", 4);
    }
    if (*p == '"') {
        const u8 *close = scan_string(p + 1, end);
        if (!close || !parse_event_time(p + 1, (size_t)(close - p - 1), &out->event_time_ms)) {
            return NULL;
        }
        out->has_event_time = 1;
        return close + 1;
    }
    const u8 *start = p;
    int64_t value = 0;
    while (p < end && IS_DIGIT(*p) && p - start <= RM_MAX_NUMBER_DIGITS) {
        value = value * 10 + (*p - '0');
        p++;
    }
    size_t n = (size_t)(p - start);
    if (n == 0 || n > RM_MAX_NUMBER_DIGITS || (*start == '0' && n > 1)) {
        return NULL;
    }
    if (value < RM_MIN_EPOCH_MS) {
        return NULL;
    }
    /* A "." or "e" next (a float) fails the caller's separator check. */
    out->has_event_time = 1;
    out->event_time_ms = value;
    return p;
}

enum {
    K_EVENT_ID = 1 << 0,
    K_QUERY_ID = 1 << 1,
    K_RANKING = 1 << 2,
    K_SCHEMA_VERSION = 1 << 3,
    K_EVENT_TIME = 1 << 4,
    K_JUDGMENTS = 1 << 5,
    K_SEGMENT = 1 << 6,
    K_REPLAY = 1 << 7,
    K_DOCUMENTS = 1 << 8,
};

static inline int known_key(const u8 *k, size_t n)
{
#define KEY_IS(lit) (n == sizeof(lit) - 1 && memcmp(k, lit, sizeof(lit) - 1) == 0)
    switch (n) {
    case 6:
        return KEY_IS("replay") ? K_REPLAY : 0;
    case 7:
        return KEY_IS("ranking") ? K_RANKING : KEY_IS("segment") ? K_SEGMENT : 0;
    case 8:
        return KEY_IS("event_id") ? K_EVENT_ID : KEY_IS("query_id") ? K_QUERY_ID : 0;
    case 9:
        return KEY_IS("judgments") ? K_JUDGMENTS : KEY_IS("documents") ? K_DOCUMENTS : 0;
    case 10:
        return KEY_IS("event_time") ? K_EVENT_TIME : 0;
    case 14:
        return KEY_IS("schema_version") ? K_SCHEMA_VERSION : 0;
    default:
        return 0;
    }
#undef KEY_IS
}

int rm_scan_event(const char *buf, size_t len, uint32_t max_docs, rm_span *docs, rm_event *out)
{
    /* events.py `_parse`: an empty value is invalid JSON. Spans are 32-bit. */
    if (len == 0) {
        return RM_SCAN_PUNT;
    }
#if SIZE_MAX > UINT32_MAX
    if (len > UINT32_MAX) {
        return RM_SCAN_PUNT;
    }
#endif
    const u8 *base = (const u8 *)buf;
    const u8 *end = base + len;
    rm_span unknown[RM_MAX_UNKNOWN_KEYS];
    uint32_t n_unknown = 0;
    unsigned seen = 0;

    out->has_event_time = 0;
    out->event_time_ms = 0;
    out->has_judgments = 0;
    out->n_judgments = 0;
    out->n_docs = 0;
    out->n_segment = 0;

    /* `_parse`: the value must be a JSON object (else NOT_AN_OBJECT / INVALID_JSON). */
    const u8 *p = skip_ws(base, end);
    if (p >= end || *p != '{') {
        return RM_SCAN_PUNT;
    }
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        return RM_SCAN_PUNT; /* no fields: event_id is missing */
    }
    for (;;) {
        const u8 *key;
        size_t key_len;
        p = scan_member_key(p, end, &key, &key_len);
        if (!p) {
            return RM_SCAN_PUNT;
        }

        /* A duplicate key punts: Python's dict would keep the last value. */
        int k = known_key(key, key_len);
        if (k & (int)seen) {
            return RM_SCAN_PUNT;
        }
        seen |= (unsigned)k;
        switch (k) {
        case K_EVENT_ID:
            p = scan_identifier(p, end, base, &out->event_id);
            break;
        case K_QUERY_ID:
            p = scan_identifier(p, end, base, &out->query_id);
            break;
        case K_RANKING:
            p = scan_ranking(p, end, base, max_docs, docs, &out->n_docs);
            break;
        case K_SCHEMA_VERSION:
            /* `_parse`: `type(version) is int and version == 1`; only the token "1" here
             * (null, true, 1.0, "1" are rejected by Python; -0/-1 etc. punt as well). The
             * separator check below rejects "10", "1.0", "1e0". */
            p = (p < end && *p == '0' + RM_SCHEMA_VERSION) ? p + 1 : NULL;
            break;
        case K_EVENT_TIME:
            p = scan_event_time(p, end, out);
            break;
        case K_JUDGMENTS:
            p = scan_judgments(p, end, base, out);
            break;
        case K_SEGMENT:
            p = scan_segment(p, end, base, out);
            break;
        case K_DOCUMENTS:
            /* What a judge reads of the ranked documents (events.py `_documents`): checked
             * and kept by the Python decoder alone. */
            return RM_SCAN_PUNT;
        case K_REPLAY:
            /* `rankmon replay`'s object: not scored (events.py reads it only on a record
             * without a ranking, which punts); anything but an object punts. */
            p = (p < end && *p == '{') ? skip_value(p, end, 2) : NULL;
            break;
        default: {
            /* An unknown field: ignored by events.py, but it must still be valid JSON. */
            rm_span this_key = {(uint32_t)(key - base), (uint32_t)key_len};
            if (n_unknown == RM_MAX_UNKNOWN_KEYS) {
                return RM_SCAN_PUNT;
            }
            for (uint32_t i = 0; i < n_unknown; i++) {
                if (same_bytes(base, unknown[i], this_key)) {
                    return RM_SCAN_PUNT;
                }
            }
            unknown[n_unknown++] = this_key;
            p = skip_value(p, end, 2);
            break;
        }
        }
        if (!p) {
            return RM_SCAN_PUNT;
        }
        int closed;
        p = after_item(p, end, '}', &closed);
        if (!p) {
            return RM_SCAN_PUNT;
        }
        if (closed) {
            break; /* p is past the closing brace */
        }
    }
    /* Nothing but whitespace after the object (orjson: trailing data is invalid JSON). */
    if (skip_ws(p, end) != end) {
        return RM_SCAN_PUNT;
    }
    /* The required fields (`_identifier`, `_ranking`: missing). */
    const unsigned required = K_EVENT_ID | K_QUERY_ID | K_RANKING;
    if ((seen & required) != required) {
        return RM_SCAN_PUNT;
    }
    return RM_SCAN_OK;
}
