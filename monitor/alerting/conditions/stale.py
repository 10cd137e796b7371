"""`stale`: bad when no window was finalized for a while (processing time).

Judged on the service's ticks, on a monotonic clock, for the stream as a whole (or the part
of it the rule's `segment` filters): a retired model's segment going quiet is not an outage.

```yaml
- name: pipeline-stale
  stale: {after: 15m}
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
)
from monitor.alerting.promql import PromqlContext, selector
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection, as_duration
from monitor.values import duration_of_ms, format_duration
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["Stale"]


@dataclass(frozen=True)
class Stale(Condition):
    """Bad when no window was finalized for `after_ms` of processing time."""

    key = "stale"
    role = Role.CLOCK
    has_measure = False
    explains_a_window = False  # an alert links to the page's top
    takes_streaks = False  # `after` is the delay
    holds_small_windows = False

    after_ms: int

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        after = section.get("after", as_duration)
        section.finish()
        if after.ms <= 0:
            raise section.error("after", f"must be longer than zero, got {after}")
        return cls(after_ms=after.ms)

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        refuse_measure(rule, "stale")
        return "window"

    def render(self) -> dict[str, Any]:
        return {"after": duration_of_ms(self.after_ms).text}

    def restore_windows(self, streaks: int) -> int:
        return 0

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        return Verdict(Evidence.GOOD, 0.0, note="a window was finalized")

    def on_tick(self, silent_ms: int) -> Verdict:
        bad = silent_ms > self.after_ms
        return Verdict(
            Evidence.BAD if bad else Evidence.GOOD,
            silent_ms / 1000,
            self.after_ms / 1000,
            note=f"no finalized window for {silent_ms / 1000:.0f}s",
        )

    def alert_segment(self, rule_segment: Segment | None, segment: Segment) -> Segment:
        return rule_segment or ()

    def summary(self, measure: str) -> str:
        return f"no finalized window for more than {format_duration(self.after_ms)}"

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        ends = selector("rankmon_window_end_timestamp_seconds", {"job": context.job}, segment)
        after = format_duration(self.after_ms)
        # `present ... offset after`: the series existed `after` ago, so a freshly started
        # instance is not stale before it had the chance to finalize a window.
        return (
            f"(sum by (job) (changes({ends}[{after}])) == 0)"
            f" and on(job) sum by (job) (present_over_time({ends}[1m] offset {after}))"
        )

    def promql_description(self, measure: str, source: str) -> str:
        return f"no rankmon window finalized in {format_duration(self.after_ms)}; {source}"
