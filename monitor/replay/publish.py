"""A replay's records to Kafka: the events topic of `kafka:`, durably (`acks=all`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kafka import KafkaProducer
from kafka.errors import KafkaError

from monitor.errors import RankmonError

__all__ = ["KafkaPublisher", "PublishError"]

_TIMEOUT_S = 60.0


class PublishError(RankmonError):
    """A replay's records could not be stored (the broker is down or refuses them)."""


class KafkaPublisher:
    """Sends to `topic`, keyed by query id; `end` waits for every record and then sends the
    end-of-replay marker to every partition."""

    def __init__(self, producer: KafkaProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self._futures: list[Any] = []
        self._begun: list[Any] = []  # the start markers

    def send(self, key: bytes, value: bytes) -> None:
        try:
            self._futures.append(self.producer.send(self.topic, key=key, value=value))
        except KafkaError as error:
            raise PublishError(f"cannot publish to {self.topic}: {error}") from error

    def begin(self, marker: tuple[bytes, bytes]) -> None:
        """Send the start marker to every partition, ahead of the replay's records."""
        try:
            partitions = self.producer.partitions_for(self.topic) or set()
            key, value = marker
            for partition in sorted(partitions):
                self._begun.append(
                    self.producer.send(self.topic, key=key, value=value, partition=partition)
                )
        except KafkaError as error:
            raise PublishError(f"cannot publish to {self.topic}: {error}") from error

    def end(self, marker: Callable[[int], tuple[bytes, bytes]]) -> None:
        futures, self._futures = self._futures, []
        try:
            self.producer.flush(timeout=_TIMEOUT_S)
            begun, self._begun = self._begun, []
            for future in begun:
                future.get(timeout=_TIMEOUT_S)
            per_partition = Counter(f.get(timeout=_TIMEOUT_S).partition for f in futures)
            partitions = self.producer.partitions_for(self.topic) or set()
            ends = []
            for partition in sorted(partitions):
                key, value = marker(per_partition[partition])
                ends.append(
                    self.producer.send(self.topic, key=key, value=value, partition=partition)
                )
            self.producer.flush(timeout=_TIMEOUT_S)
            for future in ends:
                future.get(timeout=_TIMEOUT_S)
        except KafkaError as error:
            raise PublishError(f"cannot publish to {self.topic}: {error}") from error

    def close(self) -> None:
        self.producer.close(timeout=10)
