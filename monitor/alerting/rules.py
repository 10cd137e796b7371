"""Alert rules as data: one measure, one condition, and how many windows fire and resolve.

Parsed from the config by `monitor.config.alert_rules`; evaluated by
`monitor.alerting.conditions`.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.windows.summary import Segment

__all__ = [
    "AlertRule",
    "Below",
    "Comparison",
    "Condition",
    "Coverage",
    "Drop",
    "Judged",
    "Stale",
    "Trend",
]


@dataclass(frozen=True)
class Below:
    """Bad when the window's value is under `threshold`."""

    threshold: float


@dataclass(frozen=True)
class Drop:
    """Bad when the value fell by `relative` (or `absolute`) from the baseline, significantly.

    The baseline is the trailing median of the last `baseline_windows` windows, or `pinned`.
    """

    relative: float | None
    absolute: float | None
    baseline_windows: int
    significance: float
    min_queries: int
    pinned: float | None


@dataclass(frozen=True)
class Trend:
    """Bad on the window where Page-Hinkley detects a downward change of the series."""

    delta: float
    threshold: float
    min_windows: int


@dataclass(frozen=True)
class Coverage:
    """Bad when fewer than `minimum` of the evaluation set's queries were seen."""

    minimum: float


@dataclass(frozen=True)
class Judged:
    """Bad when the mean judged share of the top `k` is under `minimum`."""

    k: int
    minimum: float


@dataclass(frozen=True)
class Stale:
    """Bad when no window was finalized for `after_ms` of processing time."""

    after_ms: int


@dataclass(frozen=True)
class Comparison:
    """On a configured comparison (`comparisons:`), with its always-valid interval at the
    family's level: `worse` is bad when the whole interval lies below -margin (the candidate
    is worse than the baseline by more than `margin`), `better` when it lies above +margin.
    `scope`: `population` (the difference in the population of queries the set was drawn
    from) or `set` (on the queries compared)."""

    comparison: str
    direction: str  # "worse" | "better"
    margin: float
    scope: str = "population"


Condition = Below | Drop | Trend | Coverage | Judged | Stale | Comparison
QUALITY_CONDITIONS = (Below, Drop, Trend)
TRUST_CONDITIONS = (Coverage, Judged)


@dataclass(frozen=True)
class AlertRule:
    """One configured rule; `measure` is a catalog key such as `ndcg@10:linear`."""

    name: str
    index: int
    severity: str
    measure: str
    condition: Condition
    segment: Segment | None
    for_windows: int
    keep_firing_for: int
    runbook_url: str | None

    @property
    def restore_windows(self) -> int:
        """How many of a segment's newest windows a restart replays into this rule: enough
        to rebuild its baseline or detector and its pending and firing streaks; a pinned
        drop rule twice its baseline, so that it sees where a drop that is keeping its
        windows out began."""
        condition = self.condition
        streaks = self.for_windows + self.keep_firing_for
        if isinstance(condition, Drop):
            spans = 2 if condition.pinned is not None else 1
            return spans * condition.baseline_windows + streaks
        if isinstance(condition, Trend):
            return 4 * condition.min_windows + streaks
        if isinstance(condition, Stale):
            return 0
        return streaks

    @property
    def is_quality(self) -> bool:
        """Below, drop and trend rules: they are held on windows that are not trustworthy."""
        return isinstance(self.condition, QUALITY_CONDITIONS)
