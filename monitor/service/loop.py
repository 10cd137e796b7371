"""The streaming monitor: Kafka -> intake -> windows -> (tick) -> summaries out, offsets in.

`Monitor.run(stop)` is the poll loop. Everything stateful (the consumer, the windows, the
producer) lives on that one thread: kafka-python's consumer is not thread-safe, and a single
owner needs no locks. The loop runs the tick between two polls when the schedule says it is
due (`monitor.clock.TickSchedule`, on the monotonic clock: a wall clock stepped back neither
stops nor bursts the ticks); a poll waits at most `POLL_TIMEOUT_MS`, so a tick is late by at
most that much. Each completed iteration counts as progress for `/healthz`
(`monitor.export.exporter.Liveness`).

A tick, in this order (docs/recovery.md, "The rules"; the commit protocol's own steps are
`monitor.checkpoint.protocol.Checkpoint`'s):

1. finalize the windows the watermark has closed;
2. compute the comparisons of those windows and publish them, then the summaries (one
   share per window and segment), and flush the dead letters,
   waiting for the broker's ack, behind a commit fence;
3. set the gauges, log one line per window, evaluate the alert rules and the comparison
   alert rules (the comparisons were computed in step 2, before the shares: see
   `monitor.checkpoint.comparisons`);
4. commit the offsets that are safe: up to the first record of the oldest open window.

Step 1 also closes windows on processing time when the stream is quiet: every owned partition
idle for `windows.idle_timeout`, the broker answering and nothing left to fetch
(`monitor.windows.watermark`), so a scheduled replay's last window does not wait for the next
replay. A replay of `rankmon replay` closes sooner: once every owned partition delivered its
end marker, the windows holding it close at the next tick (`monitor.windows.replay_ends`).

If step 2 fails (broker down, group moved on, a flush not acknowledged) nothing is committed;
the shares stay held, those already handed to the producer too, until a publish acknowledges
every one. Windows finalized meanwhile join them behind the fence of the oldest, so no commit
passes a window whose share is not acknowledged. While the consumer sees no broker the tick
does not even try: `rankmon_broker_up` is 0, `/readyz` fails, and the loop keeps polling with
backoff; nothing here exits on a Kafka error.

A partition paused at a record batch that cannot be read (`EventSource.unreadable`) is reported on
`/readyz` and counted; the others go on.

Rebalances arrive with the poll (`_rebalance`). A partition arriving makes every owned
partition replay from its committed offset, after the windows topic was read back: what was
published is marked, so the replay skips it, and alert baselines are restored. Partitions only
leaving just drop their state. docs/recovery.md has the whole story.

`close()` finalizes nothing early: it flushes what is queued, commits the safe offsets and
closes; `rankmon run` bounds it with a watchdog.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry

from monitor.checkpoint.comparisons import ComparisonPublisher
from monitor.checkpoint.protocol import Checkpoint
from monitor.checkpoint.publisher import ProgressPublisher, SharePublisher
from monitor.checkpoint.windows_topic import WindowsTopic
from monitor.clock import Clock, SystemClock, TickSchedule
from monitor.comparisons.engine import ComparisonEngine
from monitor.config.loader import Config
from monitor.export.exporter import Exporter, Liveness
from monitor.export.window_log import WindowLog
from monitor.group.decider import ALONE, MEMBER, Role, group_role
from monitor.group.part import GroupPart
from monitor.judging.rescore import JudgedRescore
from monitor.kafka.bootstrap import Backoff, KafkaUnavailableError
from monitor.kafka.consumer import EventSource, Poll, SourceRecord
from monitor.kafka.options import consumer_options, producer_options
from monitor.kafka.producer import RecordProducer, RecordSink
from monitor.kafka.reachability import Reachability
from monitor.logs import fields
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.reload import EvaluationSetSource
from monitor.scoring.scorer import Scorer
from monitor.scoring.sources import judged_by_source
from monitor.service.views import LiveView, MonitorSnapshot, explain_routes
from monitor.service.wiring import (
    MonitorIo,
    Tally,
    bind_error,
    build_alerts,
    build_intake,
    build_judging,
    explain_state,
    inline_fills,
    judging_page,
    labeler,
    metrics_server,
    query_texts,
    window_spec,
)
from monitor.stats.replay_noise import replay_stderr
from monitor.windows.engine import EventWindows
from monitor.windows.samples import RankingSamples
from monitor.windows.spec import NO_BOUNDARY, Epoch
from monitor.windows.summary import Segment, WindowSummary, segment_label

__all__ = ["Monitor"]

_log = logging.getLogger("monitor.service")  # operators filter on it

POLL_TIMEOUT_MS = 200


class Monitor:
    """One rankmon instance: a member of the consumer group and its metrics endpoint."""

    def __init__(
        self,
        config: Config,
        *,
        io: MonitorIo | None = None,
    ) -> None:
        """`io`'s parts default to the system clock, a registry of its own, the Kafka
        clients the config describes and the `MetricsServer` of `export`; tests pass their
        own."""
        io = io or MonitorIo()
        clock = io.clock
        step_hook = io.step_hook
        self.config = config
        self._stop = threading.Event()
        self._owned: frozenset[int] = frozenset()  # partitions as of the last rebalance
        self.clock: Clock = clock or SystemClock()
        self.registry = io.registry or CollectorRegistry()
        self.liveness = Liveness(config.schedule.liveness_timeout.seconds, self.clock)
        self.exporter = Exporter(
            self.registry,
            segment_keys=config.segments.keys,
            min_queries=config.metrics.min_queries,
            liveness=self.liveness,
        )
        self.evaluation = EvaluationSetSource(config.evaluation_set, self.clock)
        self.keys = config.metrics.keys()
        self._window_log = WindowLog(self.keys, config.metrics.min_queries, self.clock)
        current = self.evaluation.current
        self._scorers = {current.version: self._new_scorer(current)}
        self.windows = EventWindows(
            window_spec(config),
            [str(k) for k in self.keys],
            self.clock,
            version=current.version,
            set_queries=len(current),
            labeler=labeler(config),
            max_clock_skew_ms=config.windows.max_clock_skew.ms,
        )
        self._tally = Tally(self.exporter)
        self._producer = io.producer or RecordProducer(**producer_options(config.kafka))
        # The set events are scored with from now on: the file's, and with the judging loop
        # the judgments it read (`_take_effect` changes it, from a window boundary on).
        self._in_use = current
        self._loop_made: str | None = None  # the version the judgments made last, if in use
        self._scored_since = 0  # windows finalized with the version in use since it took effect
        texts = query_texts(config)
        self.judging = build_judging(
            config,
            current,
            self._producer,
            self.exporter,
            io.judging_feeds,
            new_scorer=self._new_scorer,
            now_ms=self.clock.now_ms,
            texts=texts,
        )
        self.explain_store, self.samples = explain_state(config, [str(k) for k in self.keys])
        self.intake, self.handoff = build_intake(
            config,
            self.windows,
            self._producer,
            self._tally,
            self.samples,
            documents=None if self.judging is None else self.judging.shelf,
        )
        self.source = io.source or EventSource(
            topic=config.kafka.topic,
            sleep=self._pause,
            monotonic=self.clock.monotonic,
            **consumer_options(config.kafka),
        )
        publisher = SharePublisher(
            self._producer,
            config.kafka.windows_topic,
            self.source,
            config.kafka.max_record_bytes,
            step_hook,
            trimmed=self.exporter.control.count_share_trimmed,
            group=config.kafka.group_id,
        )
        self.comparisons = ComparisonEngine(config.comparisons, own_pools=inline_fills(config))
        self._comparison_records = (
            ComparisonPublisher(
                self.comparisons,
                self._producer,
                config.kafka.windows_topic,
                self.source,
                group=config.kafka.group_id,
                max_record_bytes=config.kafka.max_record_bytes,
                trimmed=self.exporter.control.count_share_trimmed,
            )
            if config.comparisons
            else None
        )
        self._windows_topic = io.windows_topic or WindowsTopic(config.kafka)
        self.checkpoint = Checkpoint(
            self.windows,
            publisher,
            self.source,
            self._windows_topic,
            hop_ms=config.windows.hop.ms,
            step=step_hook,
            comparisons=self._comparison_records,
        )
        self._delivery, self.alerts, self._restore_windows, self._restore_measures = build_alerts(
            config, self.clock, self.exporter, texts
        )
        self._rescore: JudgedRescore | None = None
        if self.judging is not None and self.samples is not None:
            # The judging loop's versions re-score the drop rules' baselines, not restart them.
            self._rescore = JudgedRescore(
                self.samples, self._new_scorer, window_spec(config).size_ms
            )
            self._rescore.made(current, current)
            self.alerts.rescore = self._rescore
            self.comparisons.carries = self._rescore.lineage
            # A held drop is released on the audit-corrected headline, not the model's grades.
            self.alerts.corrected = self._corrected
        # One decision for the consumer group (`monitor.group`): this member's part in it.
        self.group = GroupPart(
            alerts=self.alerts,
            delivery=self._delivery,
            exporter=self.exporter,
            comparisons=self.comparisons,
            comparison_records=self._comparison_records,
            checkpoint=self.checkpoint,
            progress=ProgressPublisher(
                self._producer, config.kafka.windows_topic, self.source, group=config.kafka.group_id
            ),
            windows_topic=self._windows_topic,
            retry=self._retry,
            limits=config.record_limits,
            now_ms=self.clock.now_ms,
            dead_letters=self.handoff.rejects,
        )
        self.view = LiveView(self._tally)
        routes = explain_routes(
            config,
            self.keys,
            store=self.explain_store,
            samples=self.samples,
            evaluation_set=lambda: self._in_use,
            alert_views=self.view.alert_views,
            clock=self.clock,
            texts=texts,
            bridge=self._rescore,
        )
        # The page writes from the HTTP thread: a producer of its own (the loop's is the loop
        # thread's alone), or the tests' fake.
        self._page_producer: RecordSink | None = None
        if config.judging.page and self.judging is not None:
            self._page_producer = io.producer or RecordProducer(**producer_options(config.kafka))
        page = (
            None
            if self._page_producer is None
            else judging_page(config, self.judging, self._page_producer, self.clock.now_ms)
        )
        if page is not None:
            routes = {**routes, **page.routes()}
        self.server = io.server or metrics_server(
            config, self.registry, self.exporter, routes, None if page is None else page.posts()
        )
        self._schedule = TickSchedule(config.schedule.interval.seconds, self.clock)
        self._errors_counted: dict[str, int] = {}
        self._reachability = Reachability(config.kafka.bootstrap_servers, self.clock)
        self.exporter.set_evaluation_set(current.version, len(current))
        self.exporter.readiness.evaluation_set_loaded = True

    @property
    def metrics_url(self) -> str:
        """Where `/metrics` is served (after `run` has started the server)."""
        return f"{self.server.url}/metrics"

    def request_reload(self) -> None:
        """Reload the evaluation set at the next tick (SIGHUP)."""
        self.evaluation.request_reload()

    def snapshot(self) -> MonitorSnapshot:
        """A consistent copy of what a live view shows; safe from any thread."""
        return self.view.snapshot(self.windows.watermark_ms, self._in_use.version)

    def start(self) -> None:
        """Serve `/metrics` and start alert delivery (the windows topic is read at the first
        assignment; the first tick comes one interval after the schedule was made).

        Raises `ConfigError` naming `export.host` or `export.port` when the endpoint cannot be
        bound (a port in use or privileged, a host that does not resolve or is not local)."""
        try:
            self.server.start()
        except OSError as error:
            self.source.close()
            self._producer.close()
            raise bind_error(self.config.export.host, self.config.export.port, error) from error
        self._delivery.start()
        self.liveness.progressed()
        _log.info(
            "rankmon started",
            extra=fields(
                metrics=self.metrics_url,
                topic=self.config.kafka.topic,
                # "c": the C accelerators; "python": the pure-Python path (no compiler at
                # install, or RANKMON_SPEEDUPS=off): same numbers, about a third of the speed.
                speedups="c" if self._scorer.judgment_index is not None else "python",
                liveness_timeout=self.config.schedule.liveness_timeout.text,
            ),
        )

    def run(self, stop: threading.Event) -> None:
        """`start()`, then poll, score and tick until `stop` is set; then `close()`."""
        self._stop = stop
        self.start()
        try:
            while not stop.is_set():
                self.step()
        finally:
            self.close()

    # -- the loop -------------------------------------------------------------------------

    def step(self) -> None:
        """One poll: rebalances, intake, readiness, and the tick if the schedule asked for it."""
        poll = self.source.poll(timeout_ms=POLL_TIMEOUT_MS)
        records = self._rebalance(poll) if poll.revoked or poll.assigned else poll.records
        if records is None:
            return  # stopping before the rebalance could be applied: take nothing in
        if records:
            self.handoff.deliver(self.intake.take(records, self._scorers, self.clock.now_ms()))
            self.checkpoint.took_in(records)
        self.group.read()
        self._note_source_state()
        if self._schedule.due():
            self.tick()
        self.liveness.progressed()

    def _note_source_state(self) -> None:
        """Broker, group and unreadable partitions as the source sees them, for `/readyz`."""
        source, readiness = self.source, self.exporter.readiness
        up = source.broker_up
        self._reachability.note(up)
        readiness.group_joined = source.group_joined
        self.exporter.set_broker_up(up)
        for unreadable in source.take_unreadable():
            self.exporter.stream.count_unreadable(unreadable.partition)
        if source.unreadable or readiness.unreadable:
            readiness.unreadable = {
                p: f"at offset {b.offset} ({b.error})" for p, b in source.unreadable.items()
            }
        for error, count in source.errors.items():
            counted = self._errors_counted.get(error, 0)
            if count > counted:
                self.exporter.stream.count_consumer_error(error, count - counted)
                self._errors_counted[error] = count

    def _rebalance(self, poll: Poll) -> list[SourceRecord] | None:
        """Apply a rebalance; return the poll's records to take in (None: stopping).

        Only partitions leaving: their state is dropped (the new owner replays them from the
        committed offsets) and the others carry on. Any partition arriving: everything is
        dropped and every owned partition replays from its committed offset, after the
        windows topic was read back. A newcomer's replay reaches windows this instance may
        have closed already, and the watermark never moves back while partitions are held.
        Held shares cannot be split by partition: one holding a leaving partition's events
        forces the full replay too.
        """
        before, owned = self._owned, self.source.assignment
        arriving = owned - before
        leaving = (before | poll.revoked) - owned
        replay = bool(arriving) or self.checkpoint.must_replay(leaving)
        dropped = before | poll.revoked if replay else leaving
        self.windows.revoke(dropped)
        self.checkpoint.forget(dropped, replay=replay)
        for partition in leaving:
            self.exporter.stream.forget_partition(partition)
        self._owned = owned
        # Between an eager rebalance's revocation and its assignment a member owns nothing
        # for a moment: its part in the group's decisions waits for the assignment.
        partitions = self._topic_partitions()
        role = group_role(partitions, owned) if owned else self.group.role
        _log.info(
            "partitions rebalanced",
            extra=fields(
                owned=sorted(owned), arriving=sorted(arriving), left=sorted(leaving), role=role
            ),
        )
        if not replay:
            if not self.group.take(role, partitions, self._elapsed_ms()):
                return None
            return [record for record in poll.records if record.partition in owned]
        self.windows.assign(owned)
        # Records of partitions held before came from their old positions: fetched again.
        if not self._retry(lambda: self.source.rewind(owned - arriving), "rewind partitions"):
            return None
        if not self._learn_published(owned, role, partitions):
            return None
        return [record for record in poll.records if record.partition in arriving]

    def tick(self) -> None:
        """Finalize, publish, export, alert, commit (see the module docstring)."""
        self._maybe_reload()
        quiet = self.clock.now_ms() if self._stream_quiet() else None
        floor = self.windows.replay_ends.floor(self._owned, self.windows.watermark_ms)
        summaries = self.checkpoint.finalize(quiet, floor)
        in_use = self._in_use.version
        self._scored_since += sum(s.evaluation_set_version == in_use for s in summaries)
        now, elapsed = self.clock.now_ms(), self._elapsed_ms()
        if self.judging is not None:
            self._ask_for_judgments(summaries, now)
        self._forget_unused_scorers()
        for summary in summaries:
            self._record(summary)
        for segment in self.windows.take_retired():
            self._retire(segment)
        if summaries and self.samples is not None:
            oldest = self.explain_store.oldest_kept_start()
            if oldest is not None:
                self.samples.forget_before(oldest)
        self.group.decide(summaries, now, elapsed)
        quiet = self._stream_quiet() and not self.windows.open_windows
        self.group.report(self._owned, self.windows.watermark_ms, quiet, self.clock.now_ms())
        self.view.copy_alerts(self.alerts.active())
        self._export_progress()
        self._window_log.state(self.windows, self.checkpoint.held)
        self.checkpoint.commit()

    def _topic_partitions(self) -> frozenset[int]:
        """Every partition of the events topic (those owned when the metadata is unknown)."""
        return self.source.topic_partitions() or self._owned

    def _elapsed_ms(self) -> int:
        return int(self.clock.monotonic() * 1000)

    def _stream_quiet(self) -> bool:
        """Whether windows may close on processing time: every owned partition idle, the
        broker answering, and nothing left to fetch on a partition that can be read."""
        if not self.source.broker_up or not self.windows.watermarks.all_idle():
            return False
        readable = self._owned - set(self.source.unreadable)
        return all((self.source.lag(p) or 0) == 0 for p in readable)

    def _retire(self, segment: Segment) -> None:
        """A segment label unseen for `segments.retire_after`: its series leave /metrics."""
        self.exporter.retire_segment(segment)
        self.alerts.forget(segment)
        self.explain_store.retire(segment)
        self.view.retire(segment)
        _log.info("segment retired", extra=fields(segment=segment_label(segment)))

    def _record(self, summary: WindowSummary) -> None:
        self.exporter.record_window(summary, self._replay_noise(summary))
        self.explain_store.add(summary)
        if self.samples is not None:
            self._record_sampled(summary, self.samples)
        self.view.record(summary)
        self._window_log.finalized(summary)

    def _record_sampled(self, summary: WindowSummary, samples: RankingSamples) -> None:
        """What a window's sampled rankings say beyond its measures: judged@k by the source
        of the grades (with more than one), and the judging loop's corrected headline."""
        ranking_of = samples.in_window(summary.segment, summary.start_ms, summary.end_ms)
        scorer = self._scorers.get(summary.evaluation_set_version)
        if scorer is not None and scorer.evaluation_set.sources:
            rankings = [
                (query, ranking)
                for query in summary.query_means
                if (ranking := ranking_of(query)) is not None
            ]
            shares = {
                (k, source): share
                for k in self.config.metrics.cutoffs
                for source, share in judged_by_source(rankings, scorer.evaluation_set, k).items()
            }
            self.exporter.latest.record_judged_sources(summary, shares)
        if self.judging is not None:
            corrected = self.judging.correct(summary, ranking_of)
            if corrected is not None:
                measure = self.judging.queue.lower_key
                self.exporter.latest.record_correction(summary, measure, corrected)
                self.explain_store.correct(summary.segment, summary.start_ms, measure, corrected)

    def _corrected(self, segment: Segment, start_ms: int) -> Mapping[str, float | str] | None:
        """The kept window's headline corrected by the judging loop's audit (None: none)."""
        kept = self.explain_store.find(segment, start_ms)
        return None if kept is None or not kept.corrected else dict(kept.corrected)

    def _replay_noise(self, summary: WindowSummary) -> dict[str, float]:
        """Each measure's replay noise: the window against the segment's previous kept one
        of the same evaluation-set version (`monitor.stats.replay_noise`)."""
        kept = self.explain_store.windows(summary.segment)
        previous = kept[-1] if kept else None
        if previous is None or (
            previous.summary.evaluation_set_version != summary.evaluation_set_version
            or previous.summary.end_ms > summary.start_ms
        ):
            return {}
        return {
            key: replay_stderr(
                previous.query_values(key),
                {q: means.get(key, math.nan) for q, means in summary.query_means.items()},
            )
            for key in summary.means
        }

    def _export_progress(self) -> None:
        for partition, watermark in self.windows.watermarks.by_partition().items():
            if watermark is not None:
                self.exporter.stream.set_watermark(partition, watermark)
            lag = self.source.lag(partition)
            if lag is not None:
                self.exporter.stream.set_consumer_lag(partition, lag)

    @property
    def _scorer(self) -> Scorer:
        """The scorer of the newest evaluation set."""
        return self._scorers[self._in_use.version]

    def _maybe_reload(self) -> None:
        """The file reloaded, or judgments read: the set they make takes effect."""
        attempts = self.evaluation.attempts
        loaded = self.evaluation.poll()
        if self.evaluation.attempts != attempts:
            self.exporter.evaluation_set.reload_attempted(failed=self.evaluation.failing)
        if self.judging is None:
            if loaded is not None:
                self._take_effect(loaded, "reload")
            return
        if loaded is not None:
            self.judging.rebase(loaded)
        deciding = self.group.role != MEMBER
        self.judging.follow(dead_letter=deciding)
        readings = self.judging.readings()
        if readings is not None:
            self.exporter.judging.set_judges(readings)
            if deciding:
                self.alerts.observe_judges(readings, self.clock.now_ms())
        wanted = self.judging.current()
        # Judgments take effect once the last version is in use by every open window: one new
        # version a window at most, so the baselines re-score from version to version
        # (`JudgedRescore` keeps the newest few) however fast the judgments come.
        settled = len(self.windows.windower.epochs) == 1 or loaded is not None
        if wanted.version != self._in_use.version and settled:
            self._take_effect(wanted, "reload" if loaded is not None else "judgments")

    def _take_effect(self, evaluation_set: EvaluationSet, why: str) -> None:
        """Score with `evaluation_set` from the next window boundary: windows open now finish
        with the version they started with (`EventWindows.begin_version`)."""
        previous = self._in_use.version
        # No window was scored with the version this one replaces: none finalized since it
        # took effect, none open with it.
        unused = self._scored_since == 0 and not self.windows.scoring_with(previous)
        self._scored_since = 0
        self._in_use = evaluation_set
        version = evaluation_set.version
        if version not in self._scorers:
            self._scorers[version] = self._new_scorer(evaluation_set)
        boundary = self.windows.begin_version(version, len(evaluation_set))
        if self._rescore is not None:
            if unused and why == "judgments" and previous == self._loop_made:
                # No window was scored with the version this one replaces: it leaves the
                # re-scorer too (the windows forget its epoch as well). A judge
                # whose grades trickle in (rankmon judge, batch by batch) made a version at
                # every tick between two replays, none of them used, and pushed the versions
                # the kept windows were scored with out of the re-scorer.
                self._rescore.forget(previous)
            self._rescore.made(evaluation_set, self.evaluation.current)
        self._loop_made = version if why == "judgments" else None
        self.exporter.set_evaluation_set(version, len(evaluation_set))
        _log.info(
            "evaluation set takes effect",
            extra=fields(version=version, from_event_time_ms=boundary, why=why),
        )

    def _ask_for_judgments(self, summaries: list[WindowSummary], now_ms: int) -> None:
        """The judging loop's part of a tick: the finalized windows' unjudged documents, and
        the pairs due within the budget to the to-judge topic."""
        judging, samples = self.judging, self.samples
        assert judging is not None and samples is not None  # the config checks both
        for summary in summaries:
            scorer = self._scorers.get(summary.evaluation_set_version)
            if scorer is None:
                continue
            ranking_of = samples.in_window(summary.segment, summary.start_ms, summary.end_ms)
            judging.note_window(summary, ranking_of, scorer.evaluation_set)
        judging.publish(now_ms)

    def _forget_unused_scorers(self) -> None:
        live = self.windows.windower.versions()
        self._scorers = {v: s for v, s in self._scorers.items() if v in live}

    def _new_scorer(self, evaluation_set: EvaluationSet) -> Scorer:
        metrics = self.config.metrics
        return Scorer(
            evaluation_set,
            self.keys,
            relevance_level=metrics.relevance_level,
            idcg_zero=metrics.idcg_zero,
        )

    # -- the explanations' API and page ----------------------------------------------------

    # -- start and stop -------------------------------------------------------------------

    def _learn_published(
        self, owned: frozenset[int], role: Role, partitions: frozenset[int]
    ) -> bool:
        """Restore from the windows topic before `owned` replays (`Checkpoint.restore`), then
        the alert baselines and comparisons: alone, from the shares and records of the
        partitions now owned; as the group's new decider, from every member's (`monitor.group`);
        a member that decides nothing reads only what the replay needs. `partitions`: every
        partition of the events topic. False: stopping."""
        if not self.group.take(role, partitions, self._elapsed_ms()):
            return False
        judging = self.judging
        if judging is not None and not judging.caught_up:
            # Before the windows topic is read back: score with every judgment sent so far.
            if not self._retry(
                lambda: judging.catch_up(dead_letter=role != MEMBER), "read the judging topics"
            ):
                return False
            if judging.current().version != self._in_use.version:
                self._take_effect(judging.current(), "judgments")
        current = self._in_use
        newest = Epoch(NO_BOUNDARY, window_spec(self.config), current.version, len(current))
        restore = self.checkpoint.restore(
            owned,
            newest,
            self._retry,
            keep=0 if role == MEMBER else self._restore_windows,
            measures=self._restore_measures,
            also=self.group.restoring(),
        )
        if restore is None:
            return False
        self._forget_unused_scorers()
        if role == ALONE:
            self.alerts.restore(restore.owned_summaries())
            compared = self.comparisons.restore(restore.comparison_records())
            for record in compared:
                self.exporter.latest.record_comparison(record)
            self.alerts.observe_comparisons(compared, self.clock.now_ms(), restoring=True)
        else:
            self.group.restore()
        self.view.copy_alerts(self.alerts.active())
        _log.info(
            "read published windows",
            extra=fields(shares=restore.read, partitions=sorted(owned), role=role),
        )
        return True

    def _retry(self, attempt: Callable[[], bool], what: str) -> bool:
        """Call `attempt` until it returns True, with backoff; False if `stop` came first."""
        backoff = Backoff()
        while not self._stop.is_set():
            try:
                if attempt():
                    return True
                error = "Kafka did not answer"
            except KafkaUnavailableError as failure:
                error = str(failure)
            _log.warning("cannot %s yet; retrying", what, extra=fields(error=error))
            self.exporter.set_broker_up(False)
            self.liveness.progressed()  # waiting for Kafka is not being stuck
            self._pause(backoff.next_delay())
        return False

    def _pause(self, seconds: float) -> None:
        """Wait between attempts to reach Kafka; a stop request cuts it short."""
        self._stop.wait(seconds)

    def close(self) -> None:
        """Finalize nothing early: flush, commit what is safe, close everything.

        Each step is bounded by a Kafka client timeout; `rankmon run` bounds the whole.
        """
        self.checkpoint.close()
        self.group.close()
        if self.judging is not None:
            self.judging.close()
        self.source.close()
        self._producer.close()
        if self._page_producer is not None and self._page_producer is not self._producer:
            self._page_producer.close()
        self._delivery.stop()
        self.server.stop()
        _log.info("rankmon stopped")
