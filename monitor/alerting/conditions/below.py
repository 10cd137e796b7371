"""`below`: bad when the window's value of the measure is under a fixed floor.

```yaml
- name: ndcg10-floor
  measure: ndcg@10
  below: 0.55
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from monitor.alerting.conditions.base import (
    Condition,
    Role,
    RuleContext,
    Verdict,
    WindowTrack,
    measure_value,
    threshold_verdict,
)
from monitor.alerting.promql import PromqlContext, enough_queries, measure_series
from monitor.sections import ConfigSection, as_number
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["Below"]


@dataclass(frozen=True)
class Below(Condition):
    """Bad when the window's value is under `threshold`."""

    key = "below"
    role = Role.QUALITY

    threshold: float

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        return cls(threshold=rule.get(cls.key, as_number(0.0)))

    def render(self) -> float:
        return self.threshold

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        return threshold_verdict(measure_value(summary, measure), self.threshold, "")

    def summary(self, measure: str) -> str:
        return f"{measure} under the floor {self.threshold:g}"

    def floor(self) -> float:
        return self.threshold

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        value = measure_series(measure, segment)
        return f"({value} < {self.threshold:g}){enough_queries(segment, context)}"
