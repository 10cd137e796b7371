"""Ranking events: Kafka record bytes -> a validated `RankingEvent`, or a `Rejection` saying why.

`decode_event` never raises on any input: every record ends as exactly one of the two, and
a rejection carries a `Reason` from a fixed set, the `reason` label of
`rankmon_events_total{outcome="invalid"}` and the reason header of its dead letter. The later
stages decide the other outcomes (`Outcome`): unknown_query, duplicate, late.

Schema version 1 (its one definition is `monitor.ingest.schema`; README.md documents it):
`event_id`, `query_id` (non-empty strings),
`ranking` (1 to max_depth distinct non-empty document ids, rank 1 first), `event_time` (RFC 3339
with an offset, or epoch milliseconds from `MIN_EPOCH_MS` on; default: the record timestamp),
`judgments` (doc id -> integer grade 0..1000), `segment` (string -> string),
`documents` (doc id -> {title, snippet, url}: what a judge reads), `schema_version` (1).
Unknown fields are ignored, so producers can add some before rankmon reads them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from monitor.ingest.schema import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_ID_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    DOCUMENT_FIELDS,
    EVENT_SCHEMA_VERSION,
    MAX_GRADE,
    MIN_EPOCH_MS,
    RFC3339_PATTERN,
    Outcome,
    Reason,
)
from monitor.limits import RecordLimits, longer_than

__all__ = [
    "DocumentFields",
    "EventDecoder",
    "RankingEvent",
    "Rejection",
    "ReplayEnd",
    "decode_event",
    "outcome_of",
]

_RFC3339: Final = re.compile(RFC3339_PATTERN)
_EMPTY: Final[Mapping[str, str]] = {}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
NO_SKEW_BOUND: Final = 1 << 62  # a decoder given no clock skew bounds a notice by the future only
# What a judge reads of one document: (name, text) pairs of `DOCUMENT_FIELDS`, in that order.
DocumentFields = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class RankingEvent:
    """One valid ranking as served: `ranking[0]` is rank 1.

    `judgments` is None when the event carries none; `segment` holds every string pair the
    event carried, or only the allowed keys when `decode_event` was given them; `documents`
    what the event says a judge reads of its ranked documents (None: nothing).
    """

    event_id: str
    query_id: str
    ranking: tuple[str, ...]
    event_time_ms: int
    judgments: Mapping[str, int] | None
    segment: Mapping[str, str]
    documents: Mapping[str, DocumentFields] | None = None


@dataclass(frozen=True, slots=True)
class Rejection:
    """An invalid record: the reason, and a short detail for logs and the dead-letter header.

    The detail names the field at fault, never echoes the record's content.
    """

    reason: Reason
    detail: str
    # INVALID, or REPLAY_NOTICE for a replay's record without a ranking (counted, not
    # dead-lettered).
    outcome: Outcome = Outcome.INVALID


@dataclass(frozen=True, slots=True)
class ReplayEnd:
    """An end-of-replay marker as checked: the replay, its start and its static labels (only
    the configured segment keys)."""

    replay_id: str
    started_ms: int
    segment: Mapping[str, str]
    stopped: bool = False  # a stop ended the replay before every query was asked


class _RejectedError(Exception):
    # Internal only: turned into a Rejection before decode_event returns.
    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.rejection = Rejection(reason, detail)


def outcome_of(result: RankingEvent | Rejection) -> Outcome:
    """The outcome decoding alone decides: accepted, invalid or a replay's notice."""
    return Outcome.ACCEPTED if isinstance(result, RankingEvent) else result.outcome


