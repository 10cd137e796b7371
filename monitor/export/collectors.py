"""The loop's own series, one collector per concern (as client_python's collectors are).

Each concern's series are made from the one table (`monitor.export.series.PROCESS_SERIES`)
without a registry, and the concern is registered as one `Collector`: `collect()` yields its
families with their samples, `describe()` the same families without samples (what a registry
reads at `register` to refuse a name registered twice). The `Exporter` holds one of each:

| collector | series |
|---|---|
| `StreamSeries` | events by outcome, watermarks, lag, unreadable batches, poll errors, broker |
| `StatusSeries` | ready, the poll loop's progress, the build |
| `EvaluationSetSeries` | the evaluation set's version and queries, its reloads |
| `ControlSeries` | control records: window shares trimmed, forced decisions, records refused |
| `JudgingSeries` | judgments, pairs asked and pending, each judge's agreement with people |
| `AlertSeries` | alert states, firings, deliveries |

The per-window and comparison series are `monitor.export.exporter.LatestWindows`.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Info
from prometheus_client.core import Metric
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from monitor import __version__
from monitor.export.series import PROCESS_SERIES, SEGMENT, Series
from monitor.stats.judges import JudgeReading
from monitor.windows.summary import Segment

__all__ = [
    "AlertSeries",
    "ControlSeries",
    "EvaluationSetSeries",
    "JudgingSeries",
    "SeriesCollector",
    "StatusSeries",
    "StreamSeries",
    "label_names",
]

_TABLE: Final = {series.name: series for series in PROCESS_SERIES}


def label_names(series: Series, segment_keys: Sequence[str]) -> list[str]:
    """The series' label names with `SEGMENT` spelled out."""
    names: list[str] = []
    for label in series.labels:
        names.extend(segment_keys if label == SEGMENT else [label])
    return names


class SeriesCollector(Collector):
    """A concern's series, made from the table and collected together."""

    def __init__(self, segment_keys: Sequence[str] = ()) -> None:
        self.segment_keys = tuple(sorted(segment_keys))
        self._metrics: list[MetricWrapperBase] = []

    def collect(self) -> Iterator[Metric]:
        for metric in self._metrics:
            yield from metric.collect()

    def describe(self) -> Iterator[Metric]:
        for metric in self._metrics:
            yield from metric.describe()

    def _gauge(self, name: str) -> Gauge:
        series = _TABLE[name]
        gauge = Gauge(name, series.help, label_names(series, self.segment_keys), registry=None)
        self._metrics.append(gauge)
        return gauge

    def _counter(self, name: str) -> Counter:
        series = _TABLE[name]
        counter = Counter(name, series.help, label_names(series, self.segment_keys), registry=None)
        self._metrics.append(counter)
        return counter

    def _info(self, name: str) -> Info:
        """An info series; its label names are set by `.info()`, not declared."""
        info = Info(name, _TABLE[name].help, registry=None)
        self._metrics.append(info)
        return info


class StreamSeries(SeriesCollector):
    """What the consumer reads: events by outcome, each partition's watermark and lag, batches
    that cannot be read, poll errors, and whether the broker answers."""

    def __init__(self) -> None:
        super().__init__()
        self._outcomes = self._counter("rankmon_events")
        self._watermark = self._gauge("rankmon_watermark_timestamp_seconds")
        self._lag = self._gauge("rankmon_consumer_lag_records")
        self._unreadable = self._counter("rankmon_unreadable_batches")
        self._errors = self._counter("rankmon_consumer_errors")
        self._broker_up = self._gauge("rankmon_broker_up")

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

    def count_unreadable(self, partition: int) -> None:
        """A partition was paused at a record batch that could not be read."""
        self._unreadable.labels(str(partition)).inc()

    def count_consumer_error(self, error: str, amount: int = 1) -> None:
        """Polls that raised `error` (an exception type name)."""
        self._errors.labels(error).inc(amount)

    def set_broker_up(self, up: bool) -> None:
        """Whether the broker answers."""
        self._broker_up.set(float(up))


class StatusSeries(SeriesCollector):
    """The process: ready (`ready()`, read at each scrape), when the poll loop last made
    progress (`progress_s()`, NaN: not tracked), and the build."""

    def __init__(self, ready: Callable[[], bool], progress_s: Callable[[], float]) -> None:
        super().__init__()
        self._gauge("rankmon_ready").set_function(lambda: float(ready()))
        self._gauge("rankmon_loop_progress_timestamp_seconds").set_function(progress_s)
        build = self._info("rankmon_build")
        build.info({"version": __version__, "python": platform.python_version()})


