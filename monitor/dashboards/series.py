"""The Prometheus series rankmon exports, and the series a PromQL expression names.

`EXPORTED_SERIES` is what rankmon exports, as `monitor.export.series` (the one table the
exporter registers from) names it on /metrics. The dashboards may query those and
`PROMETHEUS_SERIES` (`ALERTS`, for the rules `rankmon rules render` writes). A dashboard that
names anything else would show "No data" forever, so rendering refuses it (`unknown_series`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from monitor.export.series import SERIES
from monitor.replay.metrics import REPLAY_SERIES
from monitor.scoring.catalog import EXPORTED_KINDS

__all__ = [
    "EXPORTED_SERIES",
    "PROMETHEUS_SERIES",
    "QUALITY_MEASURES",
    "QUERYABLE_SERIES",
    "label_values_selector",
    "series_names",
    "unknown_series",
]

# The quality gauges; each has mergeable companions `rankmon_<measure>_sum_of_query_means`
# and `_sum_of_squared_query_means`, and its `_stderr`.
QUALITY_MEASURES: Final = tuple(kind.name for kind in EXPORTED_KINDS)

# Every name rankmon's /metrics carries, from the one table of exported series.
EXPORTED_SERIES: Final[frozenset[str]] = frozenset(series.exposed for series in SERIES)

# Series Prometheus itself writes, not rankmon: `ALERTS` holds the state of every alerting
# rule it evaluates, so the dashboards can show the alerts of `rankmon rules render` (global
# means across instances, RankmonDown, RankmonAbsent) beside rankmon's own. Each use must
# select rankmon's rules by their `job` label (tests/real_parts/test_dashboards.py checks it).
PROMETHEUS_SERIES: Final[frozenset[str]] = frozenset(["ALERTS"])

# What a dashboard may query: rankmon's, Prometheus', and `rankmon replay`'s own series (its
# `replay.metrics_port`, scraped like rankmon's).
QUERYABLE_SERIES: Final[frozenset[str]] = EXPORTED_SERIES | PROMETHEUS_SERIES | REPLAY_SERIES

_KEYWORDS: Final = frozenset(
    [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "bool",
        "and",
        "or",
        "unless",
        "inf",
        "nan",
    ]
)
_STRING: Final = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_BRACES: Final = re.compile(r"\{[^{}]*\}")
_BRACKETS: Final = re.compile(r"\[[^\[\]]*\]")
_GROUPING: Final = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE
)
# A name not glued to a digit (`5m`), a `$` (a Grafana variable) or a dot, and not a call.
_NAME: Final = re.compile(r"(?<![\w.$:])([A-Za-z_:][\w:]*)(?![\w:]|\s*\()")
_LABEL_VALUES: Final = re.compile(r"^\s*label_values\(\s*(.*),\s*\w+\s*\)\s*$", re.DOTALL)


def series_names(expr: str) -> set[str]:
    """The metric names an expression selects (functions, keywords and labels left out).

    Written for the expressions rankmon generates, not a full PromQL parser: strings, label
    matchers, ranges and grouping label lists are removed first, then every remaining bare
    name that is not a function call or a keyword is a metric name.
    """
    text = _STRING.sub('""', expr)
    while _BRACES.search(text):  # `${var}` inside a matcher nests one level
        text = _BRACES.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    return {m for m in _NAME.findall(text) if m.lower() not in _KEYWORDS}


def label_values_selector(query: str) -> str | None:
    """The series selector inside a Grafana `label_values(selector, label)` variable query."""
    match = _LABEL_VALUES.match(query)
    return match.group(1) if match else None


def unknown_series(expressions: Iterable[str]) -> set[str]:
    """Metric names the expressions select that neither rankmon nor Prometheus writes."""
    named: set[str] = set()
    for expr in expressions:
        named |= series_names(expr)
    return named - QUERYABLE_SERIES
