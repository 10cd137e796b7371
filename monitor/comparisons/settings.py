"""The comparisons' settings: which segments are compared, on what, with what confidence.

Each item of the `comparisons:` list is read by `monitor.config.comparisons`, which reads the
name, the two segment filters and the measures (they are checked against the rest of the
config); every other key is declared here once (`monitor.declare`): its default, reader and
doc.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from monitor.declare import setting
from monitor.sections import as_choice, as_int, as_number, as_positive_number, describe
from monitor.stats.sequence import DEFAULT_BURN_IN, DEFAULT_TAU
from monitor.windows.summary import Segment, segment_label

__all__ = [
    "DEFAULT_DRAWS",
    "DEFAULT_MIN_JUDGED",
    "DEFAULT_MIN_QUERIES",
    "DESIGNS",
    "ComparisonConfig",
]

DESIGNS = ("auto", "replay", "live")

DEFAULT_MIN_QUERIES = 10
DEFAULT_MIN_JUDGED = 0.5  # no verdict resting mostly on unjudged documents
DEFAULT_DRAWS = 4000  # random sign flips per window and measure above 12 common queries


def _open_unit(value: Any) -> float:
    number = as_number(0.0, 1.0)(value)
    if not 0.5 <= number < 1.0:
        raise ValueError(f"must be in [0.5, 1), got {describe(value)}")
    return number


def _timestamp_ms(value: Any) -> int:
    """An ISO 8601 time with its zone (YAML may have parsed it already)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"expected an ISO 8601 time such as 2026-12-01T00:00:00Z, got {describe(value)}"
            ) from None
    if not isinstance(value, dt.datetime):
        raise ValueError(
            f"expected an ISO 8601 time such as 2026-12-01T00:00:00Z, got {describe(value)}"
        )
    if value.tzinfo is None:
        raise ValueError("needs a time zone (e.g. a trailing Z for UTC)")
    return int(value.timestamp() * 1000)


def _iso_time(since_ms: int) -> str | None:
    if not since_ms:
        return None
    moment = dt.datetime.fromtimestamp(since_ms / 1000, dt.UTC)
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class ComparisonConfig:
    """One comparison: `candidate` against `baseline`, paired by query in each window.

    `baseline` and `candidate` are segment filters (subsets of the segment keys). Segment keys
    neither names are paired too: with keys [model, market], `{model: v1}` against
    `{model: v2}` pairs each query in each market (a unit is market and query).
    `measures`: catalog keys (`ndcg@10:linear`). A window reports no verdict (NaN) with
    fewer than `min_queries` common units, or when either side's coverage (its queries /
    the evaluation set's) is under `min_coverage` or its judged@k (k the measure's cutoff,
    when the monitor computes it) under `min_judged`. The always-valid sequence (`tau`, see
    `monitor.stats.sequence`) starts at `since_ms` (0: when the comparison first sees a
    window) and starts again when any of this definition changes.

    `design`: `replay` (a fixed evaluation set scored again every window: the intervals of
    `monitor.stats.query_units`), `live` (each window a fresh sample of queries: the
    pooled-variance sequence, after `burn_in` per-query differences) or `auto` (replay when
    at least half of a window's common units were seen in an earlier window).
    """

    name: str
    baseline: Segment
    candidate: Segment
    measures: tuple[str, ...]
    confidence: float = setting(
        0.95, read=_open_unit, doc="of the intervals, in [0.5, 1); the tests' level is 1 - it"
    )
    min_queries: int = setting(
        DEFAULT_MIN_QUERIES, read=as_int(2), doc="fewer common queries: no verdict (NaN)"
    )
    min_coverage: float = setting(
        0.0,
        read=as_number(0.0, 1.0),
        doc="either side's share of the evaluation set under it: no verdict",
    )
    min_judged: float = setting(
        DEFAULT_MIN_JUDGED,
        read=as_number(0.0, 1.0),
        doc="either side's judged@k (k: the measure's cutoff) under it: no verdict",
    )
    tau: float = setting(
        DEFAULT_TAU, read=as_positive_number, doc="the live-traffic sequence's mixture scale"
    )
    design: str = setting(
        "auto", read=as_choice(*DESIGNS), doc="replay, live, or auto (replay when queries repeat)"
    )
    burn_in: int = setting(
        DEFAULT_BURN_IN,
        read=as_int(2),
        doc="live: per-query differences that set the pooled variance before a verdict",
    )
    since_ms: int = setting(
        0,
        read=_timestamp_ms,
        write=_iso_time,
        key="since",
        doc="an ISO 8601 time: the sequence counts windows from there",
    )
    draws: int = DEFAULT_DRAWS  # random sign flips (not a config key: benches lower it)

    @property
    def alpha(self) -> float:
        """1 - confidence: the level of the per-window test and of the always-valid one."""
        return 1.0 - self.confidence

    @property
    def paired_keys(self) -> frozenset[str]:
        """The segment keys both sides fix: the rest pair units."""
        return frozenset(key for key, _ in self.baseline) | {key for key, _ in self.candidate}

    def fingerprint(self, measure: str) -> str:
        """What the sequence of `measure` depends on: a change restarts it."""
        return (
            f"{segment_label(self.baseline)}|{segment_label(self.candidate)}|{measure}|"
            f"{self.confidence!r}|{self.tau!r}|{self.since_ms}|{self.design}|{self.burn_in}|units"
        )
