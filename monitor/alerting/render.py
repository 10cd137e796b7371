"""Prometheus recording and alerting rules expressing the configured conditions.

For teams that alert in Prometheus, and for multi-instance deployments (each query lives on
one instance, so only Prometheus sees the global numbers):

- recording rules `job:rankmon_<measure>:mean` combine the instances' sums of query means and
  query counts into the exact global mean of per-query means, per segment and window, and
  `job:rankmon_<measure>:stderr` (with the sums of squares) into its exact standard error;
  `job:rankmon_window_queries:sum` and `job:rankmon_coverage_ratio:sum` add up counts and
  coverage (instances see disjoint queries, so their coverage ratios add);
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
- `coverage` and `judged` as floors on the combined series; `trend` is not expressible and
  is left to rankmon's engine;
- `RankmonDown` (`up == 0`) and `RankmonAbsent` (`absent(up)`) for the scrape job.

The file starts with a comment naming every rule left to rankmon's engine, and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from monitor.alerting.annotations import alert_labels, condition_summary, drop_summary
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
from monitor.scoring.catalog import EXPORTED_KINDS
from monitor.values import format_duration
from monitor.windows.summary import Segment

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
    if isinstance(rule.condition, Trend):
        return "trend, Page-Hinkley has no PromQL form"
    if isinstance(rule.condition, Comparison):
        return "comparison, its always-valid sequence lives in rankmon"
    if isinstance(rule.condition, Drop) and not ungated_drop:
        return "drop, gated by a paired test on per-query values Prometheus lacks"
    return None


def _header(config: AlertingConfig, ungated_drop: bool) -> str:
    lines = ["# Rendered by `rankmon rules render` from the config's alerts.rules."]
    left = [(rule, _left_out(rule, ungated_drop)) for rule in config.rules]
    left_out = [f"#   {rule.name} (alerts.rules[{rule.index}]): {why}" for rule, why in left if why]
    if left_out:
        lines += ["# Left to rankmon's own alerts, not rendered:", *left_out]
    if not ungated_drop and any(isinstance(rule.condition, Drop) for rule in config.rules):
        lines.append("# (--ungated-drop renders drop rules without the test: docs/alerting.md)")
    return "\n".join(lines) + "\n"


def _recording_rules(job: str) -> list[dict[str, str]]:
    queries = f"sum {_BY_INSTANCE} (rankmon_window_queries{{{job}}})"
    rules = [
        {
            "record": f"job:rankmon_{kind}:mean",
            "expr": f"sum {_BY_INSTANCE} (rankmon_{kind}_sum_of_query_means{{{job}}})"
            f" / ignoring(k, gain) group_left {queries}",
        }
        for kind in MEASURE_KINDS
    ]
    rules += [_stderr_rule(kind, queries, job) for kind in MEASURE_KINDS]
    rules.append({"record": "job:rankmon_window_queries:sum", "expr": queries})
    rules.append(
        {
            "record": "job:rankmon_coverage_ratio:sum",
            "expr": f"sum {_BY_INSTANCE} (rankmon_coverage_ratio{{{job}}})",
        }
    )
    return rules


def _stderr_rule(kind: str, queries: str, job: str) -> dict[str, str]:
    """The exact merged standard error: sqrt(((sum sq) - (sum s)^2 / n) / (n - 1) / n)."""
    sums = f"sum {_BY_INSTANCE} (rankmon_{kind}_sum_of_query_means{{{job}}})"
    squares = f"sum {_BY_INSTANCE} (rankmon_{kind}_sum_of_squared_query_means{{{job}}})"
    n = f"ignoring(k, gain) group_left {queries}"
    # `group_left (` would read the parenthesis as group_left's label list: `group_left ()`
    less_one = f"ignoring(k, gain) group_left () ({queries} - 1)"
    variance = f"({squares} - {sums} ^ 2 / {n}) / {less_one}"
    return {
        "record": f"job:rankmon_{kind}:stderr",
        "expr": f"sqrt(clamp_min({variance}, 0) / {n})",
    }


def _selector(metric: str, matchers: Mapping[str, str], segment: Segment | None) -> str:
    pairs = {**matchers, **dict(segment or ())}
    inner = ",".join(f'{key}="{value}"' for key, value in pairs.items())
    return f"{metric}{{{inner}}}" if inner else metric


def _measure_matchers(measure: str) -> tuple[str, dict[str, str]]:
    """`ndcg@10:linear` -> (`job:rankmon_ndcg:mean`, {k: 10, gain: linear})."""
    name, _, gain = measure.partition(":")
    kind, _, k = name.partition("@")
    matchers = {"k": k} if k else {}
    if gain:
        matchers["gain"] = gain
    return f"job:rankmon_{kind}:mean", matchers


def _expression(rule: AlertRule, config: AlertingConfig) -> str:
    condition = rule.condition
    if isinstance(condition, Below | Drop | Judged):
        metric, matchers = _measure_matchers(rule.measure)
        value = _selector(metric, matchers, rule.segment)
        if isinstance(condition, Below):
            return f"({value} < {condition.threshold:g}){_enough_queries(rule, config)}"
        if isinstance(condition, Judged):
            return f"({value} < {condition.minimum:g}){_enough_queries(rule, config)}"
        return _drop_expression(value, condition, rule, config)
    if isinstance(condition, Coverage):
        coverage = _selector("job:rankmon_coverage_ratio:sum", {}, rule.segment)
        return f"{coverage} < {condition.minimum:g}"
    if isinstance(condition, Stale):
        ends = _selector(
            "rankmon_window_end_timestamp_seconds",
            {"job": config.prometheus_job},
            rule.segment,
        )
        after = format_duration(condition.after_ms)
        # `present ... offset after`: the series existed `after` ago, so a freshly started
        # instance is not stale before it had the chance to finalize a window.
        return (
            f"(sum by (job) (changes({ends}[{after}])) == 0)"
            f" and on(job) sum by (job) (present_over_time({ends}[1m] offset {after}))"
        )
    raise TypeError(f"no PromQL form for {condition!r}")  # trend: `_left_out` keeps it out


def _enough_queries(rule: AlertRule, config: AlertingConfig) -> str:
    """`alerts.min_queries` in PromQL: at least that many queries in the window, or every
    query of a smaller evaluation set."""
    queries = _selector("job:rankmon_window_queries:sum", {}, rule.segment)
    size = f'max(rankmon_evaluation_set_queries{{job="{config.prometheus_job}"}})'
    needed = f"scalar(clamp_max({size}, {config.min_queries}))"
    return f" and ignoring(k, gain) ({queries} >= {needed})"


def _drop_expression(value: str, condition: Drop, rule: AlertRule, config: AlertingConfig) -> str:
    if condition.pinned is not None:
        baseline = f"{condition.pinned:g}"
    else:
        span = format_duration(condition.baseline_windows * config.window_ms)
        back = format_duration(config.window_ms)
        baseline = f"quantile_over_time(0.5, {value}[{span}] offset {back})"
    if condition.relative is not None:
        floor = f"{1 - condition.relative:g} * {baseline}"
    else:
        floor = f"{baseline} - {condition.absolute:g}"
    queries = _selector("job:rankmon_window_queries:sum", {}, rule.segment)
    return f"({value} < {floor}) and ignoring(k, gain) ({queries} >= {condition.min_queries})"


def _alert(rule: AlertRule, config: AlertingConfig) -> dict[str, Any]:
    expr = _expression(rule, config)
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
    annotations = {"summary": _summary(rule), "description": _description(rule)}
    if rule.runbook_url:
        annotations["runbook_url"] = rule.runbook_url
    alert["annotations"] = annotations
    return alert


def _summary(rule: AlertRule) -> str:
    if isinstance(rule.condition, Drop):
        return f"{drop_summary(rule, rule.condition)}; ungated approximation, no paired test"
    return condition_summary(rule)


def _description(rule: AlertRule) -> str:
    condition = rule.condition
    source = f"rendered from alerts.rules[{rule.index}]"
    if isinstance(condition, Stale):
        return f"no rankmon window finalized in {format_duration(condition.after_ms)}; {source}"
    value = f'{rule.measure} is {{{{ $value | printf "%.4f" }}}}; {source}'
    if isinstance(condition, Drop):
        # Prometheus has no per-query values: say what this alert is missing.
        value += " (no paired test: rankmon's own alert is the significance-gated one)"
    return value


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
