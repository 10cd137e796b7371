"""What an alert says: its labels and the annotations an on-call engineer reads first."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from monitor.alerting.messages import AlertMessage, rfc3339
from monitor.alerting.rules import AlertRule
from monitor.alerting.settings import AlertingConfig
from monitor.errors import one_line

if TYPE_CHECKING:
    from monitor.alerting.active import ActiveAlert

__all__ = ["alert_labels", "alert_message", "condition_summary"]


def alert_labels(
    rule: AlertRule, segment: tuple[tuple[str, str], ...], window: str
) -> dict[str, str]:
    """`alertname`, `severity`, `measure`, `window` and the segment's labels."""
    labels = dict(segment)
    labels.update(alertname=rule.name, severity=rule.severity, measure=rule.measure, window=window)
    return labels


def _quoted(texts: Mapping[str, str], query: str) -> str:
    """` "text"` after a query id, one line, at most 60 characters ("" without a text)."""
    text = texts.get(query)
    return f' "{one_line(text, 60)}"' if text else ""


def _number(value: float | None) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.4f}"


def condition_summary(rule: AlertRule) -> str:
    """One line saying what the rule watches for."""
    return rule.condition.summary(rule.measure)


def alert_message(
    alert: ActiveAlert,
    config: AlertingConfig,
    resolved_at_ms: int | None,
    texts: Mapping[str, str] | None = None,
) -> AlertMessage:
    """The alert's current state as it goes to the sinks; `texts`: the queries' texts the
    worst queries show beside their ids."""
    rule, verdict = alert.rule, alert.verdict
    annotations = {"summary": condition_summary(rule), "measure": rule.measure}
    if verdict is not None:
        annotations.update(
            value=_number(verdict.value),
            baseline=_number(verdict.baseline),
            p_value="" if verdict.p_value is None else f"{verdict.p_value:.3g}",
            worst_queries=", ".join(
                f"{q}{_quoted(texts or {}, q)} ({d:+.3f})" for q, d in verdict.worst
            ),
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
    if window is None:
        return f"{base}/"
    baselines = config.comparison_baselines
    return base + rule.condition.explain_path(alert.segment, rule.measure, window[0], baselines)
