"""`Exporter`: every series rankmon exports, on a `CollectorRegistry` passed in.

Quality gauges hold the latest finalized window of each segment, set from a `WindowSummary`:

| series | labels | value |
|---|---|---|
| `rankmon_ndcg` | k, gain, window, version, segment keys | mean over queries of each query's mean |
| `rankmon_precision`, `_recall`, `_judged` | k, window, version, segment keys | same |
| `rankmon_mrr`, `rankmon_map` | window, version, segment keys | same |
| `rankmon_<measure>_sum_of_query_means` | as its gauge | sum of the per-query means |
| `rankmon_<measure>_sum_of_squared_query_means` | as its gauge | sum of their squares |
| `rankmon_<measure>_stderr` | as its gauge | between-query standard error of the mean |
| `rankmon_<measure>_replay_stderr` | as its gauge | window-to-window replay noise of the mean |
| `rankmon_window_queries`, `rankmon_window_events` | window, version, segment keys | counts |
| `rankmon_coverage_ratio` | window, version, segment keys | queries seen / evaluation-set queries |
| `rankmon_window_end_timestamp_seconds` | window, version, segment keys | end of that window |

The sums and `rankmon_window_queries` make the headline mergeable across instances (each
query lives on one instance, see docs/operations.md, "Scaling out"):
`sum without(instance) (rankmon_ndcg_sum_of_query_means)
 / ignoring(k, gain) group_left sum without(instance) (rankmon_window_queries)`.
With the squares they give the exact merged standard error too (`rankmon rules render`'s
`job:rankmon_<measure>:stderr`): sqrt(((sum sq) - (sum s)^2 / n) / (n - 1) / n), n the summed
queries. (promtool reserves the `_sum`, `_count` and `_total` suffixes for summaries and
counters, hence `_sum_of_query_means`.)

Comparisons (`comparisons:` in the config, `monitor.comparisons`), per comparison and
measure, latest window (labels `comparison`, `measure`, `k`, `gain`, `window`; `k` and `gain`
empty where the measure has none); NaN when the window gave no verdict:

| series | value |
|---|---|
| `rankmon_comparison_delta` | mean per-query difference candidate - baseline, common queries |
| `rankmon_comparison_ci_lower`, `_ci_upper` | its confidence interval (Student's t) |
| `rankmon_comparison_p_value` | paired sign-flip permutation p-value, two-sided |
| `rankmon_comparison_effect_size` | delta / sd of the differences |
| `rankmon_comparison_queries` | common queries |
| `rankmon_comparison_sequence_lower`, `_upper` | live-traffic sequence, always valid |
| `rankmon_comparison_sequence_p_value` | its always-valid p-value |
| `rankmon_comparison_population_lower`, `_upper` | difference in the population of queries |
| `rankmon_comparison_set_lower`, `_upper` | difference on the queries compared |
| `rankmon_comparison_replay_stderr` | replay noise of the difference on those queries |
| `rankmon_comparison_min_detectable_difference` | what they detect with 80 % power |
| `rankmon_comparison_units` | queries compared since the comparison began |
| `rankmon_comparison_replay_design` | 1: the population interval is a replay's; 0: live |

The population and set intervals hold at every look (`monitor.stats.query_units`).

`version` is the evaluation-set version the window was scored with. A segment's series are
always exactly those of its latest window: when the version (or the set of measures) changes,
the series written for that segment's previous window are removed, so a query over
`rankmon_ndcg` never sees two versions of one segment.

Process series: `rankmon_events_total{outcome,reason}`, `rankmon_watermark_timestamp_seconds`
and `rankmon_consumer_lag_records` per `partition`, `rankmon_broker_up`, `rankmon_ready`,
`rankmon_loop_progress_timestamp_seconds`, `rankmon_unreadable_batches_total{partition}`,
`rankmon_consumer_errors_total{error}`, `rankmon_build_info{version}`,
`rankmon_evaluation_set_info{version}`, `rankmon_evaluation_set_queries`,
`rankmon_evaluation_set_reloads_total{result}`, `rankmon_evaluation_set_reload_failing` (1
while the newest reload attempt failed and the old set stays in use),
`rankmon_window_shares_trimmed_total{dropped}` (window shares published without a part so
that they fit one record),
`rankmon_alert_firing{alert,severity,<segment keys>}`,
`rankmon_alert_firings_total{alert,severity,<segment keys>}`,
`rankmon_alert_deliveries_total{sink,result}` and the standard `process_*` series.
"""

