"""What an alert says: its labels and the annotations an on-call engineer reads first."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from urllib.parse import quote

from monitor.alerting.messages import AlertMessage, rfc3339
from monitor.alerting.rules import (
    AlertRule,
    Below,
    Comparison,
    Coverage,
    Drop,
    Judged,
    Stale,
    Trend,
)
from monitor.alerting.settings import AlertingConfig
from monitor.explain.page import explain_path
from monitor.values import format_duration
from monitor.windows.summary import segment_label

if TYPE_CHECKING:
    from monitor.alerting.active import ActiveAlert

__all__ = ["alert_labels", "alert_message", "condition_summary", "drop_summary"]


def alert_labels(
    rule: AlertRule, segment: tuple[tuple[str, str], ...], window: str
) -> dict[str, str]:
    """`alertname`, `severity`, `measure`, `window` and the segment's labels."""
    labels = dict(segment)
    labels.update(alertname=rule.name, severity=rule.severity, measure=rule.measure, window=window)
    return labels


def _number(value: float | None) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.4f}"


def condition_summary(rule: AlertRule) -> str:
    """One line saying what the rule watches for."""
    condition = rule.condition
    if isinstance(condition, Below):
        return f"{rule.measure} under the floor {condition.threshold:g}"
    if isinstance(condition, Drop):
        return (
            f"{drop_summary(rule, condition)}, paired sign-flip test p < {condition.significance:g}"
        )
    if isinstance(condition, Trend):
        return f"{rule.measure} is drifting down (Page-Hinkley)"
    if isinstance(condition, Coverage):
        return f"evaluation-set coverage under {condition.minimum:.0%}"
    if isinstance(condition, Judged):
        return f"judged share of the top {condition.k} under {condition.minimum:.0%}"
    if isinstance(condition, Stale):
        return f"no finalized window for more than {format_duration(condition.after_ms)}"
    if isinstance(condition, Comparison):
        side = "worse" if condition.direction == "worse" else "better"
        return (
            f"{condition.comparison}: the candidate is {side} on {rule.measure} by more than "
            f"{condition.margin:g} (always-valid {condition.direction} test)"
        )
    raise TypeError(f"unknown condition {condition!r}")


def drop_summary(rule: AlertRule, condition: Drop) -> str:
    """What a drop rule watches for, before its significance gate."""
    size = (
        f"{condition.relative:.0%}"
        if condition.relative is not None
        else f"{condition.absolute:g} absolute"
    )
    source = "pinned" if condition.pinned is not None else "trailing median"
    return f"{rule.measure} dropped by more than {size} from its baseline ({source})"


def alert_message(
    alert: ActiveAlert, config: AlertingConfig, resolved_at_ms: int | None
) -> AlertMessage:
    """The alert's current state as it goes to the sinks."""
    rule, verdict = alert.rule, alert.verdict
    annotations = {"summary": condition_summary(rule), "measure": rule.measure}
    if verdict is not None:
        annotations.update(
            value=_number(verdict.value),
            baseline=_number(verdict.baseline),
            p_value="" if verdict.p_value is None else f"{verdict.p_value:.3g}",
            worst_queries=", ".join(f"{q} ({d:+.3f})" for q, d in verdict.worst),
            description=verdict.note,
        )
    if alert.window is not None:
        annotations["window"] = f"{rfc3339(alert.window[0])}/{rfc3339(alert.window[1])}"
    if rule.runbook_url:
        annotations["runbook_url"] = rule.runbook_url
    # `instance` tells this instance's alerts from its peers' (they judge other partitions);
    # not in `alert_labels`, which the rendered, global Prometheus rules share.
    labels = alert_labels(rule, alert.segment, config.window)
    labels["instance"] = config.instance
    return AlertMessage(
        labels=labels,
        annotations={k: v for k, v in annotations.items() if v},
        starts_at_ms=alert.fired_at_ms or 0,
        ends_at_ms=resolved_at_ms,
        generator_url=generator_url(alert, config),
    )


def generator_url(alert: ActiveAlert, config: AlertingConfig) -> str | None:
    """The page explaining the alert's window against its baseline (a comparison's: the
    candidate against the baseline segment in that window); the page's top for rules on
    no measure of a window. None without `export.external_url`."""
    base = config.external_url
    if base is None:
        return None
    rule, window = alert.rule, alert.window
    if window is None or isinstance(rule.condition, Stale | Coverage):
        return f"{base}/"
    if isinstance(rule.condition, Comparison):
        against = config.comparison_baselines.get(rule.condition.comparison)
        if against is not None:
            path = explain_path(alert.segment, rule.measure, window[0])
            other = quote(segment_label(against))
            return f"{base}{path.replace('&against=baseline', '')}&segment_against={other}"
    return base + explain_path(alert.segment, rule.measure, window[0])
