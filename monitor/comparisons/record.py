"""What one comparison says about one window: per measure the paired statistics, the
always-valid sequence after it, each unit's differences so far and the intervals they give;
and its record on the windows topic.

    key     comparison/v2-vs-v1/10s/1767225600000/p0,2
    value   {"record": "comparison", "schema_version": 1, "name": ..., "window": "10s",
             "start_ms": ..., "end_ms": ..., "partitions": [0, 2],
             "measures": {"ndcg@10:linear": {"queries": 284, "delta": -0.007, ...}}}

The sequence state and the units' moments (`"units": {"q7": [count, mean, m2]}`) in the
record are the state *after* the window, so a restart continues from the newest record it
owns and skips the windows up to it (nothing counted twice).

Two intervals, each about its own population (`monitor.stats.query_units`): `set_*` the
difference on the units compared so far, `population_*` the difference in the population of
queries they were drawn from (in the `live` design the pooled-variance sequence,
`sequence_*`). Both at the comparison's confidence; `decision` gives them at the family's
level (Bonferroni over the `family` measures of every comparison), what alerts act on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import orjson

from monitor.stats.paired import PairedResult
from monitor.stats.query_units import FixedSetIntervals, UnitMoments, fixed_set_intervals
from monitor.stats.sequence import DEFAULT_TAU, MixtureSequence, SequenceState

__all__ = ["COMPARISON_KEY_PREFIX", "SCOPES", "ComparisonRecord", "MeasureComparison"]

SCOPES = ("population", "set")

COMPARISON_KEY_PREFIX = "comparison/"
SCHEMA_VERSION = 1  # fields added since are optional: older records read with defaults


@dataclass(frozen=True)
class MeasureComparison:
    """One measure of one comparison in one window: the paired statistics (`result`, NaN
    when there is no verdict, `note` says why) and the always-valid sequence after it."""

    measure: str
    result: PairedResult
    baseline_mean: float
    candidate_mean: float
    version: str
    note: str = ""
    sequence: SequenceState = field(default_factory=SequenceState)
    sequence_lower: float = -math.inf
    sequence_upper: float = math.inf
    fingerprint: str = ""
    design: str = "live"  # the design the population interval is for: replay | live
    units: Mapping[str, UnitMoments] = field(default_factory=dict)
    set_lower: float = -math.inf
    set_upper: float = math.inf
    population_lower: float = -math.inf
    population_upper: float = math.inf
    replay_stderr: float = math.nan
    min_detectable: float = math.nan
    alpha: float = 0.05
    family: int = 1  # measures x comparisons the alerts' error is controlled over
    tau: float = DEFAULT_TAU

    @property
    def compared_units(self) -> int:
        """Units (queries) with at least one window's difference so far."""
        return len(self.units)

    @cached_property
    def family_intervals(self) -> FixedSetIntervals:
        """The units' intervals at the family's level alpha / family (computed once)."""
        return fixed_set_intervals(self.units, self.alpha / max(1, self.family))

    def family_min_detectable(self) -> float:
        """The population difference the compared queries detect with 80 % power at the
        family's level (what the alert text says)."""
        return self.family_intervals.min_detectable

    def decision_level(self, level: float | None = None) -> float:
        """The level alerts act at: the family's alpha / family, or `level` (a rule's share
        of the false-page budget) where that is stricter."""
        family = self.alpha / max(1, self.family)
        return family if level is None else min(family, level)

    def decision(self, scope: str, level: float | None = None) -> tuple[float, float]:
        """The `scope` interval at `decision_level(level)`: what alerts act on."""
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}: one of {', '.join(SCOPES)}")
        at = self.decision_level(level)
        if scope == "population" and self.design == "live":
            if not self.sequence.windows:
                return -math.inf, math.inf
            return MixtureSequence(at, self.tau).interval(self.sequence)
        family = self.alpha / max(1, self.family)
        intervals = self.family_intervals if at == family else fixed_set_intervals(self.units, at)
        if scope == "set":
            return intervals.set_lower, intervals.set_upper
        return intervals.population_lower, intervals.population_upper

    def to_dict(self) -> dict[str, Any]:
        """Flat: the statistics beside the rest (`rankmon_comparison_*` names them so)."""
        raw = {k: v for k, v in asdict(self).items() if k not in ("result", "units")}
        raw.update(asdict(self.result))
        raw["sequence"] = asdict(self.sequence)
        raw["units"] = {u: [m.count, m.mean, m.m2] for u, m in sorted(self.units.items())}
        return {k: _json_number(v) for k, v in raw.items()}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> MeasureComparison:
        values = {k: _number(v) for k, v in raw.items() if k in _FIELDS}
        statistics = {k: _number(v) for k, v in raw.items() if k in _RESULT_FIELDS}
        statistics["queries"] = int(statistics["queries"])
        values["result"] = PairedResult(**statistics)
        values["sequence"] = SequenceState(**dict(raw.get("sequence") or {}))
        values["units"] = {
            str(u): UnitMoments(int(c), float(m), float(m2))
            for u, (c, m, m2) in dict(raw.get("units") or {}).items()
        }
        return cls(**values)


