"""A replay's publisher (`monitor.replay.publish.KafkaPublisher`) over a producer that keeps
what it is given: where each record goes, what the end markers count, a producer that
refuses a record, and one too slow to keep up."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import orjson
import pytest
from kafka.errors import KafkaTimeoutError
from kafka.partitioner.default import DefaultPartitioner

from monitor.replay import publish
from monitor.replay.publish import KafkaPublisher, PublishError

TOPIC = "ranking-events"


class Done:
    """A send's future, done."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def failed(self) -> bool:
        return self.error is not None

    def get(self, timeout: float | None = None) -> None:
        if self.error is not None:
            raise self.error


class KeptProducer:
    """kafka-python's producer as the publisher uses it, keeping every record in order."""

    def __init__(self, partitions: int = 3) -> None:
        self.partitions = set(range(partitions))
        self.sent: list[tuple[int, bytes, bytes]] = []
        self.refuse_after: int | None = None
        self.gate = threading.Event()
        self.gate.set()
        self.closed = False

    def partitions_for(self, topic: str) -> set[int]:
        assert topic == TOPIC
        return self.partitions

    def send(self, topic: str, *, key: bytes, value: bytes, partition: int) -> Done:
        self.gate.wait()
        if self.refuse_after is not None and len(self.sent) >= self.refuse_after:
            raise KafkaTimeoutError(
                "Failed to allocate memory within the configured max blocking time"
            )
        self.sent.append((partition, key, value))
        return Done()

    def flush(self, timeout: float | None = None) -> None:
        pass

    def close(self, timeout: float | None = None) -> None:
        self.closed = True


class Cluster:
    """What kafka-python's default partitioner reads of the cluster."""

    def __init__(self, partitions: set[int]) -> None:
        self.partitions = partitions

    def topics(self) -> set[str]:
        return {TOPIC}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions


def marker(kind: str) -> Any:
    return lambda events: (b"replay-1", orjson.dumps({"kind": kind, "events": events}))


def test_each_record_goes_where_kafkas_partitioner_puts_its_key_between_the_markers() -> None:
    producer = KeptProducer(partitions=3)
    publisher = KafkaPublisher(producer, TOPIC)
    publisher.begin(marker("start")(0))
    keys = [f"q{n}".encode() for n in range(500)]
    for key in keys:
        publisher.send(key, b"{}")
    publisher.end(marker("end"))
    partitioner = DefaultPartitioner()
    expected = {
        key: partitioner.partition(TOPIC, key, key, b"{}", b"{}", Cluster(producer.partitions))
        for key in keys
    }
    records = [(p, k) for p, k, v in producer.sent if k != b"replay-1"]
    assert records == [(expected[key], key) for key in keys]  # in order, each where Java's is
    for partition in range(3):
        on_it = [
            orjson.loads(v) if k == b"replay-1" else k
            for p, k, v in producer.sent
            if p == partition
        ]
        assert on_it[0] == {"kind": "start", "events": 0}
        assert on_it[-1] == {"kind": "end", "events": Counter(expected.values())[partition]}
        assert len(on_it) == Counter(expected.values())[partition] + 2


def test_a_record_the_producer_refuses_fails_the_replay_naming_the_topic() -> None:
    producer = KeptProducer()
    producer.refuse_after = 3 + 40  # the start markers, then 40 records
    publisher = KafkaPublisher(producer, TOPIC)
    publisher.begin(marker("start")(0))
    with pytest.raises(PublishError, match=TOPIC) as raised:
        for n in range(10_000):
            publisher.send(f"q{n}".encode(), b"{}")
        publisher.end(marker("end"))
    assert "max blocking time" in str(raised.value)
    assert not [v for _, k, v in producer.sent if b'"end"' in v]  # no end marker claims it whole


def test_the_replay_after_a_refused_one_is_published_whole() -> None:
    # A scheduled replayer goes on after a failed replay (the broker was away a moment): the
    # next one must not inherit the error, the queue or the hand-over thread.
    producer = KeptProducer()
    producer.refuse_after = 3 + 40
    publisher = KafkaPublisher(producer, TOPIC)
    publisher.begin(marker("start")(0))
    with pytest.raises(PublishError):
        for n in range(10_000):
            publisher.send(f"q{n}".encode(), b"{}")
        publisher.end(marker("end"))
    producer.refuse_after = None  # the broker is back
    producer.sent.clear()
    publisher.begin(marker("start")(0))
    for n in range(100):
        publisher.send(f"p{n}".encode(), b"{}")
    publisher.end(marker("end"))
    records = [k for _, k, _ in producer.sent if k != b"replay-1"]
    assert records == [f"p{n}".encode() for n in range(100)]
    ends = [orjson.loads(v)["events"] for _, k, v in producer.sent if b'"end"' in v]
    assert sum(ends) == 100 and len(ends) == 3
    assert len([t for t in threading.enumerate() if t.name == "replay-publish"]) == 0


def test_a_slow_broker_holds_the_replay_back_rather_than_queueing_without_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(publish, "MAX_QUEUED", 50)
    producer = KeptProducer()
    publisher = KafkaPublisher(producer, TOPIC)
    publisher.begin(marker("start")(0))
    producer.gate.clear()  # the producer blocks, as kafka-python's does with its buffer full
    handed = []

    def replay() -> None:
        for n in range(300):
            publisher.send(f"q{n}".encode(), b"{}")
            handed.append(n)

    worker = threading.Thread(target=replay, daemon=True)
    worker.start()
    worker.join(timeout=1.0)
    assert worker.is_alive()  # held back
    assert len(handed) <= 52  # what the queue holds, and the record its thread has in hand
    producer.gate.set()
    worker.join(timeout=10)
    assert not worker.is_alive()
    publisher.end(marker("end"))
    assert len([k for _, k, _ in producer.sent if k != b"replay-1"]) == 300
    publisher.close()
    assert producer.closed
