"""Prometheus recording and alerting rules expressing the configured conditions.

For teams that alert in Prometheus, and for multi-instance deployments (each query lives on
one instance, so only Prometheus sees the global numbers):

- recording rules `job:rankmon_<measure>:mean` combine the instances' sums of query means and
  query counts into the exact global mean of per-query means, per segment and window, and
  `job:rankmon_<measure>:stderr` (with the sums of squares) into its exact standard error;
  `job:rankmon_window_queries:sum`, `job:rankmon_window_failed_queries:sum` and
  `job:rankmon_coverage_ratio:sum` add up counts and coverage (instances see disjoint
  queries, so their coverage ratios add);
- `below`: the global mean under the floor; `for` consecutive bad windows become a duration
  of (for - 1) windows, `keep_firing_for` one of keep_firing_for windows;
- `drop`, only when asked for (`ungated_drop`): the global mean under (1 - relative) times
  (or `absolute` below) the median of the recorded mean over the baseline span
  (baseline_windows windows, ending one window back), with at least `min_queries` queries.
  The paired test needs per-query values Prometheus does not have, so this is an ungated
  approximation that pages on noisy swings rankmon's own, significance-gated alert rejects:
  by default drop rules are left to rankmon (for deployments where rankmon delivers its
  alerts itself), and the file's header says so;
- `stale`: no window end timestamp changed over `after` (processing-time silence, like the
  engine's);
- `below` and `judged` hold on windows with fewer than `alerts.min_queries` queries (unless
  the window saw the whole, smaller evaluation set), as rankmon's engine does;
- `coverage` and `judged` as floors on the combined series, `replay_errors` as a ceiling on
  the failed share of the queries asked; `trend` is not expressible and
  is left to rankmon's engine;
- `RankmonDown` (`up == 0`) and `RankmonAbsent` (`absent(up)`) for the scrape job.

The file starts with a comment naming every rule left to rankmon's engine, and why.
"""

from __future__ import annotations

from typing import Any

import yaml

from monitor.alerting.annotations import alert_labels
from monitor.alerting.promql import IGNORING_MEASURE, PromqlContext
from monitor.alerting.rules import AlertRule
from monitor.alerting.settings import AlertingConfig
from monitor.export.series import measure_series, window_series
from monitor.scoring.catalog import EXPORTED_KINDS, KINDS
from monitor.values import format_duration

__all__ = ["render_prometheus_rules", "render_rule_groups"]

MEASURE_KINDS = tuple(kind.name for kind in EXPORTED_KINDS)
_BY_INSTANCE = "without(instance, pod)"


def render_prometheus_rules(config: AlertingConfig, *, ungated_drop: bool = False) -> str:
    """The rules file (YAML) for `rankmon rules render`, headed by what it leaves out."""
    groups = render_rule_groups(config, ungated_drop=ungated_drop)
    return _header(config, ungated_drop) + yaml.safe_dump(groups, sort_keys=False, width=1000)


def render_rule_groups(config: AlertingConfig, *, ungated_drop: bool = False) -> dict[str, Any]:
    """The rules file as data: one recording group, one alerting group. `drop` rules are
    rendered (without their paired test) only with `ungated_drop`."""
    job = f'job="{config.prometheus_job}"'
    rendered = [rule for rule in config.rules if _left_out(rule, ungated_drop) is None]
    alerts = [_alert(rule, config) for rule in rendered]
    return {
        "groups": [
            {"name": "rankmon-recording", "rules": _recording_rules(job)},
            {"name": "rankmon-alerts", "rules": [*alerts, *_process_alerts(job)]},
        ]
    }


def _left_out(rule: AlertRule, ungated_drop: bool) -> str | None:
    """Why the rule is left to rankmon's engine, or None when it is rendered."""
    return rule.condition.left_out(ungated=ungated_drop)


