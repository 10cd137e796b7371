"""`WindowPublisher`: finalized window summaries to the windows topic, and back on start.

Each `WindowSummary` is one record: key `summary.key` (window size, start, segment), value
`summary.to_json()`. `publish()` returns only once the broker acknowledged every record, so
the offsets commit that passes those windows can follow it (DESIGN.md "Not losing data").

`read_published()` reads the whole topic from the beginning with a plain consumer (no group,
nothing committed). It knows it has read everything when each partition's position reaches
the highwater reported by the fetch responses: `end_offsets()` is not used, since Tansu
answers it wrongly. The same key may appear more than once (a publish retried after a crash
before its commit); records come back in offset order within each partition, and the caller
keeps whichever it likes (they carry the same numbers).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from monitor.bootstrap import KafkaUnavailableError, bootstrap_reachable
from monitor.producer import RecordProducer
from monitor.summary import WindowSummary

__all__ = ["WindowPublisher", "read_published"]

_log = logging.getLogger(__name__)

SUMMARY_HEADERS = [("content-type", b"application/json")]


class WindowPublisher:
    """Publishes summaries through a shared `RecordProducer`."""

    def __init__(self, producer: RecordProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic

    def publish(self, summaries: Iterable[WindowSummary]) -> None:
        """Send every summary and wait for the acknowledgements.

        Raises `KafkaUnavailableError` if any is not acknowledged: commit nothing past these
        windows then, and publish them again later (a repeated record is harmless).
        """
        for summary in summaries:
            self.producer.send(self.topic, summary.key.encode(), summary.to_json(), SUMMARY_HEADERS)
        self.producer.flush()


def read_published(
    *,
    bootstrap_servers: str | Sequence[str],
    topic: str,
    client_id: str = "rankmon-restore",
    timeout_s: float = 60.0,
    **kafka_options: Any,
) -> list[WindowSummary]:
    """Every summary on the windows topic; a missing topic has none.

    Raises `KafkaUnavailableError` if the topic could not be read to its end within
    `timeout_s`. Records that are not window summaries are logged and skipped.
    """
    if not bootstrap_reachable(bootstrap_servers):
        raise KafkaUnavailableError(f"no Kafka bootstrap server reachable at {bootstrap_servers}")
    try:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            client_id=client_id,
            group_id=None,
            enable_auto_commit=False,
            **kafka_options,
        )
    except KafkaError as error:
        raise KafkaUnavailableError(f"cannot read {topic}: {error}") from error
    try:
        return _read_to_end(consumer, topic, time.monotonic() + timeout_s)
    except KafkaError as error:
        raise KafkaUnavailableError(f"cannot read {topic}: {error}") from error
    finally:
        consumer.close(autocommit=False)


def _read_to_end(consumer: KafkaConsumer, topic: str, deadline: float) -> list[WindowSummary]:
    partitions = [
        TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
    ]
    if not partitions:
        return []
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    summaries: list[WindowSummary] = []
    while not _at_end(consumer, partitions):
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"{topic} not read to its end in time")
        for records in consumer.poll(timeout_ms=200).values():
            summaries.extend(_parsed(records))
    return summaries


def _at_end(consumer: KafkaConsumer, partitions: list[TopicPartition]) -> bool:
    # The highwater arrives with each fetch response (also for an empty partition).
    for tp in partitions:
        highwater = consumer.highwater(tp)
        position = None if highwater is None else consumer.position(tp, timeout_ms=1000)
        if highwater is None or position is None or position < highwater:
            return False
    return True


def _parsed(records: Iterable[Any]) -> list[WindowSummary]:
    summaries = []
    for record in records:
        try:
            summaries.append(WindowSummary.from_json(record.value or b""))
        except ValueError as error:
            _log.warning(
                "skipping record %s/%s of the windows topic: %s",
                record.partition,
                record.offset,
                error,
            )
    return summaries
