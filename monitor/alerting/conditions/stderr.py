"""`stderr`: bad when the window's mean of the measure is too uncertain to act on.

The standard error of the window's mean over its queries (the between-query spread, as the
`rankmon_<measure>_stderr` gauge exports it) above `max`: the window saw too few queries, or
queries too unlike each other, for its number to say much. A quality rule: it is held, like
the others, on a window a trust rule (coverage, judged) found bad, and holds no other rule.

```yaml
- name: ndcg10-uncertain
  measure: ndcg@10
  stderr: {max: 0.02}
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
from monitor.alerting.promql import PromqlContext, enough_queries, measure_series
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection, as_number
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["Stderr"]


@dataclass(frozen=True)
class Stderr(Condition):
    """Bad when the standard error of the window's mean of the measure is over `maximum`."""

    key = "stderr"
    role = Role.QUALITY

    maximum: float

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        maximum = section.get("max", as_number(0.0))
        section.finish()
        if maximum <= 0:
            raise section.error("max", "must be positive")
        return cls(maximum=maximum)

    def render(self) -> dict[str, Any]:
        return {"max": self.maximum}

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        error = summary.stderr(measure)
        if math.isnan(error):
            note = "fewer than 2 queries with a value in this window: no standard error"
            return Verdict(Evidence.UNKNOWN, error, note=note)
        mean = measure_value(summary, measure)
        note = (
            f"{measure} is {mean:.4f} with a standard error of {error:.4f} over "
            f"{summary.defined_queries(measure)} queries (about +-{1.96 * error:.4f} at 95 %)"
        )
        evidence = Evidence.BAD if error > self.maximum else Evidence.GOOD
        return Verdict(evidence, error, self.maximum, note=note)

    def summary(self, measure: str) -> str:
        return f"standard error of {measure} over {self.maximum:g}: too uncertain to act on"

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        error = measure_series(measure, segment, "stderr")
        return f"({error} > {self.maximum:g}){enough_queries(segment, context)}"

    def promql_description(self, measure: str, source: str) -> str:
        return f'the standard error of {measure} is {{{{ $value | printf "%.4f" }}}}; {source}'