def decode_event(
    value: bytes | None,
    record_timestamp_ms: int,
    *,
    now_ms: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int = 1_048_576,
    max_future_ms: int = 300_000,
    segment_keys: frozenset[str] | None = None,
    use_event_time: bool = True,
    max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    max_clock_skew_ms: int | None = None,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
) -> RankingEvent | Rejection:
    """Decode and validate one record value; never raises.

    `record_timestamp_ms` is the Kafka record timestamp (the event time when the event has
    none, or when `use_event_time` is false); an event time more than `max_future_ms` past
    `now_ms` is rejected. `segment_keys`, if given, keeps only those segment keys.
    An id, doc id or inline judgment's doc id longer than `max_id_bytes`, or a kept segment
    value longer than `max_value_bytes` (UTF-8), is rejected (STRING_TOO_LONG), as is a ranked
    document whose `documents` strings (those kept: `DOCUMENT_FIELDS`) pass
    `max_document_bytes` together.
    A replay's notice (a failed query, an end marker) is held to the same limits, and its
    time (a failed query's event time, a marker's `replay.started`) also to the record
    timestamp plus `max_clock_skew_ms`: a replay sends both after the time they name.
    Config: max_depth = events.max_depth, max_bytes = kafka.max_record_bytes,
    max_future_ms = events.max_future.ms, segment_keys = segments.keys,
    use_event_time = events.time_source == "event", max_id_bytes = events.max_id_bytes,
    max_value_bytes = segments.max_value_bytes, max_clock_skew_ms = windows.max_clock_skew,
    max_document_bytes = events.max_document_bytes.
    """
    try:
        raw = _parse(value, max_bytes)
        notice = _replay_notice(raw, max_id_bytes)
        if notice is not None:
            time_ms, _ = _notice_placed(
                raw,
                notice,
                record_timestamp_ms,
                segment_keys=segment_keys,
                max_value_bytes=max_value_bytes,
                use_event_time=use_event_time,
            )
            _not_ahead(time_ms, record_timestamp_ms, now_ms, max_future_ms, max_clock_skew_ms)
            return notice
        event_id = _identifier(raw, "event_id", max_id_bytes)
        query_id = _identifier(raw, "query_id", max_id_bytes)
        ranking = _ranking(raw.get("ranking"), max_depth)
        _within(ranking, max_id_bytes, "a document id")
        judgments = _judgments(raw.get("judgments"))
        if judgments is not None:
            _within(judgments, max_id_bytes, "a judgment's document id")
        documents = _documents(raw.get("documents"), ranking, max_document_bytes)
        segment, event_time_ms = _placed(
            raw, record_timestamp_ms, segment_keys, max_value_bytes, use_event_time
        )
    except _RejectedError as invalid:
        return invalid.rejection
    if event_time_ms > now_ms + max_future_ms:
        return Rejection(Reason.TOO_FAR_IN_FUTURE, "event_time is past the allowed future")
    return RankingEvent(event_id, query_id, ranking, event_time_ms, judgments, segment, documents)


