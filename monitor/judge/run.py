"""`run_judge`: the judge worker wired to Kafka and to the config (`monitor.judge.worker`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Final

import orjson
from kafka import KafkaProducer
from kafka.errors import KafkaError
from prometheus_client import CollectorRegistry, start_http_server

from monitor.judge.chat import ChatClient
from monitor.judge.metrics import JudgeCollector
from monitor.judge.prompt import Prompt
from monitor.judge.settings import JudgeConfig
from monitor.judge.shared import SharedPairs
from monitor.judge.worker import (
    BATCH,
    HourlyBudget,
    JudgeReport,
    JudgeWorker,
    default_source,
    log_batch,
    progress_bar,
    read_documents,
)
from monitor.judging.settings import JudgingConfig
from monitor.judging.topics import TopicFeed
from monitor.kafka.consumer import SourceRecord
from monitor.kafka.options import producer_options
from monitor.kafka.settings import KafkaConfig
from monitor.logs import fields
from monitor.replay.publish import PublishError

__all__ = ["DEFAULT_GRADES", "run_judge"]

_log = logging.getLogger(__name__)

DEFAULT_GRADES: Final = (0, 1, 2, 3)  # the default prompt's scale
_IDLE_S: Final = 1.0


def run_judge(
    settings: JudgeConfig,
    kafka: KafkaConfig,
    judging: JudgingConfig,
    queries: Mapping[str, str],
    *,
    once: bool,
    stop: threading.Event,
    progress: bool = False,
    report: JudgeReport | None = None,
) -> JudgeReport:
    """Grade the pairs of `judging`'s to-judge topic until `stop` (or, `once`, those there
    now), `queries` their texts by id; `report`: the one to count into (a caller reading it
    while the worker runs)."""
    prompt = Prompt.read(settings.prompt_file)
    chat = ChatClient(
        settings.url.reveal(),
        model=settings.model,
        key=None if settings.key is None else settings.key.reveal(),
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        timeout_s=settings.timeout.seconds,
        retries=settings.retries,
        backoff_s=settings.backoff.seconds,
    )
    worker = JudgeWorker(
        chat,
        prompt,
        source=settings.source or default_source(settings.model, prompt),
        model=settings.model,
        temperature=settings.temperature,
        queries=queries,
        documents={}
        if settings.documents is None
        else read_documents(settings.documents, settings.max_document_bytes),
        grades=judging.grades or DEFAULT_GRADES,
        concurrency=settings.concurrency,
        budget=HourlyBudget(settings.requests_per_hour, settings.tokens_per_hour),
        max_document_bytes=settings.max_document_bytes,
    )
    judgments = TopicFeed(kafka, judging.judgments_topic, "judge-judgments")
    report = JudgeReport() if report is None else report
    counted = report

    def assigned(partitions: int) -> None:
        counted.partitions = partitions

    tojudge = SharedPairs(
        kafka,
        judging.tojudge_topic,
        settings.group_id or f"rankmon-judge-{worker.source}",
        on_assign=assigned,
    )
    producer = KafkaProducer(**producer_options(kafka))
    if settings.metrics_port:
        registry = CollectorRegistry()
        registry.register(JudgeCollector(report, worker.source))
        start_http_server(settings.metrics_port, registry=registry)
    shelf = _Shelf(worker, tojudge)
    try:
        judgments.catch_up(worker.learn)
        tojudge.catch_up(shelf.take)
        tojudge.reassigned = False  # the judgments were read to their end just before
        pairs = shelf.pairs()
        _log.info(
            "judge started",
            extra=fields(source=worker.source, model=settings.model, prompt=prompt.hash,
                         group=tojudge.group_id, partitions=shelf.partitions(),
                         pairs=len(pairs), graded_before=len(worker.graded)),
        )  # fmt: skip
        batches = _Batches(worker, producer, judging.judgments_topic, report, stop, once=once)
        batches.run(pairs, progress=progress, shelf=shelf)
        while not once and not stop.is_set():
            for record in judgments.poll():
                worker.learn(record)
            for record in tojudge.poll():
                shelf.take(record)
            if tojudge.reassigned:
                # Partitions taken over are read from their beginnings: learn every pair the
                # source graded up to now (the other worker's last batch too) before asking.
                tojudge.reassigned = False
                judgments.follow_to_end(worker.learn)
            fresh = shelf.pairs()
            if fresh:
                batches.run(fresh, progress=False, shelf=shelf)
            else:
                report.pending = 0
                stop.wait(_IDLE_S)
    finally:
        judgments.close()
        tojudge.close()
        producer.close(timeout=10)
        chat.close()
    _log.info("judge stopped", extra=fields(source=worker.source, report=report.line()))
    return report


class _Shelf:
    """The to-judge records read and not yet asked about, and the partition of each pair: a
    pair whose partition went to another worker of the group is left to it."""

    def __init__(self, worker: JudgeWorker, feed: SharedPairs) -> None:
        self.worker, self.feed = worker, feed
        self.records: list[SourceRecord] = []
        self.partition_of: dict[tuple[str, str], int] = {}

    def take(self, record: SourceRecord) -> None:
        self.records.append(record)

    def partitions(self) -> list[int]:
        return sorted(tp.partition for tp in self.feed.assigned)

    def pairs(self) -> list[dict[str, object]]:
        """The pairs of the records taken since the last call, not graded yet."""
        records, self.records = self.records, []
        for record in records:
            key = (record.key or b"").decode("utf-8", "replace")
            self.partition_of[key_of(key)] = record.partition
        return self.worker.pairs(records)

    def mine(self, pair: Mapping[str, object]) -> bool:
        """Whether the pair's partition is still this worker's."""
        partition = self.partition_of.pop((str(pair["query_id"]), str(pair["doc_id"])), None)
        return partition is None or partition in {tp.partition for tp in self.feed.assigned}


def key_of(text: str) -> tuple[str, str]:
    """The (query, document) a to-judge record's key names (`["q", "d"]`)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return ("", "")
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return (value[0], value[1])
    return ("", "")


