"""`comparison`: on a configured comparison (`comparisons:`), its always-valid interval says
the candidate is worse (or better) than the baseline by more than a margin.

Judged on comparison records, not windows; the alert's segment labels are the candidate's
("v2 is worse" pages about v2).

```yaml
- name: v2-worse
  comparison: {name: v2-vs-v1, direction: worse, margin: 0.01, scope: population}
```
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import quote

from monitor.alerting.conditions.base import (
    Condition,
    Role,
    RuleContext,
    Verdict,
    WindowTrack,
    anything,
)
from monitor.alerting.state import Evidence
from monitor.comparisons.record import SCOPES, ComparisonRecord, MeasureComparison
from monitor.explain.alert_table import explain_path
from monitor.sections import ConfigSection, as_choice, as_number, as_str, describe
from monitor.windows.summary import Segment, WindowSummary, segment_label

__all__ = ["Comparison"]


@dataclass(frozen=True)
class Comparison(Condition):
    """On a configured comparison (`comparisons:`), with its always-valid interval at the
    family's level: `worse` is bad when the whole interval lies below -margin (the candidate
    is worse than the baseline by more than `margin`), `better` when it lies above +margin.
    `scope`: `population` (the difference in the population of queries the set was drawn
    from) or `set` (on the queries compared)."""

    key = "comparison"
    budgeted = True
    role = Role.COMPARISON
    reads_segment = False  # the comparison's candidate

    comparison: str
    direction: str  # "worse" | "better"
    margin: float
    scope: str = "population"

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        name = section.get("name", as_str)
        if name not in context.comparisons:
            known = sorted(context.comparisons)
            raise section.error("name", f"no comparison {describe(name)} is configured {known}")
        direction = section.get("direction", as_choice("worse", "better"), "worse")
        margin = section.get("margin", as_number(0.0), 0.0)
        scope = section.get("scope", as_choice(*SCOPES), "population")
        section.finish()
        return cls(comparison=name, direction=direction, margin=margin, scope=scope)

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        """One of the comparison's measures (its first by default)."""
        measures = context.comparisons[self.comparison][1]
        measure = rule.get("measure", as_str, None)
        gain = rule.get("gain", as_str, None)
        if measure is None:
            if gain is not None:
                raise rule.error("gain", "needs a measure")
            return measures[0]
        name = measure.partition("@")[0]
        default_gain = (context.gains or ("linear",))[0]
        key = measure if name != "ndcg" else f"{measure}:{gain or default_gain}"
        if key not in measures:
            raise rule.error(
                "measure", f"comparison {self.comparison!r} compares {list(measures)}, not {key}"
            )
        return key

    def segment(self, rule: ConfigSection, context: RuleContext) -> Segment | None:
        # the alert's segment labels are the candidate's: "v2 is worse" pages about v2
        if rule.has("segment"):
            raise rule.error("segment", "comparison rules take the comparison's candidate")
        rule.get("segment", anything, None)
        return context.comparisons[self.comparison][0]

    def render(self) -> dict[str, Any]:
        return {
            "name": self.comparison,
            "direction": self.direction,
            "margin": self.margin,
            "scope": self.scope,
        }

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        raise NotImplementedError("comparison rules are judged on comparison records")

    def on_comparison(
        self, measure: str, record: ComparisonRecord, *, level: float | None = None
    ) -> Verdict | None:
        if record.name != self.comparison:
            return None
        found = next((m for m in record.measures if m.measure == measure), None)
        return None if found is None else self.judge(found, level)

    def judge(self, measure: MeasureComparison, level: float | None = None) -> Verdict:
        """Bad when the rule's interval, at the family's level (or the rule's share of the
        false-page budget, where stricter), lies wholly past the margin in the rule's
        direction; unknown until the interval is finite."""
        lower, upper = measure.decision(self.scope, level)
        if not (math.isfinite(lower) and math.isfinite(upper)):
            note = measure.note or "no verdict yet (too few windows or queries)"
            return Verdict(Evidence.UNKNOWN, measure.result.delta, note=note)
        if self.direction == "worse":
            bad, bound = upper < -self.margin, -self.margin
        else:
            bad, bound = lower > self.margin, self.margin
        estimate = (lower + upper) / 2.0
        about = (
            "in the population of queries"
            if self.scope == "population"
            else "on the queries compared"
        )
        family = (
            f"level {measure.alpha:g}/{measure.family} (Bonferroni over {measure.family} "
            "comparison measures)"
            if measure.family > 1
            else f"level {measure.alpha:g}"
        )
        at = measure.decision_level(level)
        if at < measure.decision_level():
            family = f"level {at:.2g} (its share of the false-page budget)"
        note = (
            f"{measure.measure}: candidate - baseline {estimate:+.4f} {about} "
            f"({measure.design} design), always-valid interval [{lower:+.4f}, {upper:+.4f}] "
            f"at {family}; {measure.compared_units} queries can show differences of "
            f"{measure.family_min_detectable():.3f} or more; this window "
            f"{measure.result.delta:+.4f} on {measure.result.queries} common queries"
        )
        return Verdict(
            Evidence.BAD if bad else Evidence.GOOD,
            estimate,
            bound,
            measure.sequence.p_value if measure.design == "live" else None,
            note=note,
        )

    def summary(self, measure: str) -> str:
        side = "worse" if self.direction == "worse" else "better"
        return (
            f"{self.comparison}: the candidate is {side} on {measure} by more than "
            f"{self.margin:g} (always-valid {self.direction} test)"
        )

    def explain_path(
        self, segment: Segment, measure: str, start_ms: int, baselines: Mapping[str, Segment]
    ) -> str:
        """The candidate against the comparison's baseline segment in that window."""
        path = explain_path(segment, measure, start_ms)
        against = baselines.get(self.comparison)
        if against is None:
            return path
        other = quote(segment_label(against))
        return f"{path.replace('&against=baseline', '')}&segment_against={other}"

    def left_out(self, *, ungated: bool) -> str:
        return "comparison, its always-valid sequence lives in rankmon"
