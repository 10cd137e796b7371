"""A replay's records to Kafka: the events topic of `kafka:`, durably (`acks=all`).

The replay's workers hand each record over (`send` puts it in a queue); one thread of the
publisher gives the queued records to kafka-python's producer every few milliseconds, in a
row. Sixteen workers calling the producer themselves spent more on its locks and its sender
thread than on the rest of a query (bench/replay.py: 35 us of a worker's CPU a record, not
18 in a row). At most `MAX_QUEUED` records wait: past that a worker waits for room, so a
slow broker slows the replay rather than filling memory. `end` gives the rest to the producer,
waits until every record is stored and sends the end markers.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from kafka import KafkaProducer
from kafka.errors import KafkaError
from kafka.partitioner.default import murmur2

from monitor.errors import RankmonError
from monitor.kafka.options import producer_options
from monitor.kafka.settings import KafkaConfig

__all__ = ["MAX_QUEUED", "KafkaPublisher", "PublishError"]

MAX_QUEUED = 10_000  # records handed over, not yet given to the producer
_HAND_OVER_S = 0.005

_TIMEOUT_S = 60.0
# A replay sends thousands of records in seconds. kafka-python's 16 KiB batches hold 8 records
# of 20 documents with their titles and snippets, and each batch costs its sender thread a
# round of work: quarter-MiB batches sent every 100 ms (not 20) cut the producer's CPU a
# record from 56 to 9 us in its thread (bench/replay.py's setup). A batch is cut at this size
# before compression, under a broker's 1 MiB default message limit; a replay's records wait
# at most `_LINGER_MS` more, within the replay's one window all the same.
_BATCH_BYTES = 262_144
_LINGER_MS = 100


class PublishError(RankmonError):
    """A replay's records could not be stored (the broker is down or refuses them)."""


class KafkaPublisher:
    """Sends to `topic`, keyed by query id; `end` waits for every record and then sends the
    end-of-replay marker to every partition."""

    @classmethod
    def connect(cls, kafka: KafkaConfig, compression: str) -> KafkaPublisher:
        """A publisher to `kafka.topic` with the producer a replay uses: durable, records
        compressed as `replay.compression` says, sent within 100 ms in large batches."""
        try:
            options = producer_options(kafka).with_changes(
                compression_type=None if compression == "none" else compression,
                linger_ms=_LINGER_MS,
                batch_size=_BATCH_BYTES,
                bootstrap_timeout_ms=10_000,
            )
            producer = KafkaProducer(**options)
        except KafkaError as error:
            servers = ", ".join(kafka.bootstrap_servers)
            raise PublishError(f"cannot reach Kafka at {servers}: {error}") from None
        return cls(producer, kafka.topic)

    def __init__(self, producer: KafkaProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self._futures: list[Any] = []
        self._begun: list[Any] = []  # the start markers
        self._partitions: list[int] = []  # the topic's, as the replay began
        self._sent: Counter[int] = Counter()  # records a partition, this replay
        self._queue: deque[tuple[bytes, bytes]] = deque()
        self._room = threading.Condition()
        self._stop = threading.Event()
        self._hand_over: threading.Thread | None = None  # while a replay runs
        self._error: PublishError | None = None

    def send(self, key: bytes, value: bytes) -> None:
        """Hand one record over; it goes to the partition Kafka's default partitioner gives
        its key (murmur2, as Java's), counted there for the end marker. Raises PublishError
        once the producer refused one."""
        if self._error is not None:
            raise self._error
        self._queue.append((key, value))
        if self._hand_over is None:  # no replay begun: at once
            self._produce_queued()
        elif len(self._queue) > MAX_QUEUED:
            with self._room:
                self._room.wait_for(
                    lambda: len(self._queue) <= MAX_QUEUED or self._error is not None
                )

    def begin(self, marker: tuple[bytes, bytes]) -> None:
        """Send the start marker to every partition, ahead of the replay's records. A replay
        begins afresh: what a failed one left (its error, its queue, its hand-over thread) is
        dropped, so the schedule's next replay is published whole."""
        self._stop_handing_over()
        self._error = None
        self._queue.clear()
        self._futures, self._begun, self._sent = [], [], Counter()
        try:
            self._partitions = self._partitions_now()
            key, value = marker
            for partition in self._partitions:
                self._begun.append(
                    self.producer.send(self.topic, key=key, value=value, partition=partition)
                )
        except KafkaError as error:
            raise PublishError(f"cannot publish to {self.topic}: {error}") from error
        self._stop.clear()
        self._hand_over = threading.Thread(
            target=self._hand_over_queued, name="replay-publish", daemon=True
        )
        self._hand_over.start()

    def end(self, marker: Callable[[int], tuple[bytes, bytes]]) -> None:
        self._stop_handing_over()
        if self._error is not None:
            raise self._error
        self._produce_queued()
        futures, self._futures = self._futures, []
        per_partition, self._sent = self._sent, Counter()
        begun, self._begun = self._begun, []
        try:
            self.producer.flush(timeout=_TIMEOUT_S)
            for future in begun:
                future.get(timeout=_TIMEOUT_S)
            for future in futures:  # all done by the flush: only a failure is looked into
                if future.failed():
                    future.get(timeout=_TIMEOUT_S)
            ends = []
            for partition in self._partitions_now():
                key, value = marker(per_partition[partition])
                ends.append(
                    self.producer.send(self.topic, key=key, value=value, partition=partition)
                )
            self.producer.flush(timeout=_TIMEOUT_S)
            for future in ends:
                future.get(timeout=_TIMEOUT_S)
        except KafkaError as error:
            raise PublishError(f"cannot publish to {self.topic}: {error}") from error
        finally:
            self._partitions = []

    def close(self) -> None:
        """Give what is queued to the producer, and close it (it sends what it holds)."""
        self._stop_handing_over()
        if self._error is None:
            self._produce_queued()
        self.producer.close(timeout=10)

    def _hand_over_queued(self) -> None:
        while not self._stop.wait(_HAND_OVER_S):
            try:
                self._produce_queued()
            except Exception as error:  # kept for the replay's next send or its end
                self._error = (
                    error
                    if isinstance(error, PublishError)
                    else PublishError(f"cannot publish to {self.topic}: {error!r}")
                )
                with self._room:
                    self._room.notify_all()
                return

    def _stop_handing_over(self) -> None:
        thread, self._hand_over = self._hand_over, None
        if thread is not None:
            self._stop.set()
            thread.join()

    def _produce_queued(self) -> None:
        """Give every queued record to the producer, in a row (one thread at a time)."""
        queue = self._queue
        try:
            if queue and not self._partitions:
                self._partitions = self._partitions_now()
            partitions = self._partitions
            while queue:
                key, value = queue.popleft()
                partition = partitions[_key_hash(key) % len(partitions)]
                self._futures.append(
                    self.producer.send(self.topic, key=key, value=value, partition=partition)
                )
                self._sent[partition] += 1
        except KafkaError as error:
            raise PublishError(f"cannot publish to {self.topic}: {error}") from error
        with self._room:
            self._room.notify_all()

    def _partitions_now(self) -> list[int]:
        partitions = sorted(self.producer.partitions_for(self.topic) or ())
        if not partitions:
            raise PublishError(f"cannot publish to {self.topic}: the topic has no partitions")
        return partitions


@functools.lru_cache(maxsize=1 << 17)
def _key_hash(key: bytes) -> int:
    """A key's murmur2 hash as Kafka's default partitioner takes it: the evaluation set's
    query ids come back every replay, and kafka-python hashes in pure Python."""
    return int(murmur2(key)) & 0x7FFFFFFF
