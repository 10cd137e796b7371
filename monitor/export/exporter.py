"""`Exporter`: every series rankmon exports, on a `CollectorRegistry` passed in.

What is exported (names, types, help, labels) is `monitor.export.series`'s table, and only
there; docs/ARCHITECTURE.md "Exported series" says what each means. Quality gauges hold the
latest finalized window of each segment, set from a `WindowSummary`; comparison gauges the
latest window of each comparison and measure (NaN when the window gave no verdict).

The sums and `rankmon_window_queries` make the headline mergeable across instances (each
query lives on one instance, see docs/operations.md, "Scaling out"):
`sum without(instance) (rankmon_ndcg_sum_of_query_means)
 / ignoring(k, gain) group_left sum without(instance) (rankmon_window_queries)`.
With the squares they give the exact merged standard error too (`rankmon rules render`'s
`job:rankmon_<measure>:stderr`): sqrt(((sum sq) - (sum s)^2 / n) / (n - 1) / n), n the summed
queries. (promtool reserves the `_sum`, `_count` and `_total` suffixes for summaries and
counters, hence `_sum_of_query_means`.)

The per-window and comparison series are one custom collector (`LatestWindows`): it keeps
each segment's samples of its latest window and yields them at every scrape, so a segment's
series are always exactly those of its latest window: when the evaluation-set version (or the
set of measures) changes, nothing of its previous window is left behind, and a query over
`rankmon_ndcg` never sees two versions of one segment. The loop's own series (events,
watermarks, lag, readiness, reloads, alerts) are prometheus-client metrics made from the
same table.
"""

from __future__ import annotations

import math
import platform
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Info, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor import __version__
from monitor.clock import Clock
from monitor.comparisons.record import ComparisonRecord, MeasureComparison
from monitor.errors import MeasureError
from monitor.export.series import (
    COMPARISON_SERIES,
    CORRECTION_SERIES,
    JUDGED_SOURCE_SERIES,
    MEASURE_SERIES,
    PROCESS_SERIES,
    SAMPLED_ONLY,
    SEGMENT,
    WINDOW_SERIES,
    Series,
    label_values,
)
from monitor.scoring.catalog import KINDS, MeasureKey
from monitor.stats.judges import JudgeReading
from monitor.stats.paired import PairedResult
from monitor.windows.segments import label_name_problem
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["AlertSeries", "Exporter", "LatestWindows", "Liveness", "Readiness"]

LabelValues = tuple[str, ...]


@dataclass
class Readiness:
    """What `/readyz` requires: evaluation set loaded, consumer group joined, broker reachable,
    and no partition paused at a record batch that cannot be read."""

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
        self.firing = _gauge("rankmon_alert_firing", registry, self.segment_keys)
        self.firings = _counter("rankmon_alert_firings", registry, self.segment_keys)
        self.deliveries = _counter("rankmon_alert_deliveries", registry, self.segment_keys)

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


