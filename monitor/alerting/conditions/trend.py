"""`trend`: bad on the window where Page-Hinkley detects a downward change of the measure.

The detector runs on standardized window means (`monitor.alerting.drift`): each window's
shortfall under the mean of the windows before it, in standard errors of the window's mean
over its queries (the between-query variance pooled over the windows since the detector's
last start, skew-corrected). So `delta` and `threshold` are in standard errors, and the
threshold sets the in-control run length whatever the measure's noise. Left null (the
default), the threshold is derived: from the rule-segment's share of
`alerts.false_pages_per_day` when a budget is set (run length = windows a day / share),
otherwise for one false detection in 30 days per segment on a stable stream. A threshold
set by hand keeps the rule outside the budget.

```yaml
- name: ndcg10-trend
  measure: ndcg@10
  trend: {delta: 0.5, threshold: null, min_windows: 6}
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Self

from monitor.alerting.conditions.base import (
    Condition,
    Role,
    RuleContext,
    Verdict,
    WindowTrack,
    measure_value,
    query_values,
)
from monitor.alerting.drift import PageHinkley, threshold_for_run_length
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection, as_int, as_number
from monitor.windows.summary import WindowSummary

__all__ = ["DEFAULT_DELTA", "Trend"]

DEFAULT_DELTA = 0.5  # standard errors: tuned to a shift of one standard error
DEFAULT_RUN_DAYS = 30  # without a budget: one false detection in this many days a segment


@dataclass(frozen=True)
class Trend(Condition):
    """Bad on the window where Page-Hinkley detects a downward change of the series."""

    key = "trend"
    role = Role.QUALITY

    delta: float
    threshold: float | None
    min_windows: int
    # Without a budget and a threshold: the threshold for one false detection in 30 days.
    default_threshold: float = 0.0

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        threshold = section.get("threshold", as_number(0.0), None)
        if threshold is not None and threshold < 1:
            raise section.error(
                "threshold",
                "is in standard errors of the window's mean: under 1 it fires on noise "
                "(null derives it from alerts.false_pages_per_day)",
            )
        delta = section.get("delta", as_number(0.0), DEFAULT_DELTA)
        condition = cls(
            delta=delta,
            threshold=threshold,
            min_windows=section.get("min_windows", as_int(1), 6),
            default_threshold=threshold_for_run_length(
                DEFAULT_RUN_DAYS * context.windows_per_day, delta
            ),
        )
        section.finish()
        return condition

    def render(self) -> dict[str, Any]:
        return {"delta": self.delta, "threshold": self.threshold, "min_windows": self.min_windows}

    def in_budget(self) -> bool:
        return self.threshold is None

    def out_of_budget(self) -> str:
        return f"its threshold {self.threshold:g} is set by hand (null derives it from the budget)"

    def threshold_at(self, level: float | None) -> float:
        """The threshold in standard errors: the rule's own, else the one whose in-control
        run length is 1 / `level` windows (its share of the budget a window), else for one
        false detection in 30 days."""
        if self.threshold is not None:
            return self.threshold
        if level is None:
            return self.default_threshold
        return threshold_for_run_length(1.0 / level, self.delta)

    def new_track(self) -> WindowTrack:
        return WindowTrack(detector=PageHinkley(self.delta, self.min_windows))

    def restore_windows(self, streaks: int) -> int:
        return 4 * self.min_windows + streaks

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        value = measure_value(summary, measure)
        if math.isnan(value) or track.detector is None:
            return Verdict(Evidence.UNKNOWN, value, note="no value in this window")
        threshold = self.threshold_at(level)
        if not track.detector.update(list(query_values(summary, measure).values()), threshold):
            note = "no standard error: fewer than 2 queries with a value, or all alike"
            return Verdict(Evidence.UNKNOWN, value, note=note)
        detected = track.detector.drift_detected
        evidence = Evidence.BAD if detected else Evidence.GOOD
        note = (
            f"Page-Hinkley detected a downward change: the shortfall under the mean of the "
            f"windows before passed {threshold:.2f} standard errors"
            if detected
            else ""
        )
        return Verdict(evidence, value, note=note)

    def summary(self, measure: str) -> str:
        return f"{measure} is drifting down (Page-Hinkley)"

    def left_out(self, *, ungated: bool) -> str:
        return "trend, Page-Hinkley has no PromQL form"
