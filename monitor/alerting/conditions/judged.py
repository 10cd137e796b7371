"""`judged`: bad when too little of the top k is judged in the window.

A trust condition: while it finds a window bad, the quality rules (`Role.QUALITY`) hold
their alerts on it.

```yaml
- name: judged-top10
  judged: {k: 10, min: 0.6}
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from monitor.alerting.conditions.base import (
    Condition,
    Role,
    RuleContext,
    Verdict,
    WindowTrack,
    measure_value,
    refuse_measure,
    share,
    threshold_verdict,
)
from monitor.alerting.promql import PromqlContext, enough_queries, measure_series
from monitor.sections import ConfigSection, as_int
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["Judged"]


@dataclass(frozen=True)
class Judged(Condition):
    """Bad when the mean judged share of the top `k` is under `minimum`."""

    key = "judged"
    role = Role.TRUST
    has_measure = False  # its own: judged@k

    k: int
    minimum: float

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        k = section.get("k", as_int(1))
        if k not in context.cutoffs:
            raise section.error("k", f"cutoff {k} is not one the monitor computes")
        minimum = section.get("min", share("a share of the top k"))
        section.finish()
        return cls(k=k, minimum=minimum)

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        refuse_measure(rule, "judged")
        return f"judged@{self.k}"

    def render(self) -> dict[str, Any]:
        return {"k": self.k, "min": self.minimum}

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
        verdict = threshold_verdict(value, self.minimum, measure)
        note = (
            f"only {value:.0%} of the top {self.k} documents are judged: "
            "quality numbers of this window are untrustworthy"
        )
        return Verdict(verdict.evidence, verdict.value, verdict.baseline, note=note)

    def summary(self, measure: str) -> str:
        return f"judged share of the top {self.k} under {self.minimum:.0%}"

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        value = measure_series(measure, segment)
        return f"({value} < {self.minimum:g}){enough_queries(segment, context)}"
