"""Segment labels: which parts of an event's `segment` object become Prometheus labels.

Only the configured keys become labels, and their values are capped: a label's cardinality is
what a Prometheus server pays for, and a producer that puts a request id into a segment must
not be able to take it down. Values past the caps are folded into `OVERFLOW`.

Labels are decided per window, when it is finalized, not per event, so that the same event
gets the same label in every life of the process (a replay after a crash, a restart):

- intake keeps each event's raw values of the keys (`SegmentLabeler.raw`); the windows hold
  their events by raw segment;
- finalizing a window, in start order, `SegmentLabeler.window_labels` first retires the values
  and combinations not seen for `retire_after` (event time), then admits the window's new
  values, in sorted order, while a key has fewer than `max_values`, and its new combinations
  while there are fewer than `max_combinations`; a raw segment keeps its values where they
  are admitted (`__other__` elsewhere), and becomes `__other__` on every key if its
  combination is not admitted. A producer that sends `__other__` itself is folded with the
  overflow: the value is never admitted and blocks no other value's admission. Admitted
  values and combinations are seen at the window's end;
- the state after a window (`LabelState`) goes with its shares to the windows topic, so a
  restart continues from the newest one, and a replayed event of a published window is
  labelled as it was then (`label_under`).

A new model release therefore gets its own label from the first window in which there is
room: once an older release has been silent for `retire_after`. Series of retired segments
leave `/metrics` (the exporter is told, `retired`).

Against a flood of new values: a key holds at most `4 x max_values` (at least 100) values that
are not admitted yet at once (`raw`): any more, until a finalize decides on them, are folded
into `__other__` at intake. Only then can two lives label an event differently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from monitor.scoring.catalog import KIND_TABLE
from monitor.windows.summary import Segment

__all__ = [
    "MISSING_VALUE",
    "OVERFLOW",
    "RESERVED_LABELS",
    "LabelState",
    "SegmentLabeler",
    "label_name_problem",
    "label_under",
]

OVERFLOW: Final = "__other__"
MISSING_VALUE: Final = ""

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
        # a measure's parameters are labels of its series (`rbp`'s `p`, `set_F`'s `beta`)
        *(param.name for kind in KIND_TABLE for param in kind.params),
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


Values = tuple[str, ...]  # one value per key, in the sorted order of the keys


@dataclass(frozen=True)
class LabelState:
    """What is admitted after a window: per key the values, and the combinations of admitted
    values, each with the end (event time, ms) of the last window it was seen in."""

    values: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    combinations: Mapping[Values, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The `segment_labels` field of a window summary."""
        return {
            "values": {key: dict(seen) for key, seen in self.values.items()},
            "combinations": [[list(values), seen] for values, seen in self.combinations.items()],
        }

    @classmethod
    def from_json(cls, raw: Any) -> LabelState:
        """Parse `to_json`'s form; `ValueError` if it is not one."""
        try:
            values = {
                str(key): {str(v): int(seen) for v, seen in by_value.items()}
                for key, by_value in raw["values"].items()
            }
            combinations = {
                tuple(str(v) for v in combination): int(seen)
                for combination, seen in raw["combinations"]
            }
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise ValueError(f"malformed segment_labels: {error}") from error
        return cls(values, combinations)


def label_under(state: LabelState, keys: Sequence[str], raw: Segment) -> Segment:
    """The label of a raw segment under `state` (the labels of the window `state` came with)."""
    if not keys:
        return ()
    values = tuple(value for _, value in raw)
    labelled = tuple(
        value if value in state.values.get(key, {}) else OVERFLOW
        for key, value in zip(keys, values, strict=True)
    )
    if labelled not in state.combinations:
        labelled = (OVERFLOW,) * len(keys)
    return tuple(zip(keys, labelled, strict=True))


