"""The `alerts:` config section: rules and delivery, read once into the frozen `Config`
(as the alerting stage's `AlertingConfig`, `monitor.alerting.settings`).

Read like every other section (`monitor.sections.ConfigSection`): null or an empty
environment variable takes the default, unknown keys are refused with the closest valid one
suggested, durations take a unit (`30s`, `5m`). Every problem raises `ConfigError` with the
exact key (`alerts.rules[2].drop.significance`) and the rule's name, so a bad rule stops the
service (and `rankmon check-config`) before it consumes anything.

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

The Alertmanager and webhook URLs may carry credentials (user info, a token in the path or
query): written inline, or read from an environment variable (`url_env`) or a file
(`url_file`), they are `SecretUrl`s that print masked. A bearer token (`token_env`,
`token_file`, never inline) is sent as `Authorization: Bearer`.

`instance` (default: the host name) labels every alert this instance sends: several
instances of one consumer group each judge their own partitions' share, and alerts with one
label set whose states disagree would flap in Alertmanager.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from monitor.alerting.rules import AlertRule, RuleContext, read_rule, render_rule
from monitor.alerting.settings import DEFAULT_MIN_QUERIES, AlertingConfig, DeliveryConfig, Endpoint
from monitor.comparisons.settings import ComparisonConfig
from monitor.config.kafka import read_path, read_secret
from monitor.errors import ConfigError
from monitor.sections import (
    ConfigSection,
    as_bool,
    as_int,
    as_positive_duration,
    as_positive_number,
    as_str,
)
from monitor.values import Duration, SecretUrl, parse_duration
from monitor.windows.summary import Segment

__all__ = ["default_instance", "parse_alerting_config", "read_alerts", "render_alerts"]

_DEFAULTS = {
    "timeout": parse_duration("5s"),
    "min_firing": parse_duration("1m"),
    "resend_interval": parse_duration("1m"),
    "backoff_initial": parse_duration("1s"),
    "backoff_max": parse_duration("1m"),
}


def read_alerts(
    section: ConfigSection,
    *,
    cutoffs: Sequence[int],
    gains: Sequence[str],
    segment_keys: Sequence[str],
    window: Duration,
    environ: Mapping[str, str],
    base: Path,
    comparisons: Sequence[ComparisonConfig] = (),
    external_url: str | None = None,
    hop: Duration | None = None,
) -> AlertingConfig:
    """Read and check the `alerts:` section against what the monitor computes."""
    runbook = section.get("runbook_url", as_str, None)
    named = {c.name: (c.candidate, c.measures) for c in comparisons}
    context = RuleContext(tuple(cutoffs), tuple(gains), tuple(segment_keys), runbook, named)
    rules = tuple(
        read_rule(rule, index, context) for index, rule in section.indexed_sections("rules")
    )
    _check_unique_names(rules)
    prometheus = section.section("prometheus")
    job = prometheus.get("job", as_str, "rankmon")
    prometheus.finish()
    instance = section.get("instance", as_str, None)
    min_queries = section.get("min_queries", as_int(1), DEFAULT_MIN_QUERIES)
    budget = section.get("false_pages_per_day", as_positive_number, None)
    delivery = _read_delivery(section, environ, base)
    section.finish()
    return AlertingConfig(
        rules=rules,
        delivery=delivery,
        window=window.text,
        window_ms=window.ms,
        prometheus_job=job,
        instance=instance or default_instance(),
        instance_set=instance is not None,
        runbook_url=runbook,
        min_queries=min_queries,
        false_pages_per_day=budget,
        hop_ms=(hop or window).ms,
        external_url=external_url,
        comparison_baselines={c.name: c.baseline for c in comparisons},
    )


def parse_alerting_config(
    raw: Mapping[str, Any],
    *,
    cutoffs: Sequence[int],
    gains: Sequence[str],
    segment_keys: Sequence[str],
    window: str,
    environ: Mapping[str, str] | None = None,
    base: Path | None = None,
    comparisons: Sequence[ComparisonConfig] = (),
) -> AlertingConfig:
    """`read_alerts` on a mapping of its own (tools and tests that alert without a config)."""
    if not isinstance(raw, Mapping):
        raise ConfigError("alerts", "must be a mapping")
    return read_alerts(
        ConfigSection(raw, "alerts", {}),
        cutoffs=cutoffs,
        gains=gains,
        segment_keys=segment_keys,
        window=parse_duration(window),
        environ={} if environ is None else environ,
        base=Path.cwd() if base is None else base,
        comparisons=comparisons,
    )


def default_instance() -> str:
    """The host name: distinct per replica (a Kubernetes pod's name, a container's id)."""
    return socket.gethostname() or "rankmon"


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


def _read_delivery(
    section: ConfigSection, environ: Mapping[str, str], base: Path
) -> DeliveryConfig:
    alertmanager = section.section("alertmanager")
    webhook = section.section("webhook")
    tuning = section.section("delivery")
    timeout = alertmanager.get("timeout", as_positive_duration, _DEFAULTS["timeout"])
    min_firing = alertmanager.get("min_firing", as_positive_duration, _DEFAULTS["min_firing"])
    config = DeliveryConfig(
        alertmanager=_endpoint(alertmanager, environ, base, keep_path=True),
        webhook=_endpoint(webhook, environ, base, keep_path=False),
        log=section.get("log", as_bool, True),
        resend_interval=tuning.get(
            "resend_interval", as_positive_duration, _DEFAULTS["resend_interval"]
        ),
        backoff_initial=tuning.get(
            "backoff_initial", as_positive_duration, _DEFAULTS["backoff_initial"]
        ),
        backoff_max=tuning.get("backoff_max", as_positive_duration, _DEFAULTS["backoff_max"]),
        max_alerts=10_000,
        timeout=timeout,
        min_firing=min_firing,
    )
    for part in (alertmanager, webhook, tuning):
        part.finish()
    return config


def _endpoint(
    section: ConfigSection, environ: Mapping[str, str], base: Path, *, keep_path: bool
) -> Endpoint | None:
    """A sink's URL (inline, `url_env` or `url_file`) and optional bearer token."""
    inline = section.get("url", as_str, None)
    variable = section.get("url_env", as_str, None)
    file = read_path(section, "url_file", base)
    token = read_secret(section, "token", environ, base)
    sources = (("url", inline), ("url_env", variable), ("url_file", file))
    given = [name for name, value in sources if value is not None]
    if len(given) > 1:
        raise section.error(given[1], f"set one of url, url_env and url_file, not {given}")
    if variable is not None:
        url = environ.get(variable, "")
        if not url:
            raise section.error("url_env", f"environment variable {variable} is not set")
        return Endpoint(SecretUrl(url, keep_path=keep_path, env=variable), token)
    if file is not None:
        try:
            url = file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise section.error("url_file", f"cannot read {file}: {error}") from error
        if not url:
            raise section.error("url_file", f"{file} is empty")
        return Endpoint(SecretUrl(url, keep_path=keep_path, file=file), token)
    if inline is None:
        if token is not None:
            raise section.error("token_env", "a token is set but no url")
        return None
    return Endpoint(SecretUrl(inline, keep_path=keep_path), token)


