"""`replay_errors`: bad when the ranker failed too many of a replay's queries.

A replay's failed queries (errors and timeouts, `monitor.replay.ranker`) reach the monitor as
records of their own, counted into the replay's window (`WindowSummary.failed_queries`). The
share is failed / (ranked + failed): of the queries the replay asked, how many the ranker did
not answer. A window of live traffic has no failures and is always good.

A trust condition: while it finds a window bad, the quality rules (`Role.QUALITY`) hold
their alerts on it, so a ranker that times out pages as that, not as a quality drop. A
replay the ranker did not answer at all still has its window (no queries, every one failed).

```yaml
- name: ranker-failing
  replay_errors: {max: 0.05}
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
)
from monitor.alerting.promql import PromqlContext, selector
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["ReplayErrors"]


@dataclass(frozen=True)
class ReplayErrors(Condition):
    """Bad when more than `maximum` of the queries a replay asked failed."""

    key = "replay_errors"
    role = Role.TRUST
    has_measure = False
    explains_a_window = False  # an alert links to the page's top
    holds_small_windows = False  # a replay the ranker did not answer has no queries at all

    maximum: float

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        maximum = section.get("max", share("a share of a replay's queries"))
        section.finish()
        return cls(maximum=maximum)

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        refuse_measure(rule, "replay_errors")
        return "replay_errors"

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
        failed, asked = summary.failed_queries, summary.queries + summary.failed_queries
        value = summary.failure_share
        evidence = Evidence.BAD if value > self.maximum else Evidence.GOOD
        note = (
            f"the ranker failed {failed} of the {asked} queries the replay asked "
            "(errors and timeouts): the quality numbers of this window leave them out"
        )
        return Verdict(evidence, value, baseline=self.maximum, note=note)

    def summary(self, measure: str) -> str:
        return f"the ranker failed over {self.maximum:.0%} of a replay's queries"

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        failed = selector("job:rankmon_window_failed_queries:sum", {}, segment)
        queries = selector("job:rankmon_window_queries:sum", {}, segment)
        return f"{failed} / ({failed} + {queries}) > {self.maximum:g}"