class LatestWindows(Collector):
    """The per-window and comparison series as one custom collector: each segment's samples
    of its latest window, each comparison's of its latest window, yielded at every scrape in
    the order of `monitor.export.series` (the loop thread writes, the HTTP thread reads)."""

    def __init__(self, segment_keys: Sequence[str], min_queries: int) -> None:
        self.segment_keys = tuple(segment_keys)
        self.min_queries = min_queries
        self._lock = threading.Lock()
        # segment -> series name -> [(label values, value)] of its latest window
        self._windows: dict[Segment, dict[str, list[tuple[LabelValues, float]]]] = {}
        # comparison label values -> series name -> value
        self._comparisons: dict[LabelValues, dict[str, float]] = {}
        # each per-window series with its label names, the segment keys spelled out
        self._window_series = [
            (series, _label_names(series, self.segment_keys))
            for series in (
                *(series for family in MEASURE_SERIES.values() for series in family),
                *WINDOW_SERIES,
                *CORRECTION_SERIES,
                *JUDGED_SOURCE_SERIES,
            )
        ]

    def _window_labels(self, summary: WindowSummary) -> LabelValues:
        """The window labels of a summary's samples: window, version, each segment key's."""
        segment = dict(summary.segment)
        return (
            summary.window,
            summary.evaluation_set_version,
            *(segment.get(key, "") for key in self.segment_keys),
        )

    def record_window(self, summary: WindowSummary, replay_noise: Mapping[str, float]) -> None:
        """Replace the segment's samples by those of `summary` (`Exporter.record_window`)."""
        too_few = summary.queries < self.min_queries
        base = self._window_labels(summary)
        samples: dict[str, list[tuple[LabelValues, float]]] = {}
        for key_text, mean in summary.means.items():
            exported = _exported_labels(key_text)
            if exported is None:
                continue
            kind, prefix = exported
            labels = (*prefix, *base)
            noise = replay_noise.get(key_text, float("nan"))
            by_field = {
                "mean": float("nan") if too_few else mean,
                "sum": summary.sums.get(key_text, float("nan")),
                "squares": summary.squares.get(key_text, float("nan")),
                "stderr": float("nan") if too_few else summary.stderr(key_text),
                "replay_stderr": float("nan") if too_few else noise,
            }
            for series in MEASURE_SERIES[kind]:
                samples.setdefault(series.name, []).append((labels, by_field[series.field]))
        window = {
            "queries": float(summary.queries),
            "events": float(summary.events),
            "failed": float(summary.failed_queries),
            "coverage": summary.coverage,
            "end": summary.end_ms / 1000.0,
        }
        for series in WINDOW_SERIES:
            samples[series.name] = [(base, window[series.field])]
        with self._lock:
            self._windows[summary.segment] = samples

    def record_correction(
        self, summary: WindowSummary, measure: str, values: Mapping[str, float]
    ) -> None:
        """Add the window's corrected `measure` (`estimate`, `lower`, `upper`, `audited`) to
        the samples `record_window` set from it."""
        exported = _exported_labels(measure)
        if exported is None:
            return
        labels = (*exported[1], *self._window_labels(summary))
        # Too few audited queries: no corrected headline at all, only how many there were.
        self._add(
            summary.segment,
            {
                series.name: [(labels, value)]
                for series in CORRECTION_SERIES
                if not math.isnan(value := values[series.field])
            },
        )

    def record_judged_sources(
        self, summary: WindowSummary, shares: Mapping[tuple[int, str], float]
    ) -> None:
        """Add the window's judged@k split by source ((k, source) -> share) to the samples
        `record_window` set from it."""
        base = self._window_labels(summary)
        rows = [((str(k), source, *base), share) for (k, source), share in shares.items()]
        self._add(summary.segment, {series.name: rows for series in JUDGED_SOURCE_SERIES})

    def _add(self, segment: Segment, rows: Mapping[str, list[tuple[LabelValues, float]]]) -> None:
        """Add series to the samples of the segment's latest window (none: nothing)."""
        with self._lock:
            samples = self._windows.get(segment)
            if samples is not None:
                samples.update(rows)

    def record_comparison(self, record: ComparisonRecord) -> None:
        """Set a comparison's samples from its newest window (NaN: no verdict)."""
        with self._lock:
            for measure in record.measures:
                labels = (record.name, *_comparison_measure_labels(measure), record.window)
                self._comparisons[labels] = {
                    series.name: _comparison_value(measure, series.field)
                    for series in COMPARISON_SERIES
                }

    def retire(self, segment: Segment) -> None:
        """Forget a retired segment's samples."""
        with self._lock:
            self._windows.pop(segment, None)

    def clear_comparisons(self) -> None:
        """Forget every comparison's samples."""
        with self._lock:
            self._comparisons.clear()

    def collect(self) -> Iterator[Metric]:
        """One gauge family per series of the table, with every segment's samples."""
        with self._lock:
            windows = list(self._windows.values())
            comparisons = list(self._comparisons.items())
        for series, names in self._window_series:
            family = GaugeMetricFamily(series.name, series.help, labels=names)
            for samples in windows:
                for labels, value in samples.get(series.name, ()):
                    family.add_metric(list(labels), value)
            if family.samples or series.name not in SAMPLED_ONLY:
                yield family
        for series in COMPARISON_SERIES:
            family = GaugeMetricFamily(series.name, series.help, labels=list(series.labels))
            for labels, values in comparisons:
                family.add_metric(list(labels), values[series.name])
            yield family


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
        for key in self.segment_keys:
            problem = label_name_problem(key)
            if problem is not None:
                raise ValueError(f"segment key {problem}")
        self.readiness = Readiness()
        self.liveness = liveness
        self._lock = threading.Lock()
        # segment -> the (alert, severity) of its alert series
        self._alert_series: dict[Segment, set[tuple[str, str]]] = {}
        self.latest = LatestWindows(self.segment_keys, min_queries)
        registry.register(self.latest)
        self._register_stream_series(registry)
        self._register_status_series(registry)
        if process_metrics:
            ProcessCollector(registry=registry)

    def _register_stream_series(self, registry: CollectorRegistry) -> None:
        self._outcomes = _counter("rankmon_events", registry)
        self._watermark = _gauge("rankmon_watermark_timestamp_seconds", registry)
        self._lag = _gauge("rankmon_consumer_lag_records", registry)
        self._unreadable = _counter("rankmon_unreadable_batches", registry)
        self._consumer_errors = _counter("rankmon_consumer_errors", registry)

    def _register_status_series(self, registry: CollectorRegistry) -> None:
        self._broker_up = _gauge("rankmon_broker_up", registry)
        ready = _gauge("rankmon_ready", registry)
        ready.set_function(lambda: float(self.readiness.ready))
        progress = _gauge("rankmon_loop_progress_timestamp_seconds", registry)
        liveness = self.liveness
        progress.set_function(lambda: float("nan") if liveness is None else liveness.at_ms / 1e3)
        self._evaluation_set = _info("rankmon_evaluation_set", registry)
        self._evaluation_set_queries = _gauge("rankmon_evaluation_set_queries", registry)
        self._reloads = _counter("rankmon_evaluation_set_reloads", registry)
        self._shares_trimmed = _counter("rankmon_window_shares_trimmed", registry)
        self._forced = _counter("rankmon_group_forced_decisions", registry)
        self._refused = _counter("rankmon_control_records_refused", registry)
        self._reload_failing = _gauge("rankmon_evaluation_set_reload_failing", registry)
        self._judgments = _counter("rankmon_judgments", registry)
        self._pairs = _counter("rankmon_judging_pairs", registry)
        self._pairs_pending = _gauge("rankmon_judging_pairs_pending", registry)
        self._judge_kappa = _gauge("rankmon_judge_kappa", registry)
        self._judge_bias = _gauge("rankmon_judge_bias", registry)
        self._judge_pairs = _gauge("rankmon_judge_audit_pairs", registry)
        self._judge_confusion = _gauge("rankmon_judge_confusion", registry)
        build = _info("rankmon_build", registry)
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
        self.latest.record_window(summary, replay_noise or {})

    def record_correction(
        self, summary: WindowSummary, measure: str, values: Mapping[str, float]
    ) -> None:
        """The window's `measure` corrected by the judge's audit (after `record_window`)."""
        self.latest.record_correction(summary, measure, values)

    def record_judged_sources(
        self, summary: WindowSummary, shares: Mapping[tuple[int, str], float]
    ) -> None:
        """The window's judged@k split by source (after `record_window`)."""
        self.latest.record_judged_sources(summary, shares)

    def record_comparison(self, record: ComparisonRecord) -> None:
        """Set a comparison's series from its newest window (NaN: no verdict)."""
        self.latest.record_comparison(record)

    def stand_down(self) -> None:
        """Another instance of the group decides now: its comparison series and alert states
        leave this instance's /metrics (the counters of firings stay)."""
        self.latest.clear_comparisons()
        self.alerts.firing.clear()

    def retire_segment(self, segment: Segment) -> None:
        """Remove a retired segment's series: its window gauges and its alerts' states."""
        self.latest.retire(segment)
        with self._lock:
            alerts = self._alert_series.pop(segment, set())
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

    def count_judgment(self, outcome: str, reason: str = "") -> None:
        """A judgment read from the judgments topic: accepted, audit or refused (why)."""
        self._judgments.labels(outcome, reason).inc()

    def count_pairs(self, outcome: str, amount: int) -> None:
        """Pairs published to the to-judge topic (asked), or dropped from its queue."""
        self._pairs.labels(outcome).inc(amount)

    def set_pairs_pending(self, pending: int) -> None:
        """Pairs waiting for the judging budget."""
        self._pairs_pending.set(pending)

    def set_judges(self, readings: Sequence[JudgeReading]) -> None:
        """Each model judge's agreement with the people (`monitor.stats.judges`)."""
        for reading in readings:
            source = reading.source
            self._judge_kappa.labels(source).set(reading.kappa)
            self._judge_bias.labels(source).set(reading.bias)
            self._judge_pairs.labels(source).set(reading.total)
            for human, row in zip(reading.grades, reading.confusion, strict=True):
                for model, count in zip(reading.grades, row, strict=True):
                    self._judge_confusion.labels(source, str(human), str(model)).set(count)

    def count_share_trimmed(self, dropped: str) -> None:
        """A window share went without `dropped` to fit one record."""
        self._shares_trimmed.labels(dropped).inc()

    def count_forced_decision(self, reason: str) -> None:
        """A window decided for the group without every member's final word (why)."""
        self._forced.labels(reason).inc()

    def count_refused(self, topic: str, reason: str) -> None:
        """A record of the windows or to-judge topic refused for a limit (`monitor.limits`)."""
        self._refused.labels(topic, reason).inc()

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
        """A partition was paused at a record batch that could not be read."""
        self._unreadable.labels(str(partition)).inc()

    def count_consumer_error(self, error: str, amount: int = 1) -> None:
        """Polls that raised `error` (an exception type name)."""
        self._consumer_errors.labels(error).inc(amount)

    def count_alert_delivery(self, sink: str, result: str) -> None:
        """One alert's delivery outcome at a sink (`result`: delivered, failed, dropped)."""
        self.alerts.count_alert_delivery(sink, result)


