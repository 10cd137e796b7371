"""`trend`: bad on the window where Page-Hinkley detects a downward change of the measure.

```yaml
- name: ndcg10-trend
  measure: ndcg@10
  trend: {delta: 0.005, threshold: 0.05, min_windows: 6}
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
)
from monitor.alerting.drift import PageHinkley
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection, as_int, as_number
from monitor.windows.summary import WindowSummary

__all__ = ["Trend"]


@dataclass(frozen=True)
class Trend(Condition):
    """Bad on the window where Page-Hinkley detects a downward change of the series."""

    key = "trend"
    role = Role.QUALITY

    delta: float
    threshold: float
    min_windows: int

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        threshold = section.get("threshold", as_number(0.0), 0.05)
        if threshold <= 0:
            raise section.error("threshold", "must be positive")
        condition = cls(
            delta=section.get("delta", as_number(0.0), 0.005),
            threshold=threshold,
            min_windows=section.get("min_windows", as_int(1), 6),
        )
        section.finish()
        return condition

    def render(self) -> dict[str, Any]:
        return {"delta": self.delta, "threshold": self.threshold, "min_windows": self.min_windows}

    def new_track(self) -> WindowTrack:
        return WindowTrack(detector=PageHinkley(self.delta, self.threshold, self.min_windows))

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
        track.detector.update(value)
        detected = track.detector.drift_detected
        evidence = Evidence.BAD if detected else Evidence.GOOD
        note = "Page-Hinkley detected a downward change" if detected else ""
        return Verdict(evidence, value, note=note)

    def summary(self, measure: str) -> str:
        return f"{measure} is drifting down (Page-Hinkley)"

    def left_out(self, *, ungated: bool) -> str:
        return "trend, Page-Hinkley has no PromQL form"
