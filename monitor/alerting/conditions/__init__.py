"""The alert conditions: one class per kind, one module per class, and this table of them.

`CONDITIONS` is the one list every other place iterates: the rule reader takes the condition
whose `key` a rule names, and the engine, the annotations, the rendered Prometheus rules, the
dashboards and the explain page ask the rule's condition (`base.Condition`). Adding a kind is
a module here and its row below (docs/ARCHITECTURE.md, "Add an alert condition").
"""

from __future__ import annotations

from typing import Final

from monitor.alerting.conditions.base import (
    Condition,
    Role,
    RuleContext,
    RuleLike,
    Verdict,
    WindowTrack,
    evaluate_window,
    measure_value,
    query_values,
)
from monitor.alerting.conditions.below import Below
from monitor.alerting.conditions.comparison import Comparison
from monitor.alerting.conditions.coverage import Coverage
from monitor.alerting.conditions.discovery import Discovery
from monitor.alerting.conditions.drop import MIN_BASELINE_WINDOWS, Drop
from monitor.alerting.conditions.judge import Judge
from monitor.alerting.conditions.judged import Judged
from monitor.alerting.conditions.replay_errors import ReplayErrors
from monitor.alerting.conditions.stale import Stale
from monitor.alerting.conditions.stderr import Stderr
from monitor.alerting.conditions.trend import Trend

__all__ = [
    "CONDITIONS",
    "MIN_BASELINE_WINDOWS",
    "Below",
    "Comparison",
    "Condition",
    "Coverage",
    "Discovery",
    "Drop",
    "Judge",
    "Judged",
    "ReplayErrors",
    "Role",
    "RuleContext",
    "RuleLike",
    "Stale",
    "Stderr",
    "Trend",
    "Verdict",
    "WindowTrack",
    "condition_kind",
    "evaluate_window",
    "measure_value",
    "query_values",
]

CONDITIONS: Final[tuple[type[Condition], ...]] = (
    Below,
    Drop,
    Discovery,
    Trend,
    Stderr,
    Coverage,
    Judged,
    ReplayErrors,
    Stale,
    Comparison,
    Judge,
)

_BY_KEY: Final = {kind.key: kind for kind in CONDITIONS}


def condition_kind(key: str) -> type[Condition] | None:
    """The condition class a rule's `key` names (None: no such condition)."""
    return _BY_KEY.get(key)