def _header(config: AlertingConfig, ungated_drop: bool) -> str:
    lines = ["# Rendered by `rankmon rules render` from the config's alerts.rules."]
    left = [(rule, _left_out(rule, ungated_drop)) for rule in config.rules]
    left_out = [f"#   {rule.name} (alerts.rules[{rule.index}]): {why}" for rule, why in left if why]
    if left_out:
        lines += ["# Left to rankmon's own alerts, not rendered:", *left_out]
    if any(why and rule.condition.left_out(ungated=True) is None for rule, why in left):
        lines.append("# (--ungated-drop renders drop rules without the test: docs/alerting.md)")
    return "\n".join(lines) + "\n"


def _recording_rules(job: str) -> list[dict[str, str]]:
    queries = f"sum {_BY_INSTANCE} ({window_series('queries')}{{{job}}})"
    rules = [
        {
            "record": f"job:rankmon_{KINDS[kind].metric}:mean",
            "expr": f"sum {_BY_INSTANCE} ({measure_series(kind, 'sum')}{{{job}}})"
            f" / {IGNORING_MEASURE} group_left {queries}",
        }
        for kind in MEASURE_KINDS
    ]
    rules += [_stderr_rule(kind, queries, job) for kind in MEASURE_KINDS]
    rules.append({"record": "job:rankmon_window_queries:sum", "expr": queries})
    rules.append(
        {
            "record": "job:rankmon_coverage_ratio:sum",
            "expr": f"sum {_BY_INSTANCE} ({window_series('coverage')}{{{job}}})",
        }
    )
    rules.append(
        {
            "record": "job:rankmon_window_failed_queries:sum",
            "expr": f"sum {_BY_INSTANCE} ({window_series('failed')}{{{job}}})",
        }
    )
    return rules


def _stderr_rule(kind: str, queries: str, job: str) -> dict[str, str]:
    """The exact merged standard error: sqrt(((sum sq) - (sum s)^2 / n) / (n - 1) / n)."""
    sums = f"sum {_BY_INSTANCE} ({measure_series(kind, 'sum')}{{{job}}})"
    squares = f"sum {_BY_INSTANCE} ({measure_series(kind, 'squares')}{{{job}}})"
    n = f"{IGNORING_MEASURE} group_left {queries}"
    # `group_left (` would read the parenthesis as group_left's label list: `group_left ()`
    less_one = f"{IGNORING_MEASURE} group_left () ({queries} - 1)"
    variance = f"({squares} - {sums} ^ 2 / {n}) / {less_one}"
    return {
        "record": f"job:rankmon_{KINDS[kind].metric}:stderr",
        "expr": f"sqrt(clamp_min({variance}, 0) / {n})",
    }


def _alert(rule: AlertRule, config: AlertingConfig) -> dict[str, Any]:
    context = PromqlContext(config.prometheus_job, config.window_ms, config.min_queries)
    expr = rule.condition.promql(rule.measure, rule.segment, context)
    labels = alert_labels(rule, (), config.window)
    del labels["alertname"]
    alert: dict[str, Any] = {
        "alert": rule.name,
        "expr": expr,
        "for": format_duration((rule.for_windows - 1) * config.window_ms),
    }
    if rule.keep_firing_for:
        alert["keep_firing_for"] = format_duration(rule.keep_firing_for * config.window_ms)
    alert["labels"] = labels
    source = f"rendered from alerts.rules[{rule.index}]"
    annotations = {
        "summary": rule.condition.promql_summary(rule.measure),
        "description": rule.condition.promql_description(rule.measure, source),
    }
    if rule.runbook_url:
        annotations["runbook_url"] = rule.runbook_url
    alert["annotations"] = annotations
    return alert


def _process_alerts(job: str) -> list[dict[str, Any]]:
    return [
        {
            "alert": "RankmonDown",
            "expr": f"up{{{job}}} == 0",
            "for": "5m",
            "labels": {"severity": "critical"},
            "annotations": {"summary": "rankmon instance {{ $labels.instance }} is down"},
        },
        {
            "alert": "RankmonAbsent",
            "expr": f"absent(up{{{job}}})",
            "for": "5m",
            "labels": {"severity": "critical"},
            "annotations": {"summary": "Prometheus scrapes no rankmon instance"},
        },
    ]