@dataclass(frozen=True, slots=True)
class EventDecoder:
    """`decode_event` with the limits of a config bound: `decoder(value, timestamp, now_ms)`."""

    max_depth: int = DEFAULT_MAX_DEPTH
    max_bytes: int = 1_048_576
    max_future_ms: int = 300_000
    segment_keys: frozenset[str] | None = None
    use_event_time: bool = True
    max_id_bytes: int = DEFAULT_MAX_ID_BYTES
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES
    max_clock_skew_ms: int | None = None
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES

    def __call__(
        self, value: bytes | None, record_timestamp_ms: int, now_ms: int
    ) -> RankingEvent | Rejection:
        """Decode one record value; never raises (see `decode_event`)."""
        return decode_event(
            value,
            record_timestamp_ms,
            now_ms=now_ms,
            max_depth=self.max_depth,
            max_bytes=self.max_bytes,
            max_future_ms=self.max_future_ms,
            segment_keys=self.segment_keys,
            use_event_time=self.use_event_time,
            max_id_bytes=self.max_id_bytes,
            max_value_bytes=self.max_value_bytes,
            max_clock_skew_ms=self.max_clock_skew_ms,
            max_document_bytes=self.max_document_bytes,
        )

    def replay_end(
        self, value: bytes | None, record_timestamp_ms: int, *, start: bool = False
    ) -> ReplayEnd | None:
        """An end-of-replay marker (one `decode_event` counted as an `end_of_replay` notice,
        so within its limits) as its replay, start and kept labels; with `start`, a
        start-of-replay marker (`start_of_replay`); None if it is not one. Never raises."""
        wanted = Reason.START_OF_REPLAY if start else Reason.END_OF_REPLAY
        try:
            raw = _parse(value, self.max_bytes)
            notice = _replay_notice(raw, self.max_id_bytes)
            if notice is None or notice.reason is not wanted:
                return None
            started, segment = _notice_placed(
                raw,
                notice,
                record_timestamp_ms,
                segment_keys=self.segment_keys,
                max_value_bytes=self.max_value_bytes,
                use_event_time=self.use_event_time,
            )
        except _RejectedError:
            return None
        replay = raw["replay"]
        return ReplayEnd(replay["id"], started, segment, replay.get("stopped") is True)

    def failed_query(self, value: bytes | None, record_timestamp_ms: int) -> RankingEvent | None:
        """A replay's failed-query record (one `decode_event` counted as a `failed_query`
        notice) as an event with no ranking, for the windows to count as the replay's
        failure; None when its ids, segment or time would not make a valid event, or when a
        stop cancelled the query (reason `cancelled`: no failure of the ranker, sent by
        replayers before 0.9); it is then only counted as a notice. Never raises."""
        try:
            raw = _parse(value, self.max_bytes)
            replay = raw.get("replay")
            if type(replay) is dict and replay.get("reason") == "cancelled":
                return None
            event_id = _identifier(raw, "event_id", self.max_id_bytes)
            query_id = _identifier(raw, "query_id", self.max_id_bytes)
            segment, event_time_ms = _placed(
                raw,
                record_timestamp_ms,
                self.segment_keys,
                self.max_value_bytes,
                self.use_event_time,
            )
        except _RejectedError:
            return None
        return RankingEvent(event_id, query_id, (), event_time_ms, None, segment)


def _placed(
    raw: dict[str, Any],
    record_timestamp_ms: int,
    segment_keys: frozenset[str] | None,
    max_value_bytes: int,
    use_event_time: bool,
) -> tuple[Mapping[str, str], int]:
    """Where an event goes: its kept segment labels, each value checked, and its time."""
    segment = _segment(raw.get("segment"), segment_keys)
    _within(segment.values(), max_value_bytes, "a segment value")
    return segment, _event_time(raw, record_timestamp_ms, use_event_time)


_MARKERS: Final = (Reason.START_OF_REPLAY, Reason.END_OF_REPLAY)


def _replay_notice(raw: dict[str, Any], max_id_bytes: int) -> Rejection | None:
    """A `rankmon replay` record that carries no ranking: a failed query, the start or the
    end of a replay (monitor/replay/events.py); None for anything else. A replay id past
    `max_id_bytes` is STRING_TOO_LONG: the windows keep the ids of ended replays."""
    replay = raw.get("replay")
    if raw.get("ranking") is not None or type(replay) is not dict:
        return None
    replay_id = replay.get("id")
    if type(replay_id) is not str or not replay_id:
        return None
    _within((replay_id,), max_id_bytes, "replay.id")
    if replay.get("end") is True:
        return Rejection(Reason.END_OF_REPLAY, f"replay {replay_id} ended", Outcome.REPLAY_NOTICE)
    if replay.get("start") is True:
        detail = f"replay {replay_id} started"
        return Rejection(Reason.START_OF_REPLAY, detail, Outcome.REPLAY_NOTICE)
    outcome, reason = replay.get("outcome"), replay.get("reason")
    if type(outcome) is str and type(reason) is str:
        detail = f"replay {replay_id}: {outcome} ({reason})"
        return Rejection(Reason.FAILED_QUERY, detail[:200], Outcome.REPLAY_NOTICE)
    return None


