"""`below`: bad when the window's value of the measure is under a fixed floor.

```yaml
- name: ndcg10-floor
  measure: ndcg@10
  below: 0.55
```

Under `alerts.false_pages_per_day` the rule is a one-sided test at its share of the budget a
window (`level`): bad when the window's value is under the floor by more than the Student t
quantile of 1 - level times its standard error over the window's queries, the between-query
variance and skewness pooled over the segment's windows (`conditions.base.under_by`: a
window's own spread makes a window of few queries mostly at 0 look like a breach). The floor
is then about the population of queries the window drew from; a value under it by less than
its noise is good.
"""

from __future__ import annotations

import math
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
    under_by,
)
from monitor.alerting.promql import PromqlContext, enough_queries, measure_series
from monitor.sections import ConfigSection, as_number
from monitor.stats.spread import SpreadMoments
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["Below"]


@dataclass(frozen=True)
class Below(Condition):
    """Bad when the window's value is under `threshold`."""

    key = "below"
    role = Role.QUALITY

    threshold: float
    budgeted = True

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
        value = measure_value(summary, measure)
        if level is None:
            return threshold_verdict(value, self.threshold, "")
        # under the budget every window adds to the segment's pooled skewness
        spread, _ = track.pool_spread(summary, measure)
        if math.isnan(value) or value >= self.threshold:
            return threshold_verdict(value, self.threshold, "")
        return under_by(summary, measure, self.threshold, level, spread)

    def new_track(self) -> WindowTrack:
        return WindowTrack(spread=SpreadMoments())

    def summary(self, measure: str) -> str:
        return f"{measure} under the floor {self.threshold:g}"

    def floor(self) -> float:
        return self.threshold

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        value = measure_series(measure, segment)
        return f"({value} < {self.threshold:g}){enough_queries(segment, context)}"
