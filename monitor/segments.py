"""Segment labels: which parts of an event's `segment` object become Prometheus labels.

Only the configured keys become labels, and each key keeps at most `max_values` distinct
values: a label's cardinality is what a Prometheus server pays for, and a producer that puts
a request id into a segment must not be able to take it down. Values past the cap are folded
into `OVERFLOW`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from monitor.summary import Segment

__all__ = ["MISSING", "OVERFLOW", "RESERVED_LABELS", "SegmentLabeler", "label_name_problem"]

# Every label name rankmon's series and alerts carry besides the segment keys, in one place:
# a segment key named like one of them would collide (`severity` made alerts of different
# segments one Alertmanager alert; `partition` crashed the exporter at start). The
# comparison label of configured comparisons is here as well.
RESERVED_LABELS: Final = frozenset(
    {
        # quality and window series
        "k",
        "gain",
        "window",
        "version",
        "measure",
        "comparison",
        # process series
        "outcome",
        "reason",
        "partition",
        "error",
        "sink",
        "result",
        "python",
        # alerts (Alertmanager labels and rankmon_alert_firing)
        "alert",
        "alertname",
        "severity",
        "alertstate",
        # added by Prometheus
        "job",
        "instance",
        "le",
        "quantile",
    }
)
_LABEL_NAME: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def label_name_problem(key: str) -> str | None:
    """Why `key` cannot be a segment label name, or None if it can."""
    if not _LABEL_NAME.fullmatch(key) or key.startswith("__"):
        return f"{key!r} is not a valid Prometheus label name"
    if key in RESERVED_LABELS:
        reserved = ", ".join(sorted(RESERVED_LABELS))
        return f"{key!r} is a label rankmon already uses; rename it (reserved: {reserved})"
    return None


OVERFLOW = "__other__"
MISSING = ""


class SegmentLabeler:
    """Maps an event's segment object to the tuple of its allowed (key, value) pairs.

    A key the event does not carry gets the empty value, so every series has the same label
    names. The first `max_values` distinct values of a key are kept as they are, in order of
    arrival; later new values become `OVERFLOW`.
    """

    def __init__(self, keys: Sequence[str], max_values: int) -> None:
        if max_values < 1:
            raise ValueError("max_values must be at least 1")
        self.keys = tuple(sorted(keys))
        self.max_values = max_values
        self._seen: dict[str, set[str]] = {key: set() for key in self.keys}
        self._cache: dict[tuple[str, ...], Segment] = {}

    def label(self, segment: Mapping[str, str] | None) -> Segment:
        """The segment tuple for an event's segment object."""
        if not self.keys:
            return ()
        return self.label_values(self.values_of(segment))

    def values_of(self, segment: Mapping[str, str] | None) -> tuple[str, ...]:
        """The segment's values of `keys`, in that order; MISSING for a key it lacks."""
        return tuple((segment or {}).get(key, MISSING) for key in self.keys)

    def label_values(self, values: tuple[str, ...]) -> Segment:
        """The segment tuple for the values of `keys` (in that order) an event carried."""
        cached = self._cache.get(values)
        if cached is not None:
            return cached
        labelled = tuple(
            (key, self._admit(key, value)) for key, value in zip(self.keys, values, strict=True)
        )
        # Only values admitted as themselves are cached: an overflowing combination must not
        # grow the cache without bound.
        if all(value == kept for value, (_, kept) in zip(values, labelled, strict=True)):
            self._cache[values] = labelled
        return labelled

    def _admit(self, key: str, value: str) -> str:
        seen = self._seen[key]
        if value in seen:
            return value
        if len(seen) < self.max_values:
            seen.add(value)
            return value
        return OVERFLOW