from __future__ import annotations

import platform
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Info, ProcessCollector

from monitor import __version__
from monitor.clock import Clock
from monitor.comparisons.record import ComparisonRecord, MeasureComparison
from monitor.errors import MeasureError
from monitor.scoring.catalog import EXPORTED_KINDS, KINDS, MeasureKey, MeasureKind
from monitor.stats.paired import PairedResult
from monitor.windows.segments import label_name_problem
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["AlertSeries", "Exporter", "Liveness", "Readiness"]

# Series of a window as a whole: field of the summary -> (name, help)
# Comparison series: field of `MeasureComparison` -> (name, help)
_COMPARISON_SERIES = {
    "delta": ("rankmon_comparison_delta", "Mean per-query difference candidate - baseline."),
    "ci_lower": ("rankmon_comparison_ci_lower", "Lower end of the delta's confidence interval."),
    "ci_upper": ("rankmon_comparison_ci_upper", "Upper end of the delta's confidence interval."),
    "p_value": (
        "rankmon_comparison_p_value",
        "Two-sided paired sign-flip permutation p-value of the window's delta.",
    ),
    "effect_size": (
        "rankmon_comparison_effect_size",
        "Delta / standard deviation of the per-query differences.",
    ),
    "queries": ("rankmon_comparison_queries", "Queries both segments served in the window."),
    "sequence_lower": (
        "rankmon_comparison_sequence_lower",
        "Lower end of the always-valid interval of the difference since the comparison began.",
    ),
    "sequence_upper": (
        "rankmon_comparison_sequence_upper",
        "Upper end of the always-valid interval of the difference since the comparison began.",
    ),
    "sequence_p_value": (
        "rankmon_comparison_sequence_p_value",
        "Always-valid p-value of no difference since the comparison began.",
    ),
    "population_lower": (
        "rankmon_comparison_population_lower",
        "Lower end of the always-valid interval of the difference in the population of queries.",
    ),
    "population_upper": (
        "rankmon_comparison_population_upper",
        "Upper end of the always-valid interval of the difference in the population of queries.",
    ),
    "set_lower": (
        "rankmon_comparison_set_lower",
        "Lower end of the always-valid interval of the difference on the queries compared.",
    ),
    "set_upper": (
        "rankmon_comparison_set_upper",
        "Upper end of the always-valid interval of the difference on the queries compared.",
    ),
    "replay_stderr": (
        "rankmon_comparison_replay_stderr",
        "Replay noise (standard error) of the difference on the queries compared.",
    ),
    "min_detectable": (
        "rankmon_comparison_min_detectable_difference",
        "Smallest population difference the queries compared detect with 80 % power.",
    ),
    "compared_units": (
        "rankmon_comparison_units",
        "Queries compared since the comparison began (the population interval's n).",
    ),
    "replay_design": (
        "rankmon_comparison_replay_design",
        "1 when the population interval is a replayed fixed set's, 0 when live traffic's.",
    ),
}
_COMPARISON_LABELS = ["comparison", "measure", "k", "gain", "window"]

_WINDOW_SERIES = {
    "queries": (
        "rankmon_window_queries",
        "Distinct queries in the latest finalized window (the means are over these).",
    ),
    "events": ("rankmon_window_events", "Scored events in the latest finalized window."),
    "coverage": (
        "rankmon_coverage_ratio",
        "Queries seen in the latest finalized window / queries in the evaluation set.",
    ),
    "end": (
        "rankmon_window_end_timestamp_seconds",
        "End (exclusive, event time) of the latest finalized window.",
    ),
}

LabelValues = tuple[str, ...]


