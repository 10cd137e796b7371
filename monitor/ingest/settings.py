"""The `segments` and `judgments` settings, declared once (`monitor.declare`): what an event
may carry as segment labels and inline judgments, which ingest checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from monitor.declare import setting
from monitor.ingest.schema import DEFAULT_MAX_VALUE_BYTES
from monitor.sections import as_choice, as_int, as_positive_duration, as_str_list
from monitor.values import Duration, parse_duration
from monitor.windows.segments import label_name_problem

__all__ = ["JudgmentsConfig", "SegmentsConfig"]

_NO_KEYS: Final[tuple[str, ...]] = ()


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

    When both grade a document, the evaluation set wins.
    """

    inline: str = setting(
        "ignore",
        read=as_choice("ignore", "fill"),
        doc="ignore an event's judgments, or fill the evaluation set's gaps with them",
    )
