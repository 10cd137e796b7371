"""Templating variables: the datasource, the window, the segment keys, cutoffs and gains."""

from __future__ import annotations

from typing import Final

from monitor.dashboards.model import ALL, Variable
from monitor.dashboards.spec import DashboardSpec
from monitor.values import format_duration, parse_duration

__all__ = ["baseline_span", "datasource_variable", "quality_variables"]

_BASELINE_CHOICES: Final = ("30m", "1h", "2h", "6h", "1d")
_DEFAULT_BASELINE_WINDOWS: Final = 12  # the alerting stage's default baseline_windows


def baseline_span(spec: DashboardSpec, windows: int) -> str:
    """The span of `windows` consecutive windows of the configured size."""
    return format_duration(parse_duration(spec.window).ms * windows)


def datasource_variable() -> Variable:
    return Variable("datasource", "Data source", "datasource", "prometheus")


def quality_variables(spec: DashboardSpec) -> tuple[Variable, ...]:
    """Datasource, window, one multi-select per segment key, k, gain and the baseline span."""
    in_window = 'label_values({}{{window="$window"}}, {})'
    windows = "label_values(rankmon_window_queries, window)"
    return (
        datasource_variable(),
        Variable("window", "Window", "query", windows, default=spec.window),
        *(
            _multi(key, key, in_window.format("rankmon_window_queries", key))
            for key in spec.segment_keys
        ),
        _multi("k", "Cutoff k", in_window.format("rankmon_ndcg", "k"), sort=3),
        _multi("gain", "Gain", in_window.format("rankmon_ndcg", "gain")),
        _baseline(spec),
    )


def _multi(name: str, label: str, query: str, sort: int = 1) -> Variable:
    """A label-values multi-select that starts on "All"."""
    return Variable(
        name, label, "query", query, multi=True, include_all=True, default=ALL, sort=sort
    )


def _baseline(spec: DashboardSpec) -> Variable:
    # Defaults to the first drop rule's baseline, so the generic drop panel matches the alert.
    windows = spec.drops[0].baseline_windows if spec.drops else _DEFAULT_BASELINE_WINDOWS
    span = baseline_span(spec, windows)
    choices = sorted({*_BASELINE_CHOICES, span}, key=lambda text: parse_duration(text).ms)
    return Variable("baseline", "Baseline span", "custom", ",".join(choices), default=span)