_FIELDS = frozenset(MeasureComparison.__dataclass_fields__) - {"result", "units"}
_RESULT_FIELDS = frozenset(PairedResult.__dataclass_fields__)


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _json_number(v) for k, v in value.items()}
    return value


def _number(value: Any) -> Any:
    if value is None:
        return math.nan
    if value in ("inf", "-inf"):
        return float(value)
    return value


@dataclass(frozen=True)
class ComparisonRecord:
    """One comparison in one window, every measure; `partitions` those its events came from
    (None: unknown, a test's fake)."""

    name: str
    window: str
    start_ms: int
    end_ms: int
    measures: tuple[MeasureComparison, ...]
    partitions: frozenset[int] | None = None

    @property
    def key(self) -> bytes:
        parts = "" if self.partitions is None else f"/p{_partition_list(self.partitions)}"
        return f"{COMPARISON_KEY_PREFIX}{self.name}/{self.window}/{self.start_ms}{parts}".encode()

    def to_json(self) -> bytes:
        value: dict[str, Any] = {
            "record": "comparison",
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "window": self.window,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "measures": {m.measure: m.to_dict() for m in self.measures},
        }
        if self.partitions is not None:
            value["partitions"] = sorted(self.partitions)
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def from_json(cls, data: bytes) -> ComparisonRecord:
        """Parse a record value; `ValueError` if it is not a comparison record."""
        try:
            raw = orjson.loads(data)
            if not isinstance(raw, dict) or raw.get("record") != "comparison":
                raise ValueError("not a rankmon comparison record")
            if raw.get("schema_version") != SCHEMA_VERSION:
                raise ValueError(f"comparison record schema {raw.get('schema_version')!r}")
            partitions = raw.get("partitions")
            return cls(
                name=str(raw["name"]),
                window=str(raw["window"]),
                start_ms=int(raw["start_ms"]),
                end_ms=int(raw["end_ms"]),
                measures=tuple(
                    MeasureComparison.from_dict({**m, "measure": key})
                    for key, m in raw["measures"].items()
                ),
                partitions=None if partitions is None else frozenset(int(p) for p in partitions),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"malformed comparison record: {error}") from error

    @staticmethod
    def is_key(key: bytes | None) -> bool:
        """Whether a windows-topic record key is a comparison's."""
        return key is not None and key.startswith(COMPARISON_KEY_PREFIX.encode())

    def owned_by(self, assignment: Iterable[int]) -> bool:
        """Whether every partition of the record is in `assignment`."""
        return self.partitions is not None and self.partitions <= frozenset(assignment)


def _partition_list(partitions: Iterable[int]) -> str:
    return ",".join(str(p) for p in sorted(partitions))
