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
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor.clock import Clock
from monitor.comparisons.record import ComparisonRecord, MeasureComparison
from monitor.errors import MeasureError
from monitor.export.collectors import (
    AlertSeries,
    ControlSeries,
    EvaluationSetSeries,
    JudgingSeries,
    StatusSeries,
    StreamSeries,
    label_names,
)
from monitor.export.series import (
    COMPARISON_SERIES,
    CORRECTION_SERIES,
    JUDGED_SOURCE_SERIES,
    MEASURE_SERIES,
    SAMPLED_ONLY,
    WINDOW_SERIES,
    label_values,
)
from monitor.scoring.catalog import KINDS, MeasureKey
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
            (series, label_names(series, self.segment_keys))
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

    def describe(self) -> Iterator[Metric]:
        """Every family `collect` may yield, without samples (a registry reads the names)."""
        for series, names in self._window_series:
            yield GaugeMetricFamily(series.name, series.help, labels=names)
        for series in COMPARISON_SERIES:
            yield GaugeMetricFamily(series.name, series.help, labels=list(series.labels))

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
    """Owns every rankmon series on `registry`; segment label names come from config.

    The loop's own series are collectors per concern (`monitor.export.collectors`), each
    registered whole: `stream`, `status`, `evaluation_set`, `control`, `judging`, `alerts`;
    the per-window and comparison series are `latest`. Callers write to the concern (`exporter
    .stream.set_watermark(...)`); the methods here are those that touch more than one
    (readiness, a segment's retirement) and those the loop's stages call through protocols.
    """

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
        self.stream = StreamSeries()
        self.status = StatusSeries(lambda: self.readiness.ready, self._progress_s)
        self.evaluation_set = EvaluationSetSeries()
        self.control = ControlSeries()
        self.judging = JudgingSeries()
        self.alerts = AlertSeries(self.segment_keys)
        for collector in (
            self.latest, self.stream, self.status, self.evaluation_set, self.control,
            self.judging, self.alerts,
        ):  # fmt: skip
            registry.register(collector)
        if process_metrics:
            ProcessCollector(registry=registry)

    def _progress_s(self) -> float:
        liveness = self.liveness
        return float("nan") if liveness is None else liveness.at_ms / 1e3

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

    def set_broker_up(self, up: bool) -> None:
        """Whether the broker answers; also one of the readiness conditions."""
        self.stream.set_broker_up(up)
        self.readiness.broker_up = up

    def set_evaluation_set(self, version: str, queries: int) -> None:
        """The loaded evaluation set; marks it loaded for readiness."""
        self.evaluation_set.set_evaluation_set(version, queries)
        self.readiness.evaluation_set_loaded = True

    def set_alert_firing(self, alert: str, severity: str, segment: Segment, firing: bool) -> None:
        """An alert rule's state for one segment (remembered, to retire with the segment)."""
        self.alerts.set_alert_firing(alert, severity, segment, firing)
        with self._lock:
            self._alert_series.setdefault(segment, set()).add((alert, severity))

    def count_alert_firing(self, alert: str, severity: str, segment: Segment) -> None:
        """An alert rule started firing for one segment (remembered, as above)."""
        self.alerts.count_alert_firing(alert, severity, segment)
        with self._lock:
            self._alert_series.setdefault(segment, set()).add((alert, severity))

    def count_alert_delivery(self, sink: str, result: str) -> None:
        """One alert's delivery outcome at a sink (`result`: delivered, failed, dropped)."""
        self.alerts.count_alert_delivery(sink, result)

    # What the stages' protocols name (`handoff.OutcomeCounter`, `judging.loop`'s counter).

    def count_outcome(self, outcome: str, reason: str = "", amount: int = 1) -> None:
        """Count records by outcome (accepted, invalid, unknown_query, duplicate, late)."""
        self.stream.count_outcome(outcome, reason, amount)

    def count_judgment(self, outcome: str, reason: str = "") -> None:
        """A judgment read from the judgments topic: accepted, audit or refused (why)."""
        self.judging.count_judgment(outcome, reason)

    def count_pairs(self, outcome: str, amount: int) -> None:
        """Pairs published to the to-judge topic (asked), or dropped from its queue."""
        self.judging.count_pairs(outcome, amount)

    def set_pairs_pending(self, pending: int) -> None:
        """Pairs waiting for the judging budget."""
        self.judging.set_pairs_pending(pending)

    def count_refused(self, topic: str, reason: str) -> None:
        """A record of the windows or to-judge topic refused for a limit (`monitor.limits`)."""
        self.control.count_refused(topic, reason)


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
