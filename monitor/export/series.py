"""Every series rankmon exports, once: name, type, help and labels.

The exporter registers (or collects) exactly these, the dashboards may query exactly these
(`monitor.dashboards.series`), and the README's list is checked against a running service.
Label names in `labels` are fixed ones; `SEGMENT` stands for the configured segment keys,
sorted, and `MEASURE` series have `k` (a kind that takes a cutoff) and `gain` (a kind that
takes a gain) in front of theirs. A name is as written in the table: prometheus-client adds
`_total` to a counter's and `_info` to an info's samples (`exposed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from monitor.scoring.catalog import EXPORTED_KINDS, KIND_TABLE, KINDS, MeasureKey, MeasureKind

__all__ = [
    "COMPARISON_LABELS",
    "COMPARISON_SERIES",
    "CORRECTION_SERIES",
    "JUDGED_SOURCE_SERIES",
    "MEASURE_LABEL_NAMES",
    "MEASURE_SERIES",
    "PROCESS_SERIES",
    "SAMPLED_ONLY",
    "SEGMENT",
    "SERIES",
    "WINDOW_LABELS",
    "WINDOW_SERIES",
    "Series",
    "label_values",
    "measure_labels",
    "measure_series",
    "window_series",
]

SEGMENT: Final = "<segment keys>"
WINDOW_LABELS: Final = ("window", "version", SEGMENT)
COMPARISON_LABELS: Final = ("comparison", "measure", "k", "gain", "window")

SeriesType = Literal["gauge", "counter", "info"]


@dataclass(frozen=True)
class Series:
    """One exported metric family. `field`: where its value comes from (a window summary's,
    a comparison's, a measure's statistic), empty for series the loop sets itself."""

    name: str
    type: SeriesType
    help: str
    labels: tuple[str, ...] = ()
    field: str = ""

    @property
    def exposed(self) -> str:
        """The name its samples carry on /metrics."""
        suffix = {"counter": "_total", "info": "_info", "gauge": ""}[self.type]
        return self.name + suffix


def measure_labels(kind: MeasureKind) -> tuple[str, ...]:
    """The labels in front of the window labels of a measure's series: `k` when it takes a
    cutoff, `gain` when it takes a gain, and each of its parameters (`p`)."""
    return (
        ("k",) * (kind.cutoff is not False)
        + ("gain",) * kind.gain
        + tuple(param.name for param in kind.params)
    )


def label_values(key: MeasureKey) -> dict[str, str]:
    """The values of a key's measure labels (`rbp@10:p=0.8` -> k="10", p="0.8")."""
    values = {"k": str(key.k), "gain": str(key.gain)}
    values.update((name, f"{value:g}") for name, value in key.params)
    return {label: values[label] for label in measure_labels(KINDS[key.kind])}


def _measure_series(kind: MeasureKind) -> tuple[Series, ...]:
    name, labels = f"rankmon_{kind.metric}", (*measure_labels(kind), *WINDOW_LABELS)
    return (
        Series(name, "gauge", kind.gauge or "", labels, "mean"),
        Series(
            f"{name}_sum_of_query_means",
            "gauge",
            f"Sum over queries of each query's mean {kind.name} in the latest finalized window.",
            labels,
            "sum",
        ),
        Series(
            f"{name}_sum_of_squared_query_means",
            "gauge",
            f"Sum over queries of the squared mean {kind.name} of each query in the latest "
            "finalized window (with the sums and query counts: the merged standard error).",
            labels,
            "squares",
        ),
        Series(
            f"{name}_stderr",
            "gauge",
            f"Between-query standard error of {name} (sd over the window's queries / "
            "sqrt(queries)): about the population of queries, not window-to-window replay noise.",
            labels,
            "stderr",
        ),
        Series(
            f"{name}_replay_stderr",
            "gauge",
            f"Window-to-window replay noise of {name}: how much its mean moves between two "
            "windows of the same queries (monitor.stats.replay_noise).",
            labels,
            "replay_stderr",
        ),
    )


# measure kind -> its five series (mean, sums, squares, stderr, replay stderr)
MEASURE_SERIES: Final = {kind.name: _measure_series(kind) for kind in EXPORTED_KINDS}
# The series of trec_eval's families' kinds: many and seldom streamed, declared on /metrics once
# they have a sample, so a scrape is not a list of empty families.
SAMPLED_ONLY: Final = frozenset(
    series.name
    for kind in EXPORTED_KINDS
    if kind.family is not None
    for series in MEASURE_SERIES[kind.name]
)
# Every measure label of any kind: what a query across measures ignores (`ignoring(...)`).
MEASURE_LABEL_NAMES: Final = tuple(
    dict.fromkeys(label for kind in KIND_TABLE for label in measure_labels(kind))
)