def _notice_placed(
    raw: dict[str, Any],
    notice: Rejection,
    record_timestamp_ms: int,
    *,
    segment_keys: frozenset[str] | None,
    max_value_bytes: int,
    use_event_time: bool,
) -> tuple[int, Mapping[str, str]]:
    """The time a replay's notice names (a failed query's event time, a start or end
    marker's `replay.started`) and its kept segment labels, each checked as an event's."""
    if notice.reason not in _MARKERS:
        segment, time_ms = _placed(
            raw, record_timestamp_ms, segment_keys, max_value_bytes, use_event_time
        )
        return time_ms, segment
    segment = _segment(raw.get("segment"), segment_keys)
    _within(segment.values(), max_value_bytes, "a segment value")
    started = raw["replay"].get("started")
    if type(started) is not int or started < MIN_EPOCH_MS:
        raise _RejectedError(Reason.BAD_EVENT_TIME, "replay.started is not epoch milliseconds")
    return started, segment


def _not_ahead(
    time_ms: int, record_timestamp_ms: int, now_ms: int, max_future_ms: int, skew_ms: int | None
) -> None:
    """Reject a replay notice's time past `now + max_future`, or past its record timestamp
    plus the clock skew (a replay sends a notice after the time it names)."""
    limits = RecordLimits(max_future_ms, NO_SKEW_BOUND if skew_ms is None else skew_ms)
    refusal = limits.time_refusal(time_ms, record_timestamp_ms, now_ms)
    if refusal is not None:
        raise _RejectedError(Reason.TOO_FAR_IN_FUTURE, f"the replay's time is {refusal}")


def _parse(value: bytes | None, max_bytes: int) -> dict[str, Any]:
    if not value:
        raise _RejectedError(Reason.INVALID_JSON, "empty record value")
    if len(value) > max_bytes:
        raise _RejectedError(Reason.TOO_LARGE, f"{len(value)} bytes > max_record_bytes {max_bytes}")
    try:
        raw = orjson.loads(value)
    except orjson.JSONDecodeError:
        # orjson reports bad UTF-8 as a JSON error; tell them apart only on this slow path.
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise _RejectedError(Reason.INVALID_UTF8, "record value is not UTF-8") from None
        raise _RejectedError(Reason.INVALID_JSON, "record value is not JSON") from None
    if type(raw) is not dict:
        raise _RejectedError(Reason.NOT_AN_OBJECT, f"JSON {type(raw).__name__}, not an object")
    version = raw.get("schema_version", EVENT_SCHEMA_VERSION)
    if type(version) is not int or version != EVENT_SCHEMA_VERSION:
        raise _RejectedError(Reason.UNSUPPORTED_SCHEMA_VERSION, "schema_version is not 1")
    return raw


def _identifier(raw: dict[str, Any], field: str, max_bytes: int) -> str:
    value = raw.get(field)
    if value is None:
        raise _RejectedError(Reason.MISSING_FIELD, f"{field} is missing")
    if type(value) is not str:
        raise _RejectedError(Reason.WRONG_TYPE, f"{field} is not a string")
    if not value:
        raise _RejectedError(Reason.MISSING_FIELD, f"{field} is empty")
    _within((value,), max_bytes, field)
    return value


def _within(strings: Iterable[str], max_bytes: int, what: str) -> None:
    """Reject when one of `strings` is longer than `max_bytes` in UTF-8."""
    for text in strings:
        if longer_than(text, max_bytes):
            raise _RejectedError(Reason.STRING_TOO_LONG, f"{what} is longer than {max_bytes} bytes")


def _ranking(value: Any, max_depth: int) -> tuple[str, ...]:
    if value is None:
        raise _RejectedError(Reason.MISSING_FIELD, "ranking is missing")
    if type(value) is not list:
        raise _RejectedError(Reason.WRONG_TYPE, "ranking is not an array")
    if not value:
        raise _RejectedError(Reason.EMPTY_RANKING, "ranking is empty")
    if len(value) > max_depth:
        raise _RejectedError(Reason.TOO_DEEP, f"ranking has {len(value)} documents > {max_depth}")
    try:
        # join raises TypeError on any non-string, and is several times faster than
        # testing each document's type in Python: this runs on every event.
        "".join(value)
    except TypeError:
        raise _RejectedError(
            Reason.WRONG_TYPE, "ranking has a document id that is not a string"
        ) from None
    unique = set(value)
    if len(unique) != len(value):
        raise _RejectedError(Reason.DUPLICATE_DOC, "ranking lists a document more than once")
    if "" in unique:
        raise _RejectedError(Reason.WRONG_TYPE, "ranking has an empty document id")
    return tuple(value)


