"""`Replayer`: the replay loop of `rankmon replay`, once or on the `replay:` schedule.

Scheduled, it is an APScheduler `BackgroundScheduler` with one job: an `interval` trigger
(replays on multiples of the interval since the Unix epoch, where windows of that size start)
or a `cron` trigger in `timezone`; a restart keeps to it (a replay at start would land in the
window of the replay before the restart, which its end marker closed: every record late),
unless `run_at_start` asks for one at once (a fresh deployment, the demo); `coalesce`
(replays missed while one ran, or while the process was stopped, run once, not in a burst),
`max_instances` 1 (never two replays at once) and `misfire_grace_time` (a replay that could
not start within it is skipped, logged and counted in `rankmon_replay_missed_total`). A stop
(SIGTERM, SIGINT) ends the running replay as `monitor.replay.runner` says: nothing more sent,
its end marker published, then the scheduler stops.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from apscheduler.events import (
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobEvent,
    JobExecutionEvent,
)
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from prometheus_client import CollectorRegistry, start_http_server
from rich.console import Console
from rich.progress import Progress

from monitor.errors import ConfigError, RankmonError
from monitor.ingest.schema import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_ID_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
)
from monitor.kafka.settings import KafkaConfig
from monitor.logs import fields
from monitor.replay.archive import RunArchive
from monitor.replay.metrics import ReplayMetrics
from monitor.replay.publish import KafkaPublisher
from monitor.replay.ranker import Answer, RankerClient
from monitor.replay.runner import Publisher, ReplayReport, run_replay, write_run
from monitor.replay.settings import ReplayConfig
from monitor.replay.topics import Query, check_against, read_topics
from monitor.scoring.evalset import FILE_SOURCE, load_evaluation_set

__all__ = ["Replayer", "aligned_start", "new_replay_id"]

_log = logging.getLogger("monitor.replay")


def aligned_start(interval_s: float, now_s: float | None = None) -> dt.datetime:
    """The next multiple of the interval since the Unix epoch: interval replays after the
    first (at start) begin there, as windows of that size do, so each replay (stamped with
    its start) lands in a window of its own."""
    now_s = time.time() if now_s is None else now_s
    return dt.datetime.fromtimestamp(math.ceil(now_s / interval_s) * interval_s, dt.UTC)


def new_replay_id(now: dt.datetime | None = None) -> str:
    """A replay's id: its UTC start time (so ids sort by time) and 8 random hex digits."""
    now = now or dt.datetime.now(dt.UTC)
    return f"r{now.strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"


