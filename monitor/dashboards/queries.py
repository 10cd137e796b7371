"""PromQL for the dashboards: selectors, and means merged exactly across instances.

Scaled out, each instance sees only the queries of its partitions, so its `rankmon_ndcg` is
the mean over *its* queries. The dashboards therefore never plot the per-instance gauges: they
divide the summed companions,

    mean over queries = sum_i S_i / sum_i Q_i

where S_i is instance i's `rankmon_<measure>_sum_of_query_means` and Q_i its
`rankmon_window_queries`. Events are keyed by query id, so every query lives on one instance
and the result equals the mean one instance would compute over all queries; with a single
instance it is that instance's gauge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from monitor.export.series import measure_labels
from monitor.scoring.catalog import EXPORTED_KINDS, KINDS

__all__ = [
    "INSTANCE_LABELS",
    "MEASURE_LABELS",
    "merged",
    "merged_mean",
    "merged_stderr",
    "normal_band",
    "segment_legend",
    "segment_matchers",
    "selector",
    "trailing_median",
]

# Labels that differ between instances of one deployment (Prometheus target, Kubernetes pod).
INSTANCE_LABELS: Final = "instance, pod"

# The labels each quality family carries beyond `window` and the segment keys, from its row
# of the measure table (`monitor.export.series.measure_labels`): `k`, `gain`, parameters.
MEASURE_LABELS: Final[Mapping[str, tuple[str, ...]]] = {
    kind.name: measure_labels(kind) for kind in EXPORTED_KINDS
}


def selector(metric: str, matchers: Sequence[str]) -> str:
    """`metric{a="x",b=~"y"}`; no braces without matchers."""
    return f"{metric}{{{','.join(matchers)}}}" if matchers else metric


def segment_matchers(keys: Sequence[str], fixed: Mapping[str, str] | None = None) -> list[str]:
    """A matcher per segment key: the fixed value if given, else the key's dashboard variable.

    A variable set to "All" expands to `.*`, which also matches events without the key.
    """
    pinned = fixed or {}
    return [f'{key}="{pinned[key]}"' if key in pinned else f'{key}=~"${key}"' for key in keys]


def segment_legend(keys: Sequence[str]) -> str:
    """Legend text naming the segment of a series (`model={{model}}`), `all` without keys."""
    return " ".join(f"{key}={{{{{key}}}}}" for key in keys) or "all"


def merged(metric: str, matchers: Sequence[str]) -> str:
    """Sum a per-instance count over the instances of the deployment."""
    return f"sum without ({INSTANCE_LABELS}) ({selector(metric, matchers)})"


def merged_mean(family: str, common: Sequence[str], measure: Sequence[str] = ()) -> str:
    """The mean over queries of `family`, merged across instances (module docstring).

    `common` matches window and segment labels (shared with `rankmon_window_queries`),
    `measure` the family's own labels (`k`, `gain`).
    """
    sums = merged(f"rankmon_{KINDS[family].metric}_sum_of_query_means", [*common, *measure])
    queries = merged("rankmon_window_queries", common)
    own = MEASURE_LABELS[family]
    if not own:
        return f"{sums} / {queries}"
    # One query count serves every cutoff and gain of the same window and segment.
    return f"{sums} / ignoring ({', '.join(own)}) group_left {queries}"


def merged_stderr(family: str, common: Sequence[str], measure: Sequence[str] = ()) -> str:
    """The standard error of `merged_mean`, merged exactly across instances:
    sqrt((sum sq - (sum s)^2 / n) / (n - 1) / n), with n the summed queries."""
    metric = KINDS[family].metric
    sums = merged(f"rankmon_{metric}_sum_of_query_means", [*common, *measure])
    squares = merged(f"rankmon_{metric}_sum_of_squared_query_means", [*common, *measure])
    queries = merged("rankmon_window_queries", common)
    own = MEASURE_LABELS[family]
    match = f"ignoring ({', '.join(own)}) group_left " if own else ""
    n = f"{match}{queries}"
    less_one = f"{match}() ({queries} - 1)" if own else f"({queries} - 1)"
    return f"sqrt(clamp_min(({squares} - {sums} ^ 2 / {n}) / {less_one}, 0) / {n})"


def normal_band(family: str, common: Sequence[str], measure: Sequence[str] = ()) -> list[str]:
    """The lower and upper ends of the 95 % interval of the merged mean (+- 1.96 stderr)."""
    mean = merged_mean(family, common, measure)
    stderr = merged_stderr(family, common, measure)
    return [f"({mean}) - 1.96 * ({stderr})", f"({mean}) + 1.96 * ({stderr})"]


def trailing_median(expr: str, span: str, step: str) -> str:
    """The median of `expr` over the `span` before the current window, one sample per `step`.

    The gauges hold one value per finalized window, so sampling a subquery at the window size
    gives one point per window; `offset step` leaves the current window out of its own
    baseline. This mirrors the alerting stage's baseline (trailing median of N windows).
    """
    return f"quantile_over_time(0.5, ({expr})[{span}:{step}] offset {step})"
