"""PromQL pieces the conditions' Prometheus forms are made of (`Condition.promql`).

The series are the recording rules of `monitor.alerting.render`: `job:rankmon_<kind>:mean`
(the global mean of per-query means), `job:rankmon_window_queries:sum` and
`job:rankmon_coverage_ratio:sum`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from monitor.export.series import MEASURE_LABEL_NAMES, label_values
from monitor.scoring.catalog import KINDS, MeasureKey
from monitor.windows.summary import Segment

# A window series carries no measure label: matching one ignores every measure's.
IGNORING_MEASURE = f"ignoring({', '.join(MEASURE_LABEL_NAMES)})"

__all__ = [
    "IGNORING_MEASURE",
    "PromqlContext",
    "enough_queries",
    "measure_series",
    "selector",
    "window_queries",
]


@dataclass(frozen=True)
class PromqlContext:
    """What a rule's expression depends on beyond the rule: the scrape job, the window length
    and `alerts.min_queries`."""

    job: str
    window_ms: int
    min_queries: int


def selector(metric: str, matchers: Mapping[str, str], segment: Segment | None) -> str:
    """`metric{k="v",...}` with the matchers and the segment's labels."""
    pairs = {**matchers, **dict(segment or ())}
    inner = ",".join(f'{key}="{value}"' for key, value in pairs.items())
    return f"{metric}{{{inner}}}" if inner else metric


def measure_series(measure: str, segment: Segment | None, statistic: str = "mean") -> str:
    """A recorded global statistic (`mean` or `stderr`) of a measure key: `ndcg@10:linear` ->
    `job:rankmon_ndcg:mean{k="10",gain="linear",...}`."""
    key = MeasureKey.parse(measure)
    return selector(f"job:rankmon_{KINDS[key.kind].metric}:{statistic}", label_values(key), segment)


def window_queries(segment: Segment | None) -> str:
    """The recorded number of queries in the segment's window, over every instance."""
    return selector("job:rankmon_window_queries:sum", {}, segment)


def enough_queries(segment: Segment | None, context: PromqlContext) -> str:
    """`alerts.min_queries` in PromQL: at least that many queries in the window, or every
    query of a smaller evaluation set."""
    size = f'max(rankmon_evaluation_set_queries{{job="{context.job}"}})'
    needed = f"scalar(clamp_max({size}, {context.min_queries}))"
    return f" and {IGNORING_MEASURE} ({window_queries(segment)} >= {needed})"
