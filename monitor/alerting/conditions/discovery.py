"""`discovery`: a drop of nDCG@k that comes from documents nobody judged yet.

nDCG@k gives an unjudged document gain 0, so a ranker that surfaces good new documents reads
as worse. A window is a discovery when a `drop` with the same settings would find it bad on
the measure, but not on its condensed list (`ndcg_condensed@k`: the judged documents alone,
docs/metrics.md "Bounds"): the judged documents rank as well as before, the drop comes from
the unjudged ones entering the top k. Its note says how far the upper bound reaches and how
many unjudged documents are in the top k of which queries: what to send for judging. A
lower-severity notification (severity `info` unless the rule says otherwise), never a page.
A `drop` rule with `unjudged: hold` holds such a window and pages only a drop the condensed
list shows too, a regression whatever the unjudged documents are; with `unjudged: page` (its
default) both fire, the page and this note on what to judge.

```yaml
- name: ndcg10-discovery
  measure: ndcg@10
  discovery: {relative: 0.05, baseline_windows: 12, significance: 0.01, min_queries: 30}
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from monitor.alerting.conditions.base import RuleContext, Verdict
from monitor.alerting.conditions.drop import Drop, discovery_words, judged_part
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection
from monitor.windows.summary import WindowSummary

__all__ = ["Discovery"]


@dataclass(frozen=True)
class Discovery(Drop):
    """Bad when a drop of nDCG@k is not shown by its condensed list (judged documents alone)."""

    key = "discovery"
    budgeted = False  # a notification, not a page: its own significance
    default_severity: ClassVar[str] = "info"
    draws_floor: ClassVar[bool] = False  # its drop rule's floor is drawn already

    @classmethod
    def own_settings(cls, section: ConfigSection, context: RuleContext) -> dict[str, Any]:
        return {}

    def render_own(self) -> dict[str, Any]:
        return {}

    def hold_limit(self) -> int | None:
        return None  # a notification of what its drop rule holds

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        measure = super().measure(rule, context)
        if not measure.startswith("ndcg@"):
            raise rule.error(
                "measure", "discovery rules watch an ndcg@k: its upper bound tells a discovery"
            )
        return measure

    def judge_unjudged(
        self, measure: str, summary: WindowSummary, verdict: Verdict, floor: float
    ) -> Verdict:
        if verdict.evidence is not Evidence.BAD:
            return verdict
        condensed = judged_part(summary, measure)
        if math.isnan(condensed):
            note = "no condensed list in this window"
            return replace(verdict, evidence=Evidence.UNKNOWN, note=note)
        if condensed < floor:
            note = (
                f"a regression, not a discovery: the judged documents alone (condensed list "
                f"{condensed:.4f}) fell under {floor:.4f} too (the drop rule pages it)"
            )
            return replace(verdict, evidence=Evidence.GOOD, note=note)
        return replace(verdict, note=discovery_words(summary, measure, condensed, floor))

    def summary(self, measure: str) -> str:
        return (
            f"{self.what(measure)}, but its judged documents alone did not: documents nobody "
            "judged yet entered the top k (a discovery, not a regression)"
        )

    def left_out(self, *, ungated: bool) -> str | None:
        return "discovery, gated by a paired test on per-query values Prometheus lacks"