class Replayer:
    """Replays the evaluation set through the ranker (see the module docstring)."""

    def __init__(
        self,
        settings: ReplayConfig,
        kafka: KafkaConfig,
        evaluation_set_path: Path,
        *,
        publisher: Publisher | None = None,
        registry: CollectorRegistry | None = None,
        progress: bool = False,
        source: str = FILE_SOURCE,
        keep: Collection[str] = (),
        max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    ) -> None:
        """`settings` (the `replay:` section) against the evaluation set at
        `evaluation_set_path`, publishing to `kafka.topic` (or to `publisher`). `source` and
        `keep` are `evaluation_set.source` and `.sources`: the topics file names the file's
        queries, and only those with a grade of a kept source are replayed (the monitor
        scores no other). `max_id_bytes` and `max_value_bytes`: the monitor's
        `events.max_id_bytes` and `segments.max_value_bytes`, which the answers are held to;
        `max_document_bytes` (`events.max_document_bytes`) what a document's fields are cut to."""
        self.settings = settings
        evaluation_set = load_evaluation_set(evaluation_set_path, source=source)
        topics = read_topics(self.settings.topics)
        check_against(topics, evaluation_set.query_ids, self.settings.topics)
        if keep:
            evaluation_set = load_evaluation_set(evaluation_set_path, source=source, keep=keep)
        self.queries: list[Query] = [topics[qid] for qid in sorted(topics) if qid in evaluation_set]
        self.client = RankerClient(
            self.settings.ranker,
            self.settings.depth,
            self.settings.segment_from,
            max_id_bytes=max_id_bytes,
            max_value_bytes=max_value_bytes,
            max_document_bytes=max_document_bytes,
        )
        if publisher is None:
            publisher = KafkaPublisher.connect(kafka, self.settings.compression)
        self.publisher = publisher
        self.registry = registry or CollectorRegistry()
        self.metrics = ReplayMetrics(self.registry)
        self.progress = progress
        self.stop = threading.Event()
        # The latest replays' outcomes and times, without their rankings and latencies: a
        # scheduled replayer runs for months, and 100 replays of 10,000 queries would hold
        # 10^8 document ids.
        self.reports: deque[ReplayReport] = deque(maxlen=100)
        archived = self.settings.archive
        self.archive = (
            None if archived.directory is None else RunArchive(archived.directory, archived.keep)
        )
        self._lock = threading.Lock()  # one replay at a time, whatever starts it

    def once(self, run_file: Path | None = None) -> ReplayReport:
        """One replay of every query; its log line; the run file if asked for."""
        with self._lock:
            ranker = self.settings.ranker
            replay_id = new_replay_id()
            with _progress_bar(self.progress, len(self.queries), replay_id) as advance:
                report = run_replay(
                    self.queries,
                    self.client,
                    self.publisher,
                    replay_id=replay_id,
                    segment=dict(self.settings.segment),
                    concurrency=ranker.concurrency,
                    rate=ranker.rate,
                    breaker=ranker.circuit_breaker,
                    stop=self.stop,
                    on_answer=advance,
                )
            self.metrics.record(report)
            self.reports.append(replace(report, rankings={}, scores={}, latencies_s=[]))
            level = logging.INFO if report.result == "complete" else logging.WARNING
            _log.log(
                level, report.line(), extra=fields(replay=report.replay_id, result=report.result)
            )
            for fix in report.fixes(self.client.preset.ids):
                _log.error(fix, extra=fields(replay=report.replay_id))
            if self.archive is not None:
                self.archive.add(report)
            if run_file is not None:
                try:
                    write_run(report, run_file)
                except (OSError, ValueError) as error:
                    # The replay itself was published; only its copy as a run file failed.
                    raise RankmonError(f"cannot write the run file {run_file}: {error}") from None
            return report

    def scheduled(self, stop: threading.Event) -> None:
        """Replay on the schedule until `stop` is set."""
        schedule = self.settings.schedule
        if schedule.interval is None and schedule.cron is None:
            raise ConfigError(
                "replay.schedule", "needs interval or cron (or run rankmon replay --once)"
            )
        if self.settings.metrics_port:
            start_http_server(self.settings.metrics_port, registry=self.registry)
        trigger: Any
        scheduler = BackgroundScheduler(timezone=schedule.timezone)
        scheduler.add_listener(self._missed, EVENT_JOB_MISSED)
        scheduler.add_listener(self._overran, EVENT_JOB_MAX_INSTANCES)
        if schedule.cron is not None:
            trigger = CronTrigger.from_crontab(schedule.cron, timezone=schedule.timezone)
        else:
            assert schedule.interval is not None
            trigger = IntervalTrigger(
                seconds=schedule.interval.seconds,
                start_date=aligned_start(schedule.interval.seconds),
                timezone=schedule.timezone,
            )
        if schedule.run_at_start:
            # One replay at once; the schedule's own times stay where they are.
            scheduler.add_job(self._scheduled_once, "date", id="first replay")
        job = scheduler.add_job(
            self._scheduled_once,
            trigger,
            id="replay",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=max(1, round(schedule.misfire_grace.seconds)),
        )
        scheduler.start()
        upcoming = job.next_run_time
        _log.info(
            "replay scheduled",
            extra=fields(
                trigger=str(trigger),
                next=None if upcoming is None else upcoming.isoformat(),
            ),
        )
        try:
            stop.wait()
        finally:
            self.stop.set()
            scheduler.shutdown(wait=True)
            self.close()

    def close(self) -> None:
        self.client.close()
        close = getattr(self.publisher, "close", None)
        if callable(close):
            close()

    def _scheduled_once(self) -> None:
        if self._lock.locked():  # the first replay still runs: this one is skipped
            self._skipped("the previous replay is still running")
            return
        try:
            self.once()
        except Exception:  # one failed replay must not end the schedule; it is logged
            _log.exception("replay failed")
            self.metrics.replays.labels("failed").inc()

    def _missed(self, event: JobExecutionEvent) -> None:
        self._skipped(
            "not started within replay.schedule.misfire_grace", str(event.scheduled_run_time)
        )

    def _overran(self, event: JobEvent) -> None:
        """APScheduler did not start the interval or cron job: its last run still runs."""
        self._skipped("the previous replay is still running")

    def _skipped(self, why: str, scheduled: str = "") -> None:
        self.metrics.missed.inc()
        _log.warning(f"a scheduled replay was skipped: {why}", extra=fields(scheduled=scheduled))


class _progress_bar:  # noqa: N801 - used as a context manager, like a function
    """A terminal progress bar over the replay's queries (nothing when not a terminal)."""

    def __init__(self, shown: bool, total: int, replay_id: str) -> None:
        self.shown = shown and sys.stderr.isatty()
        self.total, self.replay_id = total, replay_id
        self._progress: Any = None

    def __enter__(self) -> Callable[[Query, Answer], None]:
        if not self.shown:
            return lambda query, answer: None
        self._progress = Progress(transient=True, console=Console(stderr=True))
        self._progress.start()
        task = self._progress.add_task(f"replay {self.replay_id}", total=self.total)
        return lambda query, answer: self._progress.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