def _exported_labels(key_text: str) -> tuple[str, LabelValues] | None:
    """The kind and the measure label values (`k`, `gain`, parameters) of an exported key;
    None for a key that is not exported (nDCG without cutoff stays in the summaries)."""
    try:
        key = MeasureKey.parse(key_text)
    except MeasureError:
        return None  # a summary from a newer rankmon may carry measures this one lacks
    kind = KINDS[key.kind]
    if kind.gauge is None or (kind.cutoff is not False and key.k is None):
        return None
    return key.kind, tuple(label_values(key).values())


_TABLE: Final = {series.name: series for series in PROCESS_SERIES}


def _label_names(series: Series, segment_keys: Sequence[str]) -> list[str]:
    """The series' label names with `SEGMENT` spelled out."""
    names: list[str] = []
    for label in series.labels:
        names.extend(segment_keys if label == SEGMENT else [label])
    return names


def _gauge(name: str, registry: CollectorRegistry, segment_keys: Sequence[str] = ()) -> Gauge:
    series = _TABLE[name]
    return Gauge(name, series.help, _label_names(series, segment_keys), registry=registry)


def _counter(name: str, registry: CollectorRegistry, segment_keys: Sequence[str] = ()) -> Counter:
    series = _TABLE[name]
    return Counter(name, series.help, _label_names(series, segment_keys), registry=registry)


def _info(name: str, registry: CollectorRegistry) -> Info:
    """An info series; its label names are set by `.info()`, not declared."""
    return Info(name, _TABLE[name].help, registry=registry)


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
