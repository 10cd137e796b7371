"""The ranking-event schema, defined once: fields, limits, and every outcome and reason.

The Python decoder (`monitor.ingest.events`) validates against these names and limits; the C
scanner (`monitor/ingest/event_scan.c`) accepts a subset of what the decoder accepts and
punts the rest to it, and tests/unit/test_event_schema.py reads its field names and limits
against this module. README.md ("The ranking event") documents the same fields, and
`docs/event.schema.json`, the JSON Schema producers can validate against, is `json_schema()`
as `python -m monitor.ingest.schema` prints it (the test holds the file to it).
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Final

from monitor.scoring.settings import MAX_GRADE

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "DEFAULT_MAX_ID_BYTES",
    "DEFAULT_MAX_VALUE_BYTES",
    "DOCUMENT_FIELDS",
    "EVENT_FIELDS",
    "EVENT_SCHEMA_VERSION",
    "MAX_GRADE",
    "MIN_EPOCH_MS",
    "REQUIRED_FIELDS",
    "RFC3339_PATTERN",
    "Outcome",
    "Reason",
    "json_schema",
]

# field -> what it holds; unknown fields are ignored, so producers can add some early.
EVENT_FIELDS: Final = {
    "event_id": "non-empty string, unique per event (duplicates are counted, not scored)",
    "query_id": "non-empty string, a query of the evaluation set",
    "ranking": "1 to max_depth distinct non-empty document ids, rank 1 first",
    "event_time": "RFC 3339 with an offset, or epoch milliseconds; default: the record time",
    "judgments": "document id -> integer grade 0..MAX_GRADE (inline judgments)",
    "segment": "string -> string (the configured keys become labels)",
    "schema_version": "EVENT_SCHEMA_VERSION; absent means it",
    "documents": "document id -> {title, snippet, url} strings: what a judge reads of a ranked "
    "document (optional; other names and documents not in the ranking are ignored; each "
    "document's kept strings at most events.max_document_bytes)",
    "replay": "object set by rankmon replay: id (the replay_id); a failed query's record has "
    "no ranking and says outcome and reason; the end-of-replay marker says end: true",
}
REQUIRED_FIELDS: Final = ("event_id", "query_id", "ranking")

EVENT_SCHEMA_VERSION: Final = 1
# An integer event_time is epoch milliseconds. One under 10^11 (1973-03-03T09:46:40Z) is
# almost surely epoch seconds, a common producer mistake read as a 1970 time: refused, with
# the reason, rather than counted in a window of 1970. (The C scanner punts such values.)
MIN_EPOCH_MS: Final = 100_000_000_000
# Every string an event carries has a byte limit (UTF-8), so that what rankmon keeps and
# serves of it is bounded: event_id, query_id, each doc id and inline judgment doc id at most
# `events.max_id_bytes` (Elasticsearch's own _id limit), each value of a configured segment key
# at most `segments.max_value_bytes` (a Prometheus label value). Past them: STRING_TOO_LONG.
DEFAULT_MAX_ID_BYTES: Final = 512
DEFAULT_MAX_VALUE_BYTES: Final = 128
# What a judge reads of a ranked document, by these names (`documents`), and how much of it
# one document may carry (UTF-8 bytes, the kept strings together). Past it: STRING_TOO_LONG.
DOCUMENT_FIELDS: Final = ("title", "snippet", "url")
DEFAULT_MAX_DOCUMENT_BYTES: Final = 2048


class Outcome(Enum):
    """What became of a record: the `outcome` label of `rankmon_events_total`."""

    ACCEPTED = "accepted"
    INVALID = "invalid"
    UNKNOWN_QUERY = "unknown_query"
    DUPLICATE = "duplicate"
    LATE = "late"
    # A record of `rankmon replay` that carries no ranking (reason: failed_query or
    # end_of_replay): counted, never dead-lettered, never scored.
    REPLAY_NOTICE = "replay_notice"


class Reason(Enum):
    """Why a record is invalid: the `reason` label (with outcome="invalid")."""

    INVALID_UTF8 = "invalid_utf8"
    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    MISSING_FIELD = "missing_field"
    WRONG_TYPE = "wrong_type"
    EMPTY_RANKING = "empty_ranking"
    DUPLICATE_DOC = "duplicate_doc"
    TOO_DEEP = "too_deep"
    TOO_LARGE = "too_large"
    STRING_TOO_LONG = "string_too_long"
    BAD_GRADE = "bad_grade"
    BAD_EVENT_TIME = "bad_event_time"
    TOO_FAR_IN_FUTURE = "too_far_in_future"
    UNSUPPORTED_SCHEMA_VERSION = "unsupported_schema_version"
    # With outcome="replay_notice": a replayed query the ranker did not answer, the start
    # and the end of a replay.
    FAILED_QUERY = "failed_query"
    START_OF_REPLAY = "start_of_replay"
    END_OF_REPLAY = "end_of_replay"


# The defaults of the limits a deployment may change (`events.max_depth`, `events.max_id_bytes`,
# `segments.max_value_bytes`); the published schema states them.
DEFAULT_MAX_DEPTH: Final = 1000
# An RFC 3339 time with its offset, as `event_time` takes it (the decoder's and the JSON
# Schema's one pattern).
RFC3339_PATTERN: Final = (
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})"
)


def json_schema() -> dict[str, Any]:
    """The event as a JSON Schema (draft 2020-12) with the default limits, for producers.

    What JSON Schema cannot say is in the descriptions: lengths are checked in UTF-8 bytes
    (`maxLength` counts characters, so it is the necessary half), a query must be one of the
    evaluation set's, and an event time too far in the future is refused."""

    def identifier(field: str) -> dict[str, Any]:
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": DEFAULT_MAX_ID_BYTES,
            "description": f"{EVENT_FIELDS[field]}; at most events.max_id_bytes "
            f"({DEFAULT_MAX_ID_BYTES}) bytes of UTF-8",
        }

    document = {"type": "string", "minLength": 1, "maxLength": DEFAULT_MAX_ID_BYTES}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://rankmon.dev/schemas/event.schema.json",
        "title": f"rankmon ranking event, schema version {EVENT_SCHEMA_VERSION}",
        "description": "One ranking a ranker returned for a query, as rankmon reads it from "
        "Kafka (one JSON object per record value). Fields it does not know are ignored.",
        "type": "object",
        "required": list(REQUIRED_FIELDS),
        "properties": {
            "event_id": identifier("event_id"),
            "query_id": identifier("query_id"),
            "ranking": {
                "type": "array",
                "items": document,
                "minItems": 1,
                "maxItems": DEFAULT_MAX_DEPTH,
                "uniqueItems": True,
                "description": f"{EVENT_FIELDS['ranking']}; max_depth is events.max_depth "
                f"({DEFAULT_MAX_DEPTH})",
            },
            "event_time": {
                "oneOf": [
                    {"type": "string", "pattern": f"^{RFC3339_PATTERN}$"},
                    {"type": "integer", "minimum": MIN_EPOCH_MS},
                ],
                "description": f"{EVENT_FIELDS['event_time']}; epoch milliseconds are an "
                f"integer written without a decimal point or exponent, and one under "
                f"{MIN_EPOCH_MS} (1973) is refused as probably epoch seconds",
            },
            "judgments": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 0, "maximum": MAX_GRADE},
                "description": EVENT_FIELDS["judgments"].replace("MAX_GRADE", str(MAX_GRADE)),
            },
            "segment": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": f"{EVENT_FIELDS['segment']}; a configured key's value at most "
                f"segments.max_value_bytes ({DEFAULT_MAX_VALUE_BYTES}) bytes of UTF-8",
            },
            "documents": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {name: {"type": "string"} for name in DOCUMENT_FIELDS},
                },
                "description": f"{EVENT_FIELDS['documents']} "
                f"({DEFAULT_MAX_DOCUMENT_BYTES} by default)",
            },
            "schema_version": {
                "const": EVENT_SCHEMA_VERSION,
                "description": EVENT_FIELDS["schema_version"],
            },
            "replay": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string", "minLength": 1}},
                "description": EVENT_FIELDS["replay"],
            },
        },
    }


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2))
