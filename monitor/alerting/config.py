"""The `alerts:` config section: rules and delivery, parsed and checked once at start.

Every problem raises `ConfigError` with the exact key (`alerts.rules[2].drop.significance`)
and the rule's name, so a bad rule stops the service before it consumes anything.

A rule names one measure and exactly one condition:

```yaml
- name: ndcg10-drop        # the alert's `alertname`
  measure: ndcg@10         # ndcg@k, precision@k, recall@k, mrr, map (coverage/judged/stale: none)
  gain: linear             # nDCG only; default: the first of metrics.gains
  segment: {model: v42}    # optional filter; without it the rule applies per segment
  severity: warning
  drop: {relative: 0.05, baseline_windows: 12, significance: 0.01, min_queries: 30}
  for: 1                   # consecutive bad windows before firing
  keep_firing_for: 0       # good windows it stays firing through before resolving
```

`instance` (default: the host name) labels every alert this instance sends: several
instances of one consumer group each judge their own partitions' share, and alerts with one
label set whose states disagree would flap in Alertmanager.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monitor.alerting.durations import parse_duration
from monitor.alerting.rule_parsing import RuleContext, parse_rule
from monitor.alerting.rules import AlertRule
from monitor.config import Config
from monitor.errors import ConfigError
from monitor.summary import Segment

__all__ = [
    "AlertingConfig",
    "DeliveryConfig",
    "alerting_config_from",
    "default_instance",
    "parse_alerting_config",
]

TOP_KEYS = {
    "rules",
    "alertmanager",
    "webhook",
    "log",
    "runbook_url",
    "delivery",
    "prometheus",
    "instance",
}


@dataclass(frozen=True)
class DeliveryConfig:
    """Where alerts go and how hard rankmon tries."""

    alertmanager_url: str | None
    webhook_url: str | None
    log: bool
    resend_interval_ms: int
    backoff_initial_ms: int
    backoff_max_ms: int
    max_alerts: int
    timeout_s: float
    min_firing_ms: int = 60_000  # how long a firing stands at Alertmanager before its resolution


@dataclass(frozen=True)
class AlertingConfig:
    """The whole `alerts:` section plus what rendering needs from the rest of the config."""

    rules: tuple[AlertRule, ...]
    delivery: DeliveryConfig
    window: str
    window_ms: int
    prometheus_job: str
    instance: str  # the `instance` label of this instance's alerts


def parse_alerting_config(
    raw: Mapping[str, Any],
    *,
    cutoffs: Sequence[int],
    gains: Sequence[str],
    segment_keys: Sequence[str],
    window: str,
) -> AlertingConfig:
    """Parse and check the `alerts:` mapping against what the monitor computes."""
    if not isinstance(raw, Mapping):
        raise ConfigError("alerts", "must be a mapping")
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"alerts.{unknown[0]}", f"unknown key (allowed: {sorted(TOP_KEYS)})")
    runbook = _optional_str(raw, "runbook_url", "alerts.runbook_url")
    context = RuleContext(tuple(cutoffs), tuple(gains), tuple(segment_keys), runbook)
    rules_raw = raw.get("rules", [])
    if not isinstance(rules_raw, Sequence) or isinstance(rules_raw, str):
        raise ConfigError("alerts.rules", "must be a list of rules")
    rules = tuple(parse_rule(rule, index, context) for index, rule in enumerate(rules_raw))
    _check_unique_names(rules)
    prometheus = _section(raw, "prometheus", {"job"})
    job = prometheus.get("job", "rankmon")
    if not isinstance(job, str) or not job:
        raise ConfigError("alerts.prometheus.job", "must be a non-empty string")
    instance = _optional_str(raw, "instance", "alerts.instance")
    return AlertingConfig(
        rules=rules,
        delivery=_parse_delivery(raw),
        window=window,
        window_ms=parse_duration(window, "windows.size"),
        prometheus_job=job,
        instance=instance or default_instance(),
    )


def default_instance() -> str:
    """The host name: distinct per replica (a Kubernetes pod's name, a container's id)."""
    return socket.gethostname() or "rankmon"


def alerting_config_from(config: Config) -> AlertingConfig:
    """The parsed `alerts:` section of a loaded `Config`, checked against what it computes."""
    return parse_alerting_config(
        config.alerts,
        cutoffs=config.metrics.cutoffs,
        gains=config.metrics.gain_names,
        segment_keys=config.segments.keys,
        window=config.windows.size.text,
    )


def _check_unique_names(rules: Sequence[AlertRule]) -> None:
    # Two rules with one name and one segment would be one Alertmanager alert flapping
    # between two states; a name may repeat only with different conditions per severity.
    seen: set[tuple[str, str, Segment | None]] = set()
    for rule in rules:
        identity = (rule.name, rule.severity, rule.segment)
        if identity in seen:
            raise ConfigError(
                f"alerts.rules[{rule.index}].name",
                f"rule '{rule.name}': another rule has the same name, severity and segment",
            )
        seen.add(identity)


def _section(raw: Mapping[str, Any], key: str, allowed: set[str]) -> Mapping[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"alerts.{key}", "must be a mapping")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ConfigError(f"alerts.{key}.{unknown[0]}", f"unknown key (allowed: {sorted(allowed)})")
    return value


def _optional_str(raw: Mapping[str, Any], key: str, name: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(name, f"must be a non-empty string or null, got {value!r}")
    return value


def _parse_delivery(raw: Mapping[str, Any]) -> DeliveryConfig:
    alertmanager = _section(raw, "alertmanager", {"url", "timeout", "min_firing"})
    webhook = _section(raw, "webhook", {"url"})
    tuning = _section(raw, "delivery", {"resend_interval", "backoff_initial", "backoff_max"})
    log = raw.get("log", True)
    if not isinstance(log, bool):
        raise ConfigError("alerts.log", f"must be true or false, got {log!r}")
    timeout = alertmanager.get("timeout", "5s")
    return DeliveryConfig(
        alertmanager_url=_optional_str(alertmanager, "url", "alerts.alertmanager.url"),
        webhook_url=_optional_str(webhook, "url", "alerts.webhook.url"),
        log=log,
        resend_interval_ms=_duration(tuning, "resend_interval", "1m"),
        backoff_initial_ms=_duration(tuning, "backoff_initial", "1s"),
        backoff_max_ms=_duration(tuning, "backoff_max", "1m"),
        max_alerts=10_000,
        timeout_s=parse_duration(timeout, "alerts.alertmanager.timeout") / 1000,
        min_firing_ms=parse_duration(
            alertmanager.get("min_firing", "1m"), "alerts.alertmanager.min_firing"
        ),
    )


def _duration(section: Mapping[str, Any], key: str, default: str) -> int:
    return parse_duration(section.get(key, default), f"alerts.delivery.{key}")
