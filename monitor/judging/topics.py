"""Reading the judging loop's topics: every partition from its beginning, to its end once
(`catch_up`), then what came since (`poll`, never waiting).

A plain consumer (no group, nothing committed), with the event consumer's connection options:
the to-judge topic is read for the pairs any instance asked for, the judgments topic for every
judgment. Both are read whole on each start, so keep them compacted (keyed by pair) or with a
retention longer than the evaluation set's life.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from kafka import TopicPartition
from kafka.errors import KafkaError

from monitor.checkpoint.share_reader import at_end, topic_consumer
from monitor.kafka.bootstrap import KafkaUnavailableError
from monitor.kafka.consumer import SourceRecord, source_records
from monitor.kafka.options import reader_options
from monitor.kafka.settings import KafkaConfig
from monitor.logs import fields

__all__ = ["RecordFeed", "TopicFeed", "fetched_records", "read_to_end"]

_log = logging.getLogger(__name__)

POLL_MAX_RECORDS: Final = 2000  # per poll: the loop keeps its pace whatever the backlog


class RecordFeed(Protocol):
    """A topic read from its beginning (the judging loop's; tests pass lists)."""

    def catch_up(self, take: Callable[[SourceRecord], None]) -> None: ...

    def poll(self) -> list[SourceRecord]: ...

    def close(self) -> None: ...


class TopicFeed:
    """Every partition of `topic`, from its beginning."""

    def __init__(
        self, kafka: KafkaConfig, topic: str, purpose: str, timeout_s: float = 30.0
    ) -> None:
        self._options: Mapping[str, Any] = reader_options(kafka)
        self._kafka = kafka
        self.topic = topic
        self._purpose = purpose
        self._timeout_s = timeout_s
        self._consumer: Any = None

    def catch_up(self, take: Callable[[SourceRecord], None]) -> None:
        """Hand `take` every record of the topic, in offset order per partition, up to its
        end now; `KafkaUnavailableError` if it cannot (a new call starts again from the
        beginning)."""
        self.close()
        consumer = topic_consumer(
            list(self._kafka.bootstrap_servers),
            f"{self._kafka.client_id}-{self._purpose}",
            f"read {self.topic}",
            self._options,
        )
        self._consumer = consumer
        try:
            partitions = [
                TopicPartition(self.topic, p)
                for p in sorted(consumer.partitions_for_topic(self.topic) or ())
            ]
            if not partitions:
                raise KafkaUnavailableError(f"the topic {self.topic} does not exist (create it)")
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            read_to_end(consumer, partitions, take, self.topic, self._timeout_s)
        except KafkaError as error:
            self.close()
            raise KafkaUnavailableError(f"cannot read {self.topic}: {error}") from error
        except KafkaUnavailableError:
            self.close()
            raise

    def follow_to_end(self, take: Callable[[SourceRecord], None]) -> None:
        """Hand `take` what was written up to the topic's end now (its end asked of the
        broker, not the last fetch's), from where the reader is; `KafkaUnavailableError` when
        nothing comes for the timeout before it."""
        consumer = self._consumer
        if consumer is None:
            return
        try:
            partitions = sorted(consumer.assignment(), key=lambda tp: tp.partition)
            ends = consumer.end_offsets(partitions)
            deadline = time.monotonic() + self._timeout_s
            while any(consumer.position(tp) < ends[tp] for tp in partitions):
                if time.monotonic() > deadline:
                    raise KafkaUnavailableError(
                        f"{self.topic}: nothing read for {self._timeout_s:g}s before its end"
                    )
                records = fetched_records(consumer.poll(timeout_ms=200))
                for record in records:
                    take(record)
                if records:
                    deadline = time.monotonic() + self._timeout_s
        except KafkaError as error:
            raise KafkaUnavailableError(f"cannot read {self.topic}: {error}") from error

    def poll(self) -> list[SourceRecord]:
        """The records written since the last call (those fetched already; never waits)."""
        if self._consumer is None:
            return []
        try:
            fetched = self._consumer.poll(timeout_ms=0, max_records=POLL_MAX_RECORDS)
        except KafkaError as error:
            _log.warning("cannot read %s now", self.topic, extra=fields(error=str(error)))
            return []
        return fetched_records(fetched)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close(autocommit=False)
            self._consumer = None


def read_to_end(
    consumer: Any,
    partitions: list[TopicPartition],
    take: Callable[[SourceRecord], None],
    topic: str,
    timeout_s: float,
) -> None:
    """Hand `take` what `consumer` reads of `partitions` until it is at their ends now;
    `KafkaUnavailableError` when nothing comes for `timeout_s` before (a long topic takes
    long: only a stall is an error)."""
    deadline = time.monotonic() + timeout_s
    while not at_end(consumer, partitions):
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"{topic}: nothing read for {timeout_s:g}s before its end")
        records = fetched_records(consumer.poll(timeout_ms=200))
        for record in records:
            take(record)
        if records:
            deadline = time.monotonic() + timeout_s


def fetched_records(fetched: Mapping[Any, Any]) -> list[SourceRecord]:
    """A poll's records, partition by partition, each in offset order."""
    return [
        record
        for tp in sorted(fetched, key=lambda tp: (tp.topic, tp.partition))
        for record in source_records(fetched[tp])
    ]
