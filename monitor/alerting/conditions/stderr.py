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

Under `alerts.false_pages_per_day` the rule is a one-sided test at its share of the budget a
window (`level`): bad when the between-query variance s^2 is surely above n x max^2, the
variance a standard error of `max` allows at the window's n queries
(`monitor.stats.spread.variance_limit`: a Gamma reading of s^2 with the kurtosis pooled over
the segment's windows, no Normal assumption on nDCG's lumpy values). Unknown under
`MIN_TESTED` queries.
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
from monitor.stats.spread import SpreadMoments, variance_limit
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["MIN_TESTED", "Stderr"]

MIN_TESTED = 20  # queries under which the budget's variance test is not made


@dataclass(frozen=True)
class Stderr(Condition):
    """Bad when the standard error of the window's mean of the measure is over `maximum`."""

    key = "stderr"
    role = Role.QUALITY

    maximum: float
    budgeted = True

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
        if level is None:
            evidence = Evidence.BAD if error > self.maximum else Evidence.GOOD
            return Verdict(evidence, error, self.maximum, note=note)
        # under the budget every window adds to the segment's pooled kurtosis
        spread, queries = track.pool_spread(summary, measure)
        if error <= self.maximum:
            return Verdict(Evidence.GOOD, error, self.maximum, note=note)
        return self.test(queries, error, spread.kurtosis, level, note)

    def new_track(self) -> WindowTrack:
        return WindowTrack(spread=SpreadMoments())

    def test(self, n: int, error: float, kurtosis: float, level: float, note: str) -> Verdict:
        """Whether the variance of `n` values whose mean has standard error `error` is
        surely above what `maximum` allows, at `level`, for values of this `kurtosis`."""
        if n < MIN_TESTED:
            held = f"{note}; under {MIN_TESTED} queries the budget's test is not made"
            return Verdict(Evidence.UNKNOWN, error, self.maximum, note=held)
        limit = variance_limit(n * self.maximum**2, n, kurtosis, level)
        bad = error * error * n > limit
        said = (
            f"{note}; {'over' if bad else 'not surely over'} {self.maximum:g} at level "
            f"{level:.2g} a window, its share of alerts.false_pages_per_day (a standard "
            f"error over {math.sqrt(limit / n):.4f} is)"
        )
        return Verdict(Evidence.BAD if bad else Evidence.GOOD, error, self.maximum, note=said)

    def summary(self, measure: str) -> str:
        return f"standard error of {measure} over {self.maximum:g}: too uncertain to act on"

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        error = measure_series(measure, segment, "stderr")
        return f"({error} > {self.maximum:g}){enough_queries(segment, context)}"

    def promql_description(self, measure: str, source: str) -> str:
        return f'the standard error of {measure} is {{{{ $value | printf "%.4f" }}}}; {source}'
