"""Alert rules as data: one measure, one condition, and how many windows fire and resolve.

`read_rule` reads one rule of `alerts.rules` (the condition it names reads its own entry and
says which measure and segment the rule is on: `monitor.alerting.conditions`); `render_rule`
writes it back with every default filled in. Read like every other section
(`monitor.sections.ConfigSection`): a null or missing key takes its default, an unknown key is
refused with the closest valid one suggested, durations take a unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.alerting.conditions import (
    CONDITIONS,
    Condition,
    Role,
    RuleContext,
    condition_kind,
)
from monitor.alerting.conditions.base import anything
from monitor.sections import ConfigSection, as_choice, as_int, as_str
from monitor.windows.summary import Segment

__all__ = ["RULE_KEYS", "SEVERITIES", "AlertRule", "RuleContext", "read_rule", "render_rule"]

NOTIFY_ONLY = frozenset({"info", "ticket"})  # severities that notify, not page
RULE_KEYS: tuple[str, ...] = ("name", "measure", "gain", "segment", "severity", "for")
RULE_KEYS += ("keep_firing_for", "runbook_url")
SEVERITIES = ("critical", "warning", "info", "page", "ticket")


@dataclass(frozen=True)
class AlertRule:
    """One configured rule; `measure` is a catalog key such as `ndcg@10:linear`."""

    name: str
    index: int
    severity: str
    measure: str
    condition: Condition
    segment: Segment | None
    for_windows: int
    keep_firing_for: int
    runbook_url: str | None

    @property
    def restore_windows(self) -> int:
        """How many of a segment's newest windows a restart replays into this rule: enough
        to rebuild its baseline or detector and its pending and firing streaks."""
        return self.condition.restore_windows(self.for_windows + self.keep_firing_for)

    @property
    def pages(self) -> bool:
        """Whether its firing pages someone (a severity other than info or ticket)."""
        return self.severity not in NOTIFY_ONLY

    @property
    def in_budget(self) -> bool:
        """Whether `alerts.false_pages_per_day` sets its level: a paging rule whose
        condition can be budgeted (`Condition.in_budget`)."""
        return self.pages and self.condition.in_budget()

    @property
    def is_quality(self) -> bool:
        """Below, drop and trend rules: they are held on windows that are not trustworthy."""
        return self.condition.role is Role.QUALITY


def read_rule(section: ConfigSection, index: int, context: RuleContext) -> AlertRule:
    """One rule; its problems read `config key 'alerts.rules[i].key': rule 'name': ...`."""
    name = section.get("name", as_str, None)
    if name is None:
        raise section.error("name", "every rule needs a name (it becomes the alertname)")
    rule = section.labelled(f"rule '{name}': ")
    keys = [kind.key for kind in CONDITIONS]
    named = [key for key in keys if rule.present(key)]
    if len(named) != 1:
        unknown = [n for n in rule.names() if n not in RULE_KEYS and n not in keys]
        if unknown:  # a misspelt condition: say which key, with a suggestion
            for key in (*RULE_KEYS, *keys):
                rule.get(key, anything, None)
            rule.finish()
        raise rule.error("", f"needs exactly one condition of {sorted(keys)}, got {named}")
    kind = condition_kind(named[0])
    assert kind is not None
    condition = kind.parse(rule, context)
    severity = rule.get("severity", as_choice(*SEVERITIES), kind.default_severity)
    if not kind.takes_streaks and (rule.has("for") or rule.has("keep_firing_for")):
        raise rule.error(
            "for", f"{kind.key} rules take no for/keep_firing_for: its own settings are the delay"
        )
    for_windows = rule.get("for", as_int(1), 1)
    keep_firing_for = rule.get("keep_firing_for", as_int(0), 0)
    measure = condition.measure(rule, context)
    segment = condition.segment(rule, context)
    runbook = rule.get("runbook_url", as_str, context.runbook_url)
    rule.finish()
    return AlertRule(
        name=name,
        index=index,
        severity=severity,
        measure=measure,
        condition=condition,
        segment=segment,
        for_windows=for_windows,
        keep_firing_for=keep_firing_for,
        runbook_url=runbook,
    )


def render_rule(rule: AlertRule) -> dict[str, Any]:
    """The rule as config data, every default filled in (`read_rule` reads it back)."""
    condition = rule.condition
    out: dict[str, Any] = {"name": rule.name}
    if condition.has_measure:
        measure, _, gain = rule.measure.partition(":")
        out["measure"] = measure
        if gain:
            out["gain"] = gain
    if rule.segment is not None and condition.reads_segment:
        out["segment"] = dict(rule.segment)
    out["severity"] = rule.severity
    out[condition.key] = condition.render()
    if condition.takes_streaks:
        out["for"] = rule.for_windows
        out["keep_firing_for"] = rule.keep_firing_for
    out["runbook_url"] = rule.runbook_url
    return out
