"""`coverage`: bad when too few of the evaluation set's queries were seen in the window.

A trust condition: while it finds a window bad, the quality rules (`Role.QUALITY`) hold
their alerts on it.

```yaml
- name: coverage
  coverage: {min: 0.8}
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
    refuse_measure,
    share,
    threshold_verdict,
)
from monitor.alerting.promql import PromqlContext, selector
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["Coverage"]


@dataclass(frozen=True)
class Coverage(Condition):
    """Bad when fewer than `minimum` of the evaluation set's queries were seen."""

    key = "coverage"
    role = Role.TRUST
    has_measure = False
    explains_a_window = False  # an alert links to the page's top
    holds_small_windows = False  # it counts the queries a small window lacks

    minimum: float

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        minimum = section.get("min", share("a share of the evaluation set"))
        section.finish()
        return cls(minimum=minimum)

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        refuse_measure(rule, "coverage")
        return "coverage"

    def render(self) -> dict[str, Any]:
        return {"min": self.minimum}

    def hold(
        self,
        measure: str,
        summary: WindowSummary,
        *,
        small: bool,
        before_start: bool,
        min_queries: int,
    ) -> Verdict | None:
        if small and before_start:
            note = (
                f"held: a window that ended before rankmon started, with only "
                f"{summary.queries} queries (a stray old record, not an outage it watched)"
            )
            return Verdict(Evidence.UNKNOWN, summary.coverage, note=note)
        return None

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        verdict = threshold_verdict(summary.coverage, self.minimum, "coverage")
        note = (
            f"only {summary.queries} of {summary.evaluation_set_queries} evaluation-set queries "
            "were seen: quality numbers of this window are untrustworthy"
        )
        return Verdict(verdict.evidence, verdict.value, verdict.baseline, note=note)

    def summary(self, measure: str) -> str:
        return f"evaluation-set coverage under {self.minimum:.0%}"

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        coverage = selector("job:rankmon_coverage_ratio:sum", {}, segment)
        return f"{coverage} < {self.minimum:g}"