WINDOW_SERIES: Final = (
    Series(
        "rankmon_window_queries",
        "gauge",
        "Distinct queries in the latest finalized window (the means are over these).",
        WINDOW_LABELS,
        "queries",
    ),
    Series(
        "rankmon_window_events",
        "gauge",
        "Scored events in the latest finalized window.",
        WINDOW_LABELS,
        "events",
    ),
    Series(
        "rankmon_window_failed_queries",
        "gauge",
        "Queries a replay asked that the ranker did not answer (errors, timeouts) and that have "
        "no ranking in the latest finalized window; 0 for live traffic.",
        WINDOW_LABELS,
        "failed",
    ),
    Series(
        "rankmon_coverage_ratio",
        "gauge",
        "Queries seen in the latest finalized window / queries in the evaluation set.",
        WINDOW_LABELS,
        "coverage",
    ),
    Series(
        "rankmon_window_end_timestamp_seconds",
        "gauge",
        "End (exclusive, event time) of the latest finalized window.",
        WINDOW_LABELS,
        "end",
    ),
)


def _comparison(field: str, name: str, text: str) -> Series:
    return Series(f"rankmon_comparison_{name}", "gauge", text, COMPARISON_LABELS, field)


_INTERVAL = "end of the always-valid interval of the difference"
COMPARISON_SERIES: Final = (
    _comparison("delta", "delta", "Mean per-query difference candidate - baseline."),
    _comparison("ci_lower", "ci_lower", "Lower end of the delta's confidence interval."),
    _comparison("ci_upper", "ci_upper", "Upper end of the delta's confidence interval."),
    _comparison(
        "p_value",
        "p_value",
        "Two-sided paired sign-flip permutation p-value of the window's delta.",
    ),
    _comparison(
        "effect_size", "effect_size", "Delta / standard deviation of the per-query differences."
    ),
    _comparison("queries", "queries", "Queries both segments served in the window."),
    _comparison(
        "sequence_lower", "sequence_lower", f"Lower {_INTERVAL} since the comparison began."
    ),
    _comparison(
        "sequence_upper", "sequence_upper", f"Upper {_INTERVAL} since the comparison began."
    ),
    _comparison(
        "sequence_p_value",
        "sequence_p_value",
        "Always-valid p-value of no difference since the comparison began.",
    ),
    _comparison(
        "population_lower", "population_lower", f"Lower {_INTERVAL} in the population of queries."
    ),
    _comparison(
        "population_upper", "population_upper", f"Upper {_INTERVAL} in the population of queries."
    ),
    _comparison("set_lower", "set_lower", f"Lower {_INTERVAL} on the queries compared."),
    _comparison("set_upper", "set_upper", f"Upper {_INTERVAL} on the queries compared."),
    _comparison(
        "replay_stderr",
        "replay_stderr",
        "Replay noise (standard error) of the difference on the queries compared.",
    ),
    _comparison(
        "min_detectable",
        "min_detectable_difference",
        "Smallest population difference the queries compared detect with 80 % power.",
    ),
    _comparison(
        "compared_units",
        "units",
        "Queries compared since the comparison began (the population interval's n).",
    ),
    _comparison(
        "replay_design",
        "replay_design",
        "1 when the population interval is a replayed fixed set's, 0 when live traffic's.",
    ),
)