class EvaluationSetSeries(SeriesCollector):
    """The evaluation set in use and its reloads."""

    def __init__(self) -> None:
        super().__init__()
        self._version = self._info("rankmon_evaluation_set")
        self._queries = self._gauge("rankmon_evaluation_set_queries")
        self._reloads = self._counter("rankmon_evaluation_set_reloads")
        self._failing = self._gauge("rankmon_evaluation_set_reload_failing")

    def set_evaluation_set(self, version: str, queries: int) -> None:
        """The loaded evaluation set."""
        self._version.info({"version": version})
        self._queries.set(queries)

    def reload_attempted(self, failed: bool) -> None:
        """A reload was tried: it failed, or it loaded (or found the file unchanged)."""
        self._reloads.labels("failed" if failed else "ok").inc()
        self._failing.set(float(failed))


class ControlSeries(SeriesCollector):
    """The control records instances exchange: shares trimmed to fit, windows decided without
    every member's word, records refused for a limit (`monitor.limits`)."""

    def __init__(self) -> None:
        super().__init__()
        self._trimmed = self._counter("rankmon_window_shares_trimmed")
        self._forced = self._counter("rankmon_group_forced_decisions")
        self._refused = self._counter("rankmon_control_records_refused")

    def count_share_trimmed(self, dropped: str) -> None:
        """A window share went without `dropped` to fit one record."""
        self._trimmed.labels(dropped).inc()

    def count_forced_decision(self, reason: str) -> None:
        """A window decided for the group without every member's final word (why)."""
        self._forced.labels(reason).inc()

    def count_refused(self, topic: str, reason: str) -> None:
        """A record of the windows or to-judge topic refused for a limit."""
        self._refused.labels(topic, reason).inc()


class JudgingSeries(SeriesCollector):
    """The judging loop: judgments read, pairs asked and waiting, and each model judge's
    agreement with the people (`monitor.stats.judges`)."""

    def __init__(self) -> None:
        super().__init__()
        self._judgments = self._counter("rankmon_judgments")
        self._pairs = self._counter("rankmon_judging_pairs")
        self._pending = self._gauge("rankmon_judging_pairs_pending")
        self._kappa = self._gauge("rankmon_judge_kappa")
        self._bias = self._gauge("rankmon_judge_bias")
        self._audited = self._gauge("rankmon_judge_audit_pairs")
        self._confusion = self._gauge("rankmon_judge_confusion")

    def count_judgment(self, outcome: str, reason: str = "") -> None:
        """A judgment read from the judgments topic: accepted, audit or refused (why)."""
        self._judgments.labels(outcome, reason).inc()

    def count_pairs(self, outcome: str, amount: int) -> None:
        """Pairs published to the to-judge topic (asked), or dropped from its queue."""
        self._pairs.labels(outcome).inc(amount)

    def set_pairs_pending(self, pending: int) -> None:
        """Pairs waiting for the judging budget."""
        self._pending.set(pending)

    def set_judges(self, readings: Sequence[JudgeReading]) -> None:
        """Each model judge's agreement with the people."""
        for reading in readings:
            source = reading.source
            self._kappa.labels(source).set(reading.kappa)
            self._bias.labels(source).set(reading.bias)
            self._audited.labels(source).set(reading.total)
            for human, row in zip(reading.grades, reading.confusion, strict=True):
                for model, count in zip(reading.grades, row, strict=True):
                    self._confusion.labels(source, str(human), str(model)).set(count)


class AlertSeries(SeriesCollector):
    """The alerting stage's series; the `Exporter` holds one, and tools and tests that
    alert without it register their own.

    - `rankmon_alert_firing{alert,severity,<segment keys>}`: 1 while the rule fires in that
      segment, 0 once it has been evaluated there and is not firing;
    - `rankmon_alert_firings_total{alert,severity,<segment keys>}`: each time the rule
      started firing there, also when it resolved within the same tick (a backlog of
      windows), which the gauge cannot show;
    - `rankmon_alert_deliveries_total{sink,result}`: notifications handed to a sink, one
      per alert, by result: `delivered`, `failed` (retried), `dropped` (the bounded queue
      was full).
    """

    def __init__(
        self, segment_keys: Sequence[str] = (), *, registry: CollectorRegistry | None = None
    ) -> None:
        super().__init__(segment_keys)
        self.firing = self._gauge("rankmon_alert_firing")
        self.firings = self._counter("rankmon_alert_firings")
        self.deliveries = self._counter("rankmon_alert_deliveries")
        if registry is not None:  # a tool's own registry
            registry.register(self)

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