def render_alerts(alerts: AlertingConfig) -> dict[str, Any]:
    """The section as config data with every default filled in: URLs masked (their user
    info, query and, for the webhook, path) and secrets as where they come from."""
    delivery = alerts.delivery
    return {
        "runbook_url": alerts.runbook_url,
        "min_queries": alerts.min_queries,
        "false_pages_per_day": alerts.false_pages_per_day,
        "rules": [render_rule(rule) for rule in alerts.rules],
        "alertmanager": {
            **_render_endpoint(delivery.alertmanager),
            "timeout": delivery.timeout.text,
            "min_firing": delivery.min_firing.text,
        },
        "webhook": _render_endpoint(delivery.webhook),
        "log": delivery.log,
        "delivery": {
            "resend_interval": delivery.resend_interval.text,
            "backoff_initial": delivery.backoff_initial.text,
            "backoff_max": delivery.backoff_max.text,
        },
        "prometheus": {"job": alerts.prometheus_job},
        "instance": alerts.instance if alerts.instance_set else None,
    }


def _render_endpoint(endpoint: Endpoint | None) -> dict[str, Any]:
    out: dict[str, Any] = {"url": None, "url_env": None, "url_file": None}
    if endpoint is not None:
        url = endpoint.url
        if url.env is not None:
            out["url_env"] = url.env
        elif url.file is not None:
            out["url_file"] = str(url.file)
        else:
            out["url"] = str(url)  # masked
    token = None if endpoint is None else endpoint.token
    out["token_env"] = None if token is None else token.env
    out["token_file"] = None if token is None or token.file is None else str(token.file)
    return out