_ALERT_LABELS: Final = ("alert", "severity", SEGMENT)
# The loop's own series: set by the exporter's methods, not from a window.
PROCESS_SERIES: Final = (
    Series(
        "rankmon_events",
        "counter",
        "Kafka records by what became of them (outcome) and why (reason, for rejections).",
        ("outcome", "reason"),
    ),
    Series(
        "rankmon_watermark_timestamp_seconds",
        "gauge",
        "Event-time watermark per partition (max event time minus allowed lateness).",
        ("partition",),
    ),
    Series(
        "rankmon_consumer_lag_records",
        "gauge",
        "Records between the consumer's position and the partition's high watermark.",
        ("partition",),
    ),
    Series(
        "rankmon_unreadable_batches",
        "counter",
        "Times a partition was paused at a record batch that could not be read.",
        ("partition",),
    ),
    Series(
        "rankmon_consumer_errors",
        "counter",
        "Polls of the events topic that raised, by exception type.",
        ("error",),
    ),
    Series("rankmon_broker_up", "gauge", "1 if the Kafka broker answered lately."),
    Series("rankmon_ready", "gauge", "1 if /readyz reports ready."),
    Series(
        "rankmon_loop_progress_timestamp_seconds",
        "gauge",
        "When the poll loop last completed an iteration (/healthz fails past the limit).",
    ),
    Series("rankmon_build", "info", "rankmon's version.", ("version", "python")),
    Series("rankmon_evaluation_set", "info", "The loaded evaluation set.", ("version",)),
    Series("rankmon_evaluation_set_queries", "gauge", "Queries in the loaded evaluation set."),
    Series(
        "rankmon_evaluation_set_reloads",
        "counter",
        "Reloads of the evaluation set tried, by result: ok, or failed (the set in use stays).",
        ("result",),
    ),
    Series(
        "rankmon_evaluation_set_reload_failing",
        "gauge",
        "1 while the newest reload of the evaluation set failed (the old one stays in use).",
    ),
    Series(
        "rankmon_window_shares_trimmed",
        "counter",
        "Window shares published without a part (per-query means, segment labels) to fit "
        "one record of kafka.max_record_bytes.",
        ("dropped",),
    ),
    Series(
        "rankmon_group_forced_decisions",
        "counter",
        "Windows the group's deciding member decided without every member's final word "
        "(more than 32 windows waited), by reason: partition_silent (a member silent, a "
        "partition stuck) or share_unread (a share named but never read); alert on any.",
        ("reason",),
    ),
    Series(
        "rankmon_control_records_refused",
        "counter",
        "Records of the windows and to-judge topics refused for a limit an event is held to "
        "(a time past events.max_future or the record timestamp plus windows.max_clock_skew, "
        "an id past events.max_id_bytes), by topic and reason.",
        ("topic", "reason"),
    ),
    Series(
        "rankmon_judgments",
        "counter",
        "Judgments read from the judgments topic, by what became of them: accepted, audit (a "
        "model's grade beside a person's) or refused (reason, dead-lettered).",
        ("outcome", "reason"),
    ),
    Series(
        "rankmon_judging_pairs",
        "counter",
        "Unjudged (query, document) pairs of this instance, by outcome: asked (published to "
        "the to-judge topic) or dropped (past judging.max_pending, the least useful).",
        ("outcome",),
    ),
    Series(
        "rankmon_judging_pairs_pending",
        "gauge",
        "Unjudged pairs waiting for the judging budget (judging.budget_per_hour).",
    ),
    Series(
        "rankmon_judge_kappa",
        "gauge",
        "A model judge's quadratic weighted kappa with the people over its newest audit pairs "
        "(judging.audit_pairs).",
        ("source",),
    ),
    Series(
        "rankmon_judge_bias",
        "gauge",
        "A model judge's mean grade minus the people's over its newest audit pairs.",
        ("source",),
    ),
    Series(
        "rankmon_judge_audit_pairs",
        "gauge",
        "Pairs a model judge and a person both graded, read in all.",
        ("source",),
    ),
    Series(
        "rankmon_judge_confusion",
        "gauge",
        "A model judge's newest audit pairs by the person's grade (human) and its own (model).",
        ("source", "human", "model"),
    ),
    Series(
        "rankmon_alert_firing",
        "gauge",
        "1 while an alert rule fires (per rule and segment).",
        _ALERT_LABELS,
    ),
    Series(
        "rankmon_alert_firings",
        "counter",
        "Times an alert rule started firing (per rule and segment), also those that "
        "resolved within one tick (a backlog finalizing many windows at once).",
        _ALERT_LABELS,
    ),
    Series(
        "rankmon_alert_deliveries",
        "counter",
        "Alert notifications handed to a sink (alertmanager, webhook, log), by result "
        "(delivered, failed, dropped).",
        ("sink", "result"),
    ),
)

# The judging loop's correction of a window's headline nDCG@k (`monitor.judging.correction`).
_CORRECTED_LABELS: Final = ("k", "gain", *WINDOW_LABELS)
CORRECTION_SERIES: Final = (
    Series(
        "rankmon_ndcg_corrected",
        "gauge",
        "nDCG@k of the latest finalized window corrected by the people's audit of the model "
        "judge (PPI++, query as the unit; absent below judging.min_audited_queries).",
        _CORRECTED_LABELS,
        "estimate",
    ),
    Series(
        "rankmon_ndcg_corrected_lower",
        "gauge",
        "Lower end of the corrected nDCG@k's 95 % interval.",
        _CORRECTED_LABELS,
        "lower",
    ),
    Series(
        "rankmon_ndcg_corrected_upper",
        "gauge",
        "Upper end of the corrected nDCG@k's 95 % interval.",
        _CORRECTED_LABELS,
        "upper",
    ),
    Series(
        "rankmon_ndcg_corrected_audited_queries",
        "gauge",
        "Queries of the latest finalized window whose model-graded documents people graded "
        "too (the audit the correction stands on).",
        _CORRECTED_LABELS,
        "audited",
    ),
)

# judged@k split by the source of the grades (`monitor.scoring.sources`).
JUDGED_SOURCE_SERIES: Final = (
    Series(
        "rankmon_judged_by_source",
        "gauge",
        "Share of the top k judged by each source (the file's, a judge's) in the latest "
        "finalized window, from its sampled rankings (mean over queries); with more than one "
        "source.",
        ("k", "source", *WINDOW_LABELS),
        "share",
    ),
)

SERIES: Final = (
    *(series for family in MEASURE_SERIES.values() for series in family),
    *WINDOW_SERIES,
    *CORRECTION_SERIES,
    *JUDGED_SOURCE_SERIES,
    *COMPARISON_SERIES,
    *PROCESS_SERIES,
)


def measure_series(kind: str, field: str) -> str:
    """The name of a measure's series of that field (`mean`, `sum`, `squares`, `stderr`,
    `replay_stderr`): `measure_series("ndcg", "sum")` is `rankmon_ndcg_sum_of_query_means`."""
    return next(series.name for series in MEASURE_SERIES[kind] if series.field == field)


def window_series(field: str) -> str:
    """The name of a window's series of that field (`queries`, `events`, `failed`, `coverage`,
    `end`)."""
    return next(series.name for series in WINDOW_SERIES if series.field == field)
