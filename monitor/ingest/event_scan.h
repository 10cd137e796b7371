/* A strict, punt-on-doubt scanner for rankmon's ranking events (JSON record values).
 *
 * rm_scan_event reads one record value without creating any Python object and reports the
 * fields as byte spans into the buffer. It answers RM_SCAN_OK only when it is sure that
 * monitor/ingest/events.py `decode_event` accepts the record with exactly the fields reported (up to
 * the checks the caller still owes, below); for anything else, including every record Python
 * would reject, it answers RM_SCAN_PUNT and the caller runs the Python reference decoder,
 * which decides the outcome and names the reason. Punting is always safe.
 *
 * Checks left to the caller on RM_SCAN_OK (the scanner does not know the limits):
 *   - len <= max_bytes (events.py `_parse`: TOO_LARGE);
 *   - the ranking's doc ids are distinct (`_ranking`: DUPLICATE_DOC);
 *   - has_event_time == 0: the record timestamp is >= 0 and is the event time;
 *     use_event_time false: the record timestamp is the event time (event_time is ignored);
 *   - the event time is not past now_ms + max_future_ms (TOO_FAR_IN_FUTURE);
 *   - segment key filtering (`segment_keys`);
 *   - what the judgments mean (has_judgments, n_judgments: doc ids may repeat).
 *
 * All strings reported are ASCII without escapes, so their bytes are the Python str exactly.
 */
#ifndef RANKMON_EVENT_SCAN_H
#define RANKMON_EVENT_SCAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t off;
    uint32_t len;
} rm_span; /* byte offset/length into buf */

#define RM_SCAN_OK 0
#define RM_SCAN_PUNT 1
#define RM_MAX_SEGMENT 16
#define RM_MAX_JUDGMENTS 128

typedef struct {
    rm_span event_id; /* string contents without quotes */
    rm_span query_id;
    int has_event_time;    /* 0: absent or null; 1: present, parsed into event_time_ms */
    int64_t event_time_ms; /* >= 0 */
    /* 1: "judgments" present, not null and not empty, validated as an object of integer
     * grades 0..1000. 0: absent, null or the empty object `{}`, all of which events.py
     * `_judgments` turns into None (`return value or None`). */
    int has_judgments;
    /* The judgments in order, when has_judgments: doc id spans and grades, the first
     * RM_MAX_JUDGMENTS of n_judgments (more than that: the caller punts if it needs them). A
     * doc id may be listed twice (Python keeps the last grade); the caller checks. */
    uint32_t n_judgments;
    rm_span judgment_docs[RM_MAX_JUDGMENTS];
    uint16_t judgment_grades[RM_MAX_JUDGMENTS];
    uint32_t n_docs;    /* ranking length, 1..max_docs */
    uint32_t n_segment; /* segment pairs (0 if absent or null) */
    rm_span segment_keys[RM_MAX_SEGMENT];
    rm_span segment_values[RM_MAX_SEGMENT];
} rm_event;

/* Scan one record value. `docs` has room for `max_docs` spans; on OK, docs[0..n_docs) are the
   ranking's doc ids in order. Returns RM_SCAN_OK or RM_SCAN_PUNT. Never reads past buf+len,
   never writes past docs[max_docs-1], no allocation, thread-safe (no globals). On PUNT the
   contents of `out` and `docs` are unspecified. */
int rm_scan_event(const char *buf, size_t len, uint32_t max_docs, rm_span *docs, rm_event *out);

#endif /* RANKMON_EVENT_SCAN_H */