class SegmentLabeler:
    """Raw segments at intake, and each window's labels at finalize (see the module docstring).

    Without keys every segment is `()`. `max_values` caps each key's admitted values,
    `max_combinations` the admitted combinations; `retire_after_ms` is how long (event time)
    a value or combination may go unseen before it leaves (None: never).
    """

    def __init__(
        self,
        keys: Sequence[str],
        max_values: int,
        *,
        max_combinations: int | None = None,
        retire_after_ms: int | None = None,
    ) -> None:
        if max_values < 1:
            raise ValueError("max_values must be at least 1")
        if max_combinations is not None and max_combinations < 1:
            raise ValueError("max_combinations must be at least 1")
        self.keys = tuple(sorted(keys))
        self.max_values = max_values
        self.max_combinations = max_combinations
        self.retire_after_ms = retire_after_ms
        self._values: dict[str, dict[str, int]] = {key: {} for key in self.keys}
        self._combinations: dict[Values, int] = {}
        self._pending: dict[str, set[str]] = {key: set() for key in self.keys}
        self._raw: dict[Values, Segment] = {}
        self.pending_cap = max(4 * max_values, 100)

    # -- intake -----------------------------------------------------------------------

    def values_of(self, segment: Mapping[str, str] | None) -> Values:
        """The segment's values of `keys`, in that order; MISSING_VALUE for a key it lacks."""
        return tuple((segment or {}).get(key, MISSING_VALUE) for key in self.keys)

    def raw(self, values: Values) -> Segment:
        """The raw segment of an event's values of `keys` (in that order).

        A value not admitted yet is kept as it is while its key has fewer than `pending_cap`
        of those waiting for a finalize; past that it is folded into `OVERFLOW` here.
        """
        cached = self._raw.get(values)
        if cached is not None:
            return cached
        kept = tuple(self._keep(key, value) for key, value in zip(self.keys, values, strict=True))
        segment = tuple(zip(self.keys, kept, strict=True))
        if kept == values:  # only unfolded segments are cached: the cache stays bounded
            self._raw[values] = segment
        return segment

    def label(self, segment: Mapping[str, str] | None) -> Segment:
        """`raw` of an event's segment object."""
        return self.raw(self.values_of(segment)) if self.keys else ()

    def _keep(self, key: str, value: str) -> str:
        if value in self._values[key]:
            return value
        pending = self._pending[key]
        if value in pending or len(pending) < self.pending_cap:
            pending.add(value)
            return value
        return OVERFLOW

    # -- finalize ---------------------------------------------------------------------

    def window_labels(
        self,
        start_ms: int,
        end_ms: int,
        raws: Iterable[Segment],
        published: LabelState | None = None,
    ) -> tuple[dict[Segment, Segment], list[Segment]]:
        """Each raw segment's label in the window [start_ms, end_ms), and the labels retired
        by it; the state moves on to after the window. With `published` (the window's shares
        were published before a restart), the window is labelled as it was then."""
        raws = sorted(set(raws))
        if not self.keys:
            return {raw: () for raw in raws}, []
        retired = self._retire(start_ms) if published is None else []
        if published is not None:
            self._values = {key: dict(published.values.get(key, {})) for key in self.keys}
            self._combinations = dict(published.combinations)
        else:
            self._admit(raws)
        state = self.state
        labels = {raw: label_under(state, self.keys, raw) for raw in raws}
        if published is None:
            self._seen(labels.values(), end_ms)
        self._pending = {key: set() for key in self.keys}
        self._raw.clear()
        return labels, retired

    def _retire(self, start_ms: int) -> list[Segment]:
        if self.retire_after_ms is None:
            return []
        oldest = start_ms - self.retire_after_ms
        for key, seen in self._values.items():
            self._values[key] = {value: at for value, at in seen.items() if at >= oldest}
        retired = [values for values, at in self._combinations.items() if at < oldest]
        for values in retired:
            del self._combinations[values]
        return [tuple(zip(self.keys, values, strict=True)) for values in retired]

    def _admit(self, raws: Sequence[Segment]) -> None:
        for index, key in enumerate(self.keys):
            admitted = self._values[key]
            # A producer's own `__other__` (or one folded at intake) is never a value of its
            # own: it stays in the overflow and takes no room from the others.
            new = {raw[index][1] for raw in raws} - admitted.keys() - {OVERFLOW}
            for value in sorted(new):
                if len(admitted) >= self.max_values:
                    break
                admitted[value] = -1  # seen at this window's end, below (if it is labelled)
        cap = self.max_combinations
        for raw in raws:
            labelled = tuple(
                value if value in self._values[key] else OVERFLOW for key, value in raw
            )
            if OVERFLOW in labelled or labelled in self._combinations:
                continue
            if cap is not None and len(self._combinations) >= cap:
                continue
            self._combinations[labelled] = -1

    def _seen(self, labels: Iterable[Segment], end_ms: int) -> None:
        for label in labels:
            values = tuple(value for _, value in label)
            if OVERFLOW in values:
                continue
            self._combinations[values] = end_ms
            for key, value in label:
                self._values[key][value] = end_ms
        # Admitted this window but only ever folded (its combination had no room): seen now.
        for seen in self._values.values():
            for value, at in seen.items():
                if at < 0:
                    seen[value] = end_ms
        self._combinations = {v: (end_ms if at < 0 else at) for v, at in self._combinations.items()}

    @property
    def state(self) -> LabelState:
        """What is admitted now (after the last finalized window)."""
        return LabelState(
            {key: dict(seen) for key, seen in self._values.items()}, dict(self._combinations)
        )

    def restore(self, state: LabelState) -> None:
        """Continue from the state a published window left (the newest one read back)."""
        self._values = {key: dict(state.values.get(key, {})) for key in self.keys}
        self._combinations = dict(state.combinations)
        self._raw.clear()