def _judgments(value: Any) -> dict[str, int] | None:
    if value is None:
        return None
    if type(value) is not dict:
        raise _RejectedError(Reason.WRONG_TYPE, "judgments is not an object")
    for grade in value.values():
        # type() rather than isinstance(): JSON true is a bool, and bool is an int.
        if type(grade) is not int or not 0 <= grade <= MAX_GRADE:
            raise _RejectedError(Reason.BAD_GRADE, f"a grade is not an integer 0..{MAX_GRADE}")
    return value or None


def _documents(
    value: Any, ranking: tuple[str, ...], max_bytes: int
) -> dict[str, DocumentFields] | None:
    """What a judge reads of each ranked document: only the documents of the ranking and the
    names of `DOCUMENT_FIELDS` are kept, each document's kept strings within `max_bytes`."""
    if value is None:
        return None
    if type(value) is not dict:
        raise _RejectedError(Reason.WRONG_TYPE, "documents is not an object")
    ranked = set(ranking)
    kept: dict[str, DocumentFields] = {}
    for doc, entry in value.items():
        if type(entry) is not dict:
            raise _RejectedError(Reason.WRONG_TYPE, "a document's entry is not an object")
        if doc not in ranked:
            continue
        texts = tuple((name, entry[name]) for name in DOCUMENT_FIELDS if name in entry)
        if any(type(text) is not str for _, text in texts):
            raise _RejectedError(Reason.WRONG_TYPE, "a document's title, snippet or url: no string")
        if sum(len(text.encode("utf-8", "surrogatepass")) for _, text in texts) > max_bytes:
            raise _RejectedError(
                Reason.STRING_TOO_LONG,
                f"a document's title, snippet and url pass events.max_document_bytes ({max_bytes})",
            )
        if texts:
            kept[doc] = texts
    return kept or None


def _segment(value: Any, keys: frozenset[str] | None) -> Mapping[str, str]:
    if value is None:
        return _EMPTY
    if type(value) is not dict:
        raise _RejectedError(Reason.WRONG_TYPE, "segment is not an object")
    for item in value.values():
        if type(item) is not str:
            raise _RejectedError(Reason.WRONG_TYPE, "a segment value is not a string")
    if keys is None:
        return value
    return {key: item for key, item in value.items() if key in keys}


def _event_time(raw: dict[str, Any], record_timestamp_ms: int, use_event_time: bool) -> int:
    value = raw.get("event_time") if use_event_time else None
    if value is None:
        if record_timestamp_ms < 0:  # Kafka's "no timestamp"
            raise _RejectedError(Reason.BAD_EVENT_TIME, "no event_time and no record timestamp")
        return record_timestamp_ms
    if type(value) is int:
        if value < 0:
            raise _RejectedError(Reason.BAD_EVENT_TIME, "event_time is a negative epoch")
        if value < MIN_EPOCH_MS:
            raise _RejectedError(
                Reason.BAD_EVENT_TIME,
                f"event_time {value} is before 1973 as epoch milliseconds: epoch seconds? "
                "(send milliseconds or RFC 3339)",
            )
        return value
    if type(value) is str and _RFC3339.fullmatch(value):
        try:
            moment = datetime.fromisoformat(value.upper())
        except ValueError:
            raise _RejectedError(Reason.BAD_EVENT_TIME, "event_time is not a valid date") from None
        # The pattern demands an offset, so `moment` is aware. Integer arithmetic gives
        # exact milliseconds, where float seconds would round some instants.
        delta = moment - _EPOCH
        epoch_ms = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
        if epoch_ms < 0:
            raise _RejectedError(Reason.BAD_EVENT_TIME, "event_time is before 1970")
        return epoch_ms
    raise _RejectedError(Reason.BAD_EVENT_TIME, "event_time is neither RFC 3339 nor epoch ms")
