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

Every key but the rules is declared in `monitor.alerting.settings` (default, reader, doc),
where the secrets' rules are said too.

`instance` (default: the host name) labels every alert this instance sends: several
instances of one consumer group each judge their own partitions' share, and alerts with one
label set whose states disagree would flap in Alertmanager.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from monitor.alerting.rules import AlertRule, RuleContext, read_rule, render_rule
from monitor.alerting.settings import AlertingConfig
from monitor.comparisons.settings import ComparisonConfig
from monitor.declare import read_setting, read_settings, write_settings
from monitor.errors import ConfigError
from monitor.sections import ConfigSection
from monitor.values import Duration, parse_duration
from monitor.windows.summary import Segment

__all__ = ["parse_alerting_config", "read_alerts", "render_alerts"]


def read_alerts(
    section: ConfigSection,
    *,
    cutoffs: Sequence[int],
    gains: Sequence[str],
    segment_keys: Sequence[str],
    window: Duration,
    environ: Mapping[str, str],
    comparisons: Sequence[ComparisonConfig] = (),
    external_url: str | None = None,
    hop: Duration | None = None,
    judging: bool = False,
    measures: Sequence[str] = (),
) -> AlertingConfig:
    """Read and check the `alerts:` section against what the monitor computes: its rules
    here, every other key as `AlertingConfig` declares it. `judging`: whether the judging loop
    runs (`RuleContext.judging`); `measures`: the streamed ones `metrics.measures` adds."""
    runbook = read_setting(AlertingConfig, "runbook_url", section)
    named = {c.name: (c.candidate, c.measures) for c in comparisons}
    context = RuleContext(
        tuple(cutoffs),
        tuple(gains),
        tuple(segment_keys),
        runbook,
        named,
        judging,
        windows_per_day=86_400_000 / (hop or window).ms,
        measures=tuple(measures),
    )
    rules = tuple(
        read_rule(rule, index, context) for index, rule in section.indexed_sections("rules")
    )
    _check_unique_names(rules)
    return read_settings(
        AlertingConfig,
        section,
        environ=environ,
        runbook_url=runbook,
        rules=rules,
        window=window.text,
        window_ms=window.ms,
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
    judging: bool = False,
) -> AlertingConfig:
    """`read_alerts` on a mapping of its own (tools and tests that alert without a config)."""
    if not isinstance(raw, Mapping):
        raise ConfigError("alerts", "must be a mapping")
    return read_alerts(
        ConfigSection(raw, "alerts", {}, base=Path.cwd() if base is None else base),
        cutoffs=cutoffs,
        gains=gains,
        segment_keys=segment_keys,
        window=parse_duration(window),
        environ={} if environ is None else environ,
        comparisons=comparisons,
        judging=judging,
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


def render_alerts(alerts: AlertingConfig) -> dict[str, Any]:
    """The section as config data with every default filled in: URLs masked (their user
    info, query and, for the webhook, path) and secrets as where they come from."""
    out = write_settings(alerts)
    out["rules"] = [render_rule(rule) for rule in alerts.rules]
    return out
