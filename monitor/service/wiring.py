"""The monitor's composition: each stage built from the config, and the IO it is handed.

`Monitor` (`monitor.service.loop`) calls these once, at construction; nothing here runs in
the loop. Tests pass their own IO (`source`, `producer`, `windows_topic`, `server`) and get
everything else built as in production.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from monitor.alerting import AlertDelivery, AlertEngine
from monitor.checkpoint.restore import ShareReader
from monitor.checkpoint.steps import StepHook, ignore_step
from monitor.clock import Clock
from monitor.config.loader import Config
from monitor.errors import ConfigError
from monitor.explain.store import ExplainStore
from monitor.export.exporter import Exporter
from monitor.export.http import HttpEndpoint, MetricsServer, PostRoute, Route
from monitor.ingest.deadletter import DeadLetterSink
from monitor.ingest.events import EventDecoder
from monitor.ingest.handoff import DocumentKeeper, Handoff
from monitor.ingest.intake import Intake
from monitor.ingest.settings import INLINE_SOURCE
from monitor.judging.desk import JudgingDesk
from monitor.judging.documents import DocumentShelf
from monitor.judging.loop import JudgingLoop
from monitor.judging.page import JudgingPage
from monitor.judging.people import People, read_tokens
from monitor.judging.topics import RecordFeed, TopicFeed
from monitor.kafka.consumer import EventStream
from monitor.kafka.producer import RecordSink
from monitor.replay.topics import query_texts as read_query_texts
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.windows.engine import EventWindows
from monitor.windows.samples import RankingSamples
from monitor.windows.segments import SegmentLabeler
from monitor.windows.spec import WindowSpec

__all__ = [
    "MonitorIo",
    "Tally",
    "bind_error",
    "build_alerts",
    "build_intake",
    "build_judging",
    "event_decoder",
    "explain_state",
    "inline_fills",
    "labeler",
    "metrics_server",
    "window_spec",
]


@dataclass(frozen=True)
class MonitorIo:
    """Everything the monitor takes from or gives to the world outside it, in one bundle: the
    clock, the metrics registry, the event source, the producer (shares, comparisons, dead
    letters, progress), the windows topic's reader, the HTTP server, and who sees each step
    of the commit protocol (`rankmon run`'s crash points). None: the real one the config
    describes; tests hand fakes, and then nothing touches the network or the wall clock."""

    clock: Clock | None = None
    registry: CollectorRegistry | None = None
    step_hook: StepHook = ignore_step
    source: EventStream | None = None
    producer: RecordSink | None = None
    windows_topic: ShareReader | None = None
    server: HttpEndpoint | None = None
    # The judging loop's topics (to-judge, judgments) as read back; None: the configured ones.
    judging_feeds: tuple[RecordFeed, RecordFeed] | None = None


@dataclass
class Tally:
    """Forwards outcome counts to the exporter and keeps totals for the snapshot."""

    exporter: Exporter
    totals: dict[str, int] = field(default_factory=dict)

    def count_outcome(self, outcome: str, reason: str = "", amount: int = 1) -> None:
        self.exporter.count_outcome(outcome, reason, amount)
        self.totals[outcome] = self.totals.get(outcome, 0) + amount


def bind_error(host: str, port: int, error: OSError) -> ConfigError:
    """The user's to fix: which key, and what the system said."""
    # asyncio rewords the system's message ("error while attempting to bind on ..."): say
    # what the errno says.
    if isinstance(error, socket.gaierror):
        return ConfigError("export.host", f"cannot resolve {host!r}: {error.strerror}")
    reason = os.strerror(error.errno) if error.errno else str(error)
    if error.errno == errno.EADDRNOTAVAIL:
        return ConfigError("export.host", f"{host!r} is not an address of this machine: {reason}")
    return ConfigError("export.port", f"cannot listen on {host}:{port}: {reason}")


def window_spec(config: Config) -> WindowSpec:
    windows = config.windows
    return WindowSpec(
        size_ms=windows.size.ms,
        hop_ms=windows.hop.ms,
        allowed_lateness_ms=windows.allowed_lateness.ms,
        idle_timeout_ms=windows.idle_timeout.ms,
        label=windows.size.text,
    )


def labeler(config: Config) -> SegmentLabeler:
    segments = config.segments
    return SegmentLabeler(
        segments.keys,
        segments.max_values,
        max_combinations=segments.max_combinations,
        retire_after_ms=segments.retire_after.ms,
    )


def event_decoder(config: Config) -> EventDecoder:
    """The decoder with ingest's limits (the `events` and `segments` sections) and the
    topics' record size limit (`kafka.max_record_bytes`, which every stage that reads or
    writes a topic keeps to)."""
    events, segments = config.events, config.segments
    return EventDecoder(
        max_depth=events.max_depth,
        max_bytes=config.kafka.max_record_bytes,
        max_future_ms=events.max_future.ms,
        segment_keys=frozenset(segments.keys),
        use_event_time=events.time_source == "event",
        max_id_bytes=events.max_id_bytes,
        max_value_bytes=segments.max_value_bytes,
        max_clock_skew_ms=config.windows.max_clock_skew.ms,
        max_document_bytes=events.max_document_bytes,
    )


def explain_state(
    config: Config, measures: list[str]
) -> tuple[ExplainStore, RankingSamples | None]:
    """The kept windows and the sampled rankings the explanations read."""
    settings = config.explain
    store = ExplainStore(measures, keep=settings.keep_windows, segments=settings.max_segments)
    spec = window_spec(config)
    if not settings.max_rankings:
        return store, None
    depth = max(config.metrics.cutoffs)
    return store, RankingSamples(
        spec.hop_ms or spec.size_ms, depth, settings.max_rankings, settings.max_sample_bytes
    )


def inline_fills(config: Config) -> bool:
    """Whether the events' inline judgments fill the evaluation set's gaps: `judgments.inline:
    fill`, and their source (`inline`) among those that score (`evaluation_set.sources`)."""
    kept = config.evaluation_set.sources
    return config.judgments.inline == "fill" and (not kept or INLINE_SOURCE in kept)


def build_judging(
    config: Config,
    base: EvaluationSet,
    producer: RecordSink,
    exporter: Exporter,
    feeds: tuple[RecordFeed, RecordFeed] | None,
    *,
    new_scorer: Callable[[EvaluationSet], Scorer],
    now_ms: Callable[[], int],
    texts: Mapping[str, str] | None = None,
) -> JudgingLoop | None:
    """The judging loop, when `judging.enabled` (its topics read with the events' options;
    `new_scorer` scores the sampled rankings again under the judges' views; `texts` each
    query's text). It keeps what events say of their documents (its `shelf`, filled by the
    handoff) and, with `judging.page`, the page's work (its `desk`)."""
    judging = config.judging
    if not judging.enabled:
        return None
    shelf = DocumentShelf(judging.max_documents_bytes) if judging.max_documents_bytes else None
    desk = None
    if judging.page:
        desk = JudgingDesk(
            judging.audit_rate,
            judging.max_pending,
            config.events.max_document_bytes,
            texts,
            None if shelf is None else shelf.get,
        )
    asked, judgments = feeds or (
        TopicFeed(config.kafka, judging.tojudge_topic, "tojudge"),
        TopicFeed(config.kafka, judging.judgments_topic, "judgments"),
    )
    return JudgingLoop(
        judging,
        base,
        gain=config.metrics.gain_names[0],
        producer=producer,
        dead_letters=DeadLetterSink(
            producer, config.kafka.dead_letter_topic, config.kafka.max_record_bytes
        ),
        counter=exporter,
        asked=asked,
        judgments=judgments,
        limits=config.record_limits,
        now_ms=now_ms,
        new_scorer=new_scorer,
        keep=config.evaluation_set.sources,
        texts=texts,
        shelf=shelf,
        desk=desk,
    )


def build_intake(
    config: Config,
    windows: EventWindows,
    producer: RecordSink,
    counter: Tally,
    samples: RankingSamples | None,
    *,
    documents: DocumentKeeper | None = None,
) -> tuple[Intake, Handoff]:
    """What decodes and scores each poll, and what hands the result on (dead letters,
    outcome counts, windows, ranking samples)."""
    dead_letters = DeadLetterSink(
        producer, config.kafka.dead_letter_topic, config.kafka.max_record_bytes
    )
    assert windows.labeler is not None
    intake = Intake(
        event_decoder(config),
        windows.labeler,
        windows,
        inline_judgments=inline_fills(config),
    )
    return intake, Handoff(windows, dead_letters, counter, samples, documents)


def query_texts(config: Config) -> dict[str, str]:
    """Each query's text, from `evaluation_set.topics` (or `replay.topics`), for people who
    read query ids: the alerts' worst queries, the page and /explain. None without either;
    an unreadable file is an `InputError` at start."""
    path = config.evaluation_set.topics
    if path is None and config.replay is not None:
        path = config.replay.topics
    return {} if path is None else read_query_texts(path)


def build_alerts(
    config: Config, clock: Clock, exporter: Exporter, texts: Mapping[str, str] | None = None
) -> tuple[AlertDelivery, AlertEngine, int, frozenset[str]]:
    """The alert engine, its delivery, and what its restore needs: how many windows per
    segment (`AlertRule.restore_windows`, the largest over the rules) and of which measures.
    `texts`: the queries' texts the alerts show."""
    alerting = config.alerts
    delivery = AlertDelivery.from_config(alerting, clock, exporter)
    start = int(clock.monotonic() * 1000)  # stale rules measure silence on this clock
    engine = AlertEngine(
        alerting, start_ms=start, delivery=delivery, metrics=exporter, query_texts=texts
    )
    windows = max((rule.restore_windows for rule in alerting.rules), default=0)
    return delivery, engine, windows, frozenset(rule.measure for rule in alerting.rules)


def metrics_server(
    config: Config,
    registry: CollectorRegistry,
    exporter: Exporter,
    routes: Mapping[str, Route],
    posts: Mapping[str, PostRoute] | None = None,
) -> MetricsServer:
    liveness = exporter.liveness
    return MetricsServer.from_settings(
        config.export,
        registry,
        exporter.readiness.missing,
        routes=routes,
        posts=posts,
        stalled=None if liveness is None else liveness.stalled,
    )


def judging_page(
    config: Config, judging: JudgingLoop | None, producer: RecordSink, now_ms: Callable[[], int]
) -> JudgingPage | None:
    """The judging page for people, with `judging.page` (its people's tokens read now: an
    unreadable file is an `InputError` at start)."""
    if judging is None or judging.desk is None:
        return None
    settings = config.judging
    tokens = None if settings.people_tokens is None else read_tokens(settings.people_tokens)
    book = judging.book
    return JudgingPage(
        judging.desk,
        People(settings.people_header, tokens),
        producer,
        settings.judgments_topic,
        grades=lambda: book.grades,
        known_query=lambda query: query in book.base,
        max_id_bytes=config.events.max_id_bytes,
        now_ms=now_ms,
    )
