"""The comparisons' settings: which segments are compared, on what, with what confidence.

Read from the `comparisons:` config section by `monitor.config.comparisons`.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    confidence: float = 0.95
    min_queries: int = DEFAULT_MIN_QUERIES
    min_coverage: float = 0.0
    min_judged: float = DEFAULT_MIN_JUDGED
    tau: float = DEFAULT_TAU
    since_ms: int = 0
    draws: int = DEFAULT_DRAWS
    design: str = "auto"
    burn_in: int = DEFAULT_BURN_IN

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
