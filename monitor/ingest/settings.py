"""The `events`, `segments` and `judgments` settings, declared once (`monitor.declare`): what
an event may be and carry (its depth, its ids, its time, its segment labels, its inline
judgments), which ingest checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from monitor.declare import setting
from monitor.ingest.schema import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_ID_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
)
from monitor.sections import as_choice, as_duration, as_int, as_positive_duration, as_str_list
from monitor.values import Duration, parse_duration
from monitor.windows.segments import label_name_problem

__all__ = ["INLINE_SOURCE", "EventsConfig", "JudgmentsConfig", "SegmentsConfig"]

_NO_KEYS: Final[tuple[str, ...]] = ()
INLINE_SOURCE: Final = "inline"  # the source of an event's inline judgments


@dataclass(frozen=True, slots=True)
class EventsConfig:
    """What one ranking event may be: how deep its ranking, how long its ids, how far ahead of
    the clock its time; and which time places it in a window.

    `time_source` "event" takes the event's `event_time` and falls back to the record
    timestamp; "record" always takes the record timestamp. Past a limit the event is rejected
    and dead-lettered with its reason (`too_deep`, `string_too_long`, `too_far_in_future`).
    A record's size is the topics' limit, `kafka.max_record_bytes`.
    """

    max_depth: int = setting(
        DEFAULT_MAX_DEPTH, read=as_int(1, 1_000_000), doc="a longer ranking is rejected"
    )
    max_id_bytes: int = setting(
        DEFAULT_MAX_ID_BYTES,
        read=as_int(1, 1 << 20),
        doc="an event's ids and doc ids at most (UTF-8 bytes)",
    )
    max_document_bytes: int = setting(
        DEFAULT_MAX_DOCUMENT_BYTES,
        read=as_int(16, 1 << 20),
        doc="a ranked document's title, snippet and url together at most (UTF-8 bytes)",
    )
    max_future: Duration = setting(
        parse_duration("5m"), read=as_duration, doc="events further ahead of the clock are rejected"
    )
    time_source: str = setting(
        "event", read=as_choice("event", "record"), doc="event (event_time) or record (timestamp)"
    )


@dataclass(frozen=True, slots=True)
class SegmentsConfig:
    """Segment keys that become labels, and the caps on what they may take.

    Each key takes at most `max_values` values, and the keys together at most
    `max_combinations` combinations; the rest is reported as
    `monitor.windows.segments.OVERFLOW`, so a producer cannot explode the label cardinality.
    A value or combination not seen for `retire_after` (event time) leaves, making room for
    new ones (a new model release). An event whose value of a key is longer than
    `max_value_bytes` is rejected.
    """

    keys: tuple[str, ...] = setting(
        _NO_KEYS, read=as_str_list, doc="the event's segment keys that become labels"
    )
    max_values: int = setting(
        100, read=as_int(1, 100_000), doc="values one key may take; the rest is __overflow__"
    )
    max_combinations: int = setting(
        1000, read=as_int(1, 1_000_000), doc="combinations of the keys' values at most"
    )
    retire_after: Duration = setting(
        parse_duration("1d"),
        read=as_positive_duration,
        doc="a value not seen this long (event time) leaves",
    )
    max_value_bytes: int = setting(
        DEFAULT_MAX_VALUE_BYTES,
        read=as_int(1, 1 << 16),
        doc="an event with a longer value of a key is rejected",
    )

    def problem(self) -> tuple[str, str] | None:
        """Each key is a valid label name, given once."""
        for key in self.keys:
            problem = label_name_problem(key)
            if problem is not None:
                return "keys", problem
        if len(set(self.keys)) < len(self.keys):
            return "keys", "lists a key more than once"
        return None


@dataclass(frozen=True, slots=True)
class JudgmentsConfig:
    """Inline judgments: "ignore", or "fill" the documents the evaluation set has not judged.

    When both grade a document, the evaluation set wins. Their source is `inline`: left out of
    `evaluation_set.sources`, they are ignored as with "ignore".
    """

    inline: str = setting(
        "ignore",
        read=as_choice("ignore", "fill"),
        doc="ignore an event's judgments, or fill the evaluation set's gaps with them",
    )