@dataclass
class Readiness:
    """What `/readyz` requires: evaluation set loaded, consumer group joined, broker reachable,
    and no partition paused at a batch that cannot be read."""

    evaluation_set_loaded: bool = False
    group_joined: bool = False
    broker_up: bool = False
    # partition -> where and why; replaced whole (the HTTP thread reads it)
    unreadable: Mapping[int, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        """Every condition holds."""
        return not self.missing()

    def missing(self) -> list[str]:
        """The conditions that do not hold, one line each (the `/readyz` body)."""
        flags = ("evaluation_set_loaded", "group_joined", "broker_up")
        missing = [name for name in flags if not getattr(self, name)]
        unreadable = self.unreadable
        return missing + [f"unreadable: partition {p} {unreadable[p]}" for p in sorted(unreadable)]


class Liveness:
    """What `/healthz` requires: the poll loop completed an iteration within `timeout_s`.

    The loop calls `progressed()` after every poll (and while it waits for Kafka), so a loop
    stuck anywhere (a call that never returns, a busy loop in a client library) stops it;
    `/healthz` then fails and a liveness probe restarts the process.
    """

    def __init__(self, timeout_s: float, clock: Clock) -> None:
        self.timeout_s = timeout_s
        self._clock = clock
        self._at_s = clock.monotonic()  # starting counts as progress
        self.at_ms = clock.now_ms()  # the same moment by the wall clock, for the gauge

    def progressed(self) -> None:
        """The loop completed an iteration now."""
        self._at_s = self._clock.monotonic()
        self.at_ms = self._clock.now_ms()

    def stalled(self) -> str | None:
        """Why the process is not live, or None while it is."""
        silent = self._clock.monotonic() - self._at_s
        if silent <= self.timeout_s:
            return None
        return f"the poll loop made no progress for {silent:.0f} s (limit {self.timeout_s:g} s)"


class AlertSeries:
    """The alerting stage's series, on a registry passed in (never the global one); the
    `Exporter` holds one, and tools and tests that alert without it make their own.

    - `rankmon_alert_firing{alert,severity,<segment keys>}`: 1 while the rule fires in that
      segment, 0 once it has been evaluated there and is not firing;
    - `rankmon_alert_firings_total{alert,severity,<segment keys>}`: each time the rule
      started firing there, also when it resolved within the same tick (a backlog of
      windows), which the gauge cannot show;
    - `rankmon_alert_deliveries_total{sink,result}`: notifications handed to a sink, one
      per alert, by result: `delivered`, `failed` (retried), `dropped` (the bounded queue
      was full).
    """

    def __init__(self, registry: CollectorRegistry, segment_keys: Sequence[str] = ()) -> None:
        self.segment_keys = tuple(sorted(segment_keys))
        labels = ["alert", "severity", *self.segment_keys]
        self.firing = Gauge(
            "rankmon_alert_firing",
            "1 while an alert rule fires (per rule and segment).",
            labels,
            registry=registry,
        )
        self.firings = Counter(
            "rankmon_alert_firings",
            "Times an alert rule started firing (per rule and segment), also those that "
            "resolved within one tick (a backlog finalizing many windows at once).",
            labels,
            registry=registry,
        )
        self.deliveries = Counter(
            "rankmon_alert_deliveries",
            "Alert notifications handed to a sink (alertmanager, webhook, log), by result "
            "(delivered, failed, dropped).",
            ["sink", "result"],
            registry=registry,
        )

    def set_alert_firing(self, alert: str, severity: str, segment: Segment, firing: bool) -> None:
        self.firing.labels(alert, severity, *self._values(segment)).set(float(firing))

    def count_alert_firing(self, alert: str, severity: str, segment: Segment) -> None:
        self.firings.labels(alert, severity, *self._values(segment)).inc()

    def count_alert_delivery(self, sink: str, result: str) -> None:
        self.deliveries.labels(sink, result).inc()

    def remove(self, alert: str, severity: str, segment: Segment) -> None:
        """Drop a retired segment's series of one rule."""
        for metric in (self.firing, self.firings):
            metric.remove(alert, severity, *self._values(segment))

    def _values(self, segment: Segment) -> list[str]:
        values = dict(segment)
        return [values.get(key, "") for key in self.segment_keys]


class Exporter:
    """Owns every rankmon series on `registry`; segment label names come from config."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        segment_keys: Sequence[str] = (),
        process_metrics: bool = True,
        min_queries: int = 1,
        liveness: Liveness | None = None,
    ) -> None:
        self.segment_keys = tuple(sorted(segment_keys))
        self.min_queries = min_queries
        for key in self.segment_keys:
            problem = label_name_problem(key)
            if problem is not None:
                raise ValueError(f"segment key {problem}")
        self.readiness = Readiness()
        self.liveness = liveness
        self._lock = threading.Lock()
        # segment -> the (gauge, label values) written for its latest window
        self._written: dict[Segment, set[tuple[Gauge, LabelValues]]] = {}
        # segment -> the (alert, severity) of its alert series
        self._alert_series: dict[Segment, set[tuple[str, str]]] = {}
        window_labels = ["window", "version", *self.segment_keys]
        self._means: dict[str, Gauge] = {}
        self._sums: dict[str, Gauge] = {}
        self._squares: dict[str, Gauge] = {}
        self._stderrs: dict[str, Gauge] = {}
        self._replay_stderrs: dict[str, Gauge] = {}
        for exported in EXPORTED_KINDS:
            kind, name = exported.name, f"rankmon_{exported.name}"
            labels = ["k"] * _has_k(exported) + ["gain"] * exported.gain + window_labels
            self._means[kind] = Gauge(name, exported.gauge or "", labels, registry=registry)
            self._sums[kind] = Gauge(
                f"{name}_sum_of_query_means",
                f"Sum over queries of each query's mean {kind} in the latest finalized window.",
                labels,
                registry=registry,
            )
            self._squares[kind] = Gauge(
                f"{name}_sum_of_squared_query_means",
                f"Sum over queries of the squared mean {kind} of each query in the latest "
                "finalized window (with the sums and query counts: the merged standard error).",
                labels,
                registry=registry,
            )
            self._stderrs[kind] = Gauge(
                f"{name}_stderr",
                f"Between-query standard error of rankmon_{exported.name} (sd over the "
                "window's queries / sqrt(queries)): about the population of queries, not "
                "window-to-window replay noise.",
                labels,
                registry=registry,
            )
            self._replay_stderrs[kind] = Gauge(
                f"{name}_replay_stderr",
                f"Window-to-window replay noise of rankmon_{exported.name}: how much its mean "
                "moves between two windows of the same queries (monitor.stats.replay_noise).",
                labels,
                registry=registry,
            )
        self._window = {
            field: Gauge(name, text, window_labels, registry=registry)
            for field, (name, text) in _WINDOW_SERIES.items()
        }
        self._comparison = {
            field: Gauge(name, text, _COMPARISON_LABELS, registry=registry)
            for field, (name, text) in _COMPARISON_SERIES.items()
        }
        self._register_stream_series(registry)
        self._register_status_series(registry)
        if process_metrics:
            ProcessCollector(registry=registry)

    def _register_stream_series(self, registry: CollectorRegistry) -> None:
        self._outcomes = Counter(
            "rankmon_events",
            "Kafka records by what became of them (outcome) and why (reason, for rejections).",
            ["outcome", "reason"],
            registry=registry,
        )
        self._watermark = Gauge(
            "rankmon_watermark_timestamp_seconds",
            "Event-time watermark per partition (max event time minus allowed lateness).",
            ["partition"],
            registry=registry,
        )
        self._lag = Gauge(
            "rankmon_consumer_lag_records",
            "Records between the consumer's position and the partition's high watermark.",
            ["partition"],
            registry=registry,
        )
        self._unreadable = Counter(
            "rankmon_unreadable_batches",
            "Times a partition was paused at a record batch that could not be read.",
            ["partition"],
            registry=registry,
        )
        self._consumer_errors = Counter(
            "rankmon_consumer_errors",
            "Polls of the events topic that raised, by exception type.",
            ["error"],
            registry=registry,
        )

    def _register_status_series(self, registry: CollectorRegistry) -> None:
        self._broker_up = Gauge(
            "rankmon_broker_up", "1 if the Kafka broker answered lately.", registry=registry
        )
        ready = Gauge("rankmon_ready", "1 if /readyz reports ready.", registry=registry)
        ready.set_function(lambda: float(self.readiness.ready))
        progress = Gauge(
            "rankmon_loop_progress_timestamp_seconds",
            "When the poll loop last completed an iteration (/healthz fails past the limit).",
            registry=registry,
        )
        liveness = self.liveness
        progress.set_function(lambda: float("nan") if liveness is None else liveness.at_ms / 1e3)
        self._evaluation_set = Info(
            "rankmon_evaluation_set", "The loaded evaluation set.", registry=registry
        )
        self._evaluation_set_queries = Gauge(
            "rankmon_evaluation_set_queries",
            "Queries in the loaded evaluation set.",
            registry=registry,
        )
        self._reloads = Counter(
            "rankmon_evaluation_set_reloads",
            "Reloads of the evaluation set tried, by result: ok, or failed (the set in use stays).",
            ["result"],
            registry=registry,
        )
        self._shares_trimmed = Counter(
            "rankmon_window_shares_trimmed",
            "Window shares published without a part (per-query means, segment labels) to fit "
            "one record of kafka.max_record_bytes.",
            ["dropped"],
            registry=registry,
        )
        self._reload_failing = Gauge(
            "rankmon_evaluation_set_reload_failing",
            "1 while the newest reload of the evaluation set failed (the old one stays in use).",
            registry=registry,
        )
        build = Info("rankmon_build", "rankmon's version.", registry=registry)
        build.info({"version": __version__, "python": platform.python_version()})
        self.alerts = AlertSeries(registry, self.segment_keys)

    def record_window(
        self, summary: WindowSummary, replay_noise: Mapping[str, float] | None = None
    ) -> None:
        """Set the segment's series from its newest finalized window, dropping stale ones;
        `replay_noise`: measure key -> the window's replay standard error (NaN: unknown).

        A window with fewer than `min_queries` queries reports that instead of a noisy mean:
        its headline gauges are NaN (no alert rule compares true on NaN) while the sums of
        query means and `rankmon_window_queries` stay exact, so merged means stay exact too.
        """
        too_few = summary.queries < self.min_queries
        segment_values = self._segment_values(summary.segment)
        base = (summary.window, summary.evaluation_set_version, *segment_values)
        written: set[tuple[Gauge, LabelValues]] = set()
        for key_text, mean in summary.means.items():
            exported = self._exported_labels(key_text)
            if exported is None:
                continue
            kind, prefix = exported
            labels = (*prefix, *base)
            self._means[kind].labels(*labels).set(float("nan") if too_few else mean)
            self._sums[kind].labels(*labels).set(summary.sums.get(key_text, float("nan")))
            squares = summary.squares.get(key_text, float("nan"))
            self._squares[kind].labels(*labels).set(squares)
            stderr = float("nan") if too_few else summary.stderr(key_text)
            self._stderrs[kind].labels(*labels).set(stderr)
            noise = (replay_noise or {}).get(key_text, float("nan"))
            self._replay_stderrs[kind].labels(*labels).set(float("nan") if too_few else noise)
            written |= {
                (self._means[kind], labels),
                (self._sums[kind], labels),
                (self._squares[kind], labels),
                (self._stderrs[kind], labels),
                (self._replay_stderrs[kind], labels),
            }
        for name, value in (
            ("queries", summary.queries),
            ("events", summary.events),
            ("coverage", summary.coverage),
            ("end", summary.end_ms / 1000.0),
        ):
            self._window[name].labels(*base).set(value)
            written.add((self._window[name], base))
        with self._lock:
            stale = self._written.get(summary.segment, set()) - written
            self._written[summary.segment] = written
        for gauge, labels in stale:
            gauge.remove(*labels)

    def record_comparison(self, record: ComparisonRecord) -> None:
        """Set a comparison's series from its newest window (NaN: no verdict)."""
        for measure in record.measures:
            labels = (record.name, *_comparison_measure_labels(measure), record.window)
            for name, gauge in self._comparison.items():
                gauge.labels(*labels).set(_comparison_value(measure, name))

    def stand_down(self) -> None:
        """Another instance of the group decides now: its comparison series and alert states
        leave this instance's /metrics (the counters of firings stay)."""
        for gauge in self._comparison.values():
            gauge.clear()
        self.alerts.firing.clear()

    def retire_segment(self, segment: Segment) -> None:
        """Remove a retired segment's series: its window gauges and its alerts' states."""
        with self._lock:
            written = self._written.pop(segment, set())
            alerts = self._alert_series.pop(segment, set())
        for gauge, labels in written:
            gauge.remove(*labels)
        for alert, severity in alerts:
            self.alerts.remove(alert, severity, segment)

    def count_outcome(self, outcome: str, reason: str = "", amount: int = 1) -> None:
        """Count records by outcome (accepted, invalid, unknown_query, duplicate, late)."""
        self._outcomes.labels(outcome, reason).inc(amount)

    def set_watermark(self, partition: int, timestamp_ms: int) -> None:
        """The partition's event-time watermark."""
        self._watermark.labels(str(partition)).set(timestamp_ms / 1000.0)

    def set_consumer_lag(self, partition: int, records: int) -> None:
        """Records not yet consumed on the partition (high watermark minus position)."""
        self._lag.labels(str(partition)).set(records)

    def forget_partition(self, partition: int) -> None:
        """Drop a revoked partition's watermark and lag series."""
        for gauge in (self._watermark, self._lag):
            gauge.remove(str(partition))  # a no-op if it was never set

    def set_broker_up(self, up: bool) -> None:
        """Whether the broker answers; also one of the readiness conditions."""
        self._broker_up.set(float(up))
        self.readiness.broker_up = up

    def set_evaluation_set(self, version: str, queries: int) -> None:
        """The loaded evaluation set; marks it loaded for readiness."""
        self._evaluation_set.info({"version": version})
        self._evaluation_set_queries.set(queries)
        self.readiness.evaluation_set_loaded = True

    def count_share_trimmed(self, dropped: str) -> None:
        """A window share went without `dropped` to fit one record."""
        self._shares_trimmed.labels(dropped).inc()

    def reload_attempted(self, failed: bool) -> None:
        """A reload of the evaluation set was tried: it failed, or it loaded (or found the
        file unchanged)."""
        self._reloads.labels("failed" if failed else "ok").inc()
        self._reload_failing.set(float(failed))

    def set_alert_firing(self, alert: str, severity: str, segment: Segment, firing: bool) -> None:
        """An alert rule's state for one segment."""
        self.alerts.set_alert_firing(alert, severity, segment, firing)
        with self._lock:
            self._alert_series.setdefault(segment, set()).add((alert, severity))

    def count_alert_firing(self, alert: str, severity: str, segment: Segment) -> None:
        """An alert rule started firing for one segment."""
        self.alerts.count_alert_firing(alert, severity, segment)
        with self._lock:
            self._alert_series.setdefault(segment, set()).add((alert, severity))

    def count_unreadable(self, partition: int) -> None:
        """A partition was paused at a batch that could not be read."""
        self._unreadable.labels(str(partition)).inc()

    def count_consumer_error(self, error: str, amount: int = 1) -> None:
        """Polls that raised `error` (an exception type name)."""
        self._consumer_errors.labels(error).inc(amount)

    def count_alert_delivery(self, sink: str, result: str) -> None:
        """One alert's delivery outcome at a sink (`result`: delivered, failed, dropped)."""
        self.alerts.count_alert_delivery(sink, result)

    def _segment_values(self, segment: Segment) -> LabelValues:
        values = dict(segment)
        return tuple(values.get(key, "") for key in self.segment_keys)

    def _exported_labels(self, key_text: str) -> tuple[str, LabelValues] | None:
        try:
            key = MeasureKey.parse(key_text)
        except MeasureError:
            return None  # a summary from a newer rankmon may carry measures this one lacks
        kind = KINDS[key.kind]
        if kind.gauge is None or (_has_k(kind) and key.k is None):
            return None  # nDCG without cutoff stays in the summaries
        prefix = (str(key.k),) * _has_k(kind) + (str(key.gain),) * kind.gain
        return key.kind, prefix


def _comparison_measure_labels(measure: MeasureComparison) -> tuple[str, str, str]:
    """`ndcg@10:linear` -> (ndcg, 10, linear); `mrr` -> (mrr, "", "")."""
    key = MeasureKey.parse(measure.measure)
    gain = "" if key.gain is None else str(key.gain)
    return key.kind, "" if key.k is None else str(key.k), gain


def _comparison_value(measure: MeasureComparison, name: str) -> float:
    if name.startswith("sequence_") and not measure.sequence.windows:
        return float("nan")
    if name == "sequence_p_value":
        return measure.sequence.p_value
    if name == "replay_design":
        return float(measure.design == "replay")
    if name in _RESULT_FIELDS:
        return float(getattr(measure.result, name))
    return float(getattr(measure, name))


_RESULT_FIELDS = frozenset(PairedResult.__dataclass_fields__)


def _has_k(kind: MeasureKind) -> bool:
    """Whether the kind's gauge carries a `k` label (every kind that can take a cutoff)."""
    return kind.cutoff is not False