class _Batches:
    """Pairs in batches: each batch's judgments flushed (acks=all), then a log line."""

    def __init__(
        self,
        worker: JudgeWorker,
        producer: KafkaProducer,
        topic: str,
        report: JudgeReport,
        stop: threading.Event,
        *,
        once: bool,
    ) -> None:
        self.worker, self.producer, self.topic = worker, producer, topic
        self.report, self.stop, self.once = report, stop, once
        self.started = time.monotonic()

    def send(self, key: bytes, value: bytes) -> None:
        self.producer.send(self.topic, key=key, value=value)

    def run(self, pairs: list[dict[str, object]], *, progress: bool, shelf: _Shelf) -> None:
        """Ask about `pairs` a batch at a time; between batches the group is polled (its
        heartbeat, and what came since: kept on `shelf` for the next run), and the pairs of
        partitions another worker took are left to it."""
        bar = progress_bar(progress, len(pairs))

        def advance() -> None:
            if bar is not None:
                bar.advance(bar.task_ids[0])

        try:
            for start in range(0, len(pairs), BATCH):
                if self.stop.is_set() or self.report.budget_spent:
                    return
                if start:
                    for record in shelf.feed.poll():
                        shelf.take(record)
                batch = [p for p in pairs[start : start + BATCH] if shelf.mine(p)]
                self.report.pending = len(pairs) - start
                self.worker.judge(
                    batch, self.send, self.report, stop=self.stop, wait=not self.once,
                    advance=advance,
                )  # fmt: skip
                try:
                    self.producer.flush(timeout=60)
                except KafkaError as error:
                    raise PublishError(f"cannot publish to {self.topic}: {error}") from error
                self.report.last_batch_s = time.time()
                self.report.pending = len(pairs) - min(len(pairs), start + BATCH)
                log_batch(self.report, len(batch), self.report.pending, self.started)
        finally:
            if bar is not None:
                bar.stop()
