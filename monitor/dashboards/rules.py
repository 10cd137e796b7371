"""Panels for the config's alert rules: the watched series with the rule's threshold drawn.

A `below` rule draws its floor on the series it watches (the area under it red); a `drop` rule
draws the change versus its baseline with the allowed drop as the floor. The significance test
of a drop rule runs on per-query means inside rankmon and cannot be drawn from Prometheus
series: a dip past the line fires only when it is also significant.
"""

from __future__ import annotations

from monitor.dashboards.model import Panel, Query, Row
from monitor.dashboards.model import ThresholdStep as Step
from monitor.dashboards.queries import (
    merged_mean,
    segment_legend,
    segment_matchers,
    trailing_median,
)
from monitor.dashboards.spec import DashboardSpec, DropRule, FloorRule, RuleSeries
from monitor.dashboards.variables import baseline_span

__all__ = ["rule_rows"]


def rule_rows(spec: DashboardSpec) -> tuple[Row, ...]:
    """One row with a panel per `below` and `drop` rule; none without rules."""
    panels = (
        *(_floor_panel(spec, rule) for rule in spec.floors),
        *(_drop_panel(spec, rule) for rule in spec.drops),
    )
    return (Row("Alert rules", panels),) if panels else ()


def _watched(spec: DashboardSpec, series: RuleSeries) -> tuple[str, str]:
    """The merged mean a rule watches, and the legend naming its segments."""
    common = [f'window="{spec.window}"', *segment_matchers(spec.segment_keys, dict(series.segment))]
    own = [f'k="{series.k}"'] if series.k else []
    if series.gain:
        own.append(f'gain="{series.gain}"')
    own += [f'{name}="{value}"' for name, value in series.params]
    return merged_mean(series.family, common, own), segment_legend(spec.segment_keys)


def _floor_panel(spec: DashboardSpec, rule: FloorRule) -> Panel:
    expr, legend = _watched(spec, rule.series)
    return Panel(
        "timeseries",
        f"{rule.name}: {rule.series.title} below {rule.floor:g} ({rule.severity})",
        (Query(expr, legend),),
        description=f"Alert rule {rule.name}: fires when the window's mean is under the line.",
        unit="percentunit",
        thresholds=(Step(None, "red"), Step(rule.floor, "green")),
        minimum=0,
        maximum=1,
        width=8,
    )


def _drop_panel(spec: DashboardSpec, rule: DropRule) -> Panel:
    expr, legend = _watched(spec, rule.series)
    span = baseline_span(spec, rule.baseline_windows)
    baseline = (
        f"{rule.pinned:g}" if rule.pinned is not None else trailing_median(expr, span, spec.window)
    )
    change = f"({expr}) / {baseline} - 1" if rule.relative else f"({expr}) - {baseline}"
    against = "pinned baseline" if rule.pinned is not None else f"median of the last {span}"
    return Panel(
        "timeseries",
        f"{rule.name}: {rule.series.title} drop versus {against} ({rule.severity})",
        (Query(change, legend),),
        description=(
            f"Alert rule {rule.name}: a window under the line fires when the paired test "
            "on its per-query means also finds the drop significant."
        ),
        unit="percentunit" if rule.relative else "short",
        thresholds=(Step(None, "red"), Step(-rule.amount, "green")),
        width=8,
    )
