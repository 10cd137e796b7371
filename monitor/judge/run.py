"""`run_judge`: the judge worker wired to Kafka and to the config (`monitor.judge.worker`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Final

from kafka import KafkaProducer
from kafka.errors import KafkaError

from monitor.judge.chat import ChatClient
from monitor.judge.prompt import Prompt
from monitor.judge.settings import JudgeConfig
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
    tojudge = TopicFeed(kafka, judging.tojudge_topic, "judge-tojudge")
    producer = KafkaProducer(**producer_options(kafka))
    report = JudgeReport() if report is None else report
    try:
        judgments.catch_up(worker.learn)
        backlog: list[object] = []
        tojudge.catch_up(backlog.append)
        pairs = worker.pairs(backlog)  # type: ignore[arg-type]
        _log.info(
            "judge started",
            extra=fields(source=worker.source, model=settings.model, prompt=prompt.hash,
                         pairs=len(pairs), graded_before=len(worker.graded)),
        )  # fmt: skip
        batches = _Batches(worker, producer, judging.judgments_topic, report, stop, once=once)
        batches.run(pairs, progress=progress)
        while not once and not stop.is_set():
            for record in judgments.poll():
                worker.learn(record)
            fresh = worker.pairs(tojudge.poll())
            if fresh:
                batches.run(fresh, progress=False)
            else:
                stop.wait(_IDLE_S)
    finally:
        judgments.close()
        tojudge.close()
        producer.close(timeout=10)
        chat.close()
    _log.info("judge stopped", extra=fields(source=worker.source, report=report.line()))
    return report


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

    def run(self, pairs: list[dict[str, object]], *, progress: bool) -> None:
        bar = progress_bar(progress, len(pairs))

        def advance() -> None:
            if bar is not None:
                bar.advance(bar.task_ids[0])

        try:
            for start in range(0, len(pairs), BATCH):
                if self.stop.is_set() or self.report.budget_spent:
                    return
                batch = pairs[start : start + BATCH]
                self.worker.judge(
                    batch, self.send, self.report, stop=self.stop, wait=not self.once,
                    advance=advance,
                )  # fmt: skip
                try:
                    self.producer.flush(timeout=60)
                except KafkaError as error:
                    raise PublishError(f"cannot publish to {self.topic}: {error}") from error
                log_batch(self.report, len(batch), len(pairs) - start - len(batch), self.started)
        finally:
            if bar is not None:
                bar.stop()
