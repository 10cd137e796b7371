"""The embedded Tansu broker: start, readiness, topics, restart, storage."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import TopicAlreadyExistsError

from monitor.demo.broker import EmbeddedBroker
from tests.support.realparts import MotoS3


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as started:
        yield started


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for value in values:
        producer.send(topic, value=value)
    producer.flush()
    producer.close()


def read_partition(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    # Stops after `expected` records, or when none arrived for a second.
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=1000
    )
    consumer.assign([TopicPartition(topic, 0)])
    values: list[bytes] = []
    for record in consumer:
        values.append(record.value)
        if len(values) == expected:
            break
    consumer.close()
    return values


def test_started_broker_serves_produced_records_on_a_loopback_port(
    broker: EmbeddedBroker,
) -> None:
    broker.create_topic("greetings")
    produce(broker.bootstrap_servers, "greetings", [b"hello", b"world"])

    assert broker.bootstrap_servers.startswith("127.0.0.1:")
    assert read_partition(broker.bootstrap_servers, "greetings", 2) == [b"hello", b"world"]


def test_created_topic_has_the_requested_partitions(broker: EmbeddedBroker) -> None:
    broker.create_topic("wide", partitions=4)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)

    assert consumer.partitions_for_topic("wide") == {0, 1, 2, 3}
    consumer.close()


def test_creating_an_existing_topic_raises_unless_exist_ok(broker: EmbeddedBroker) -> None:
    broker.create_topic("twice", partitions=2)
    broker.create_topic("twice", partitions=5, exist_ok=True)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    partitions = consumer.partitions_for_topic("twice")
    consumer.close()

    assert partitions == {0, 1}
    with pytest.raises(TopicAlreadyExistsError):
        broker.create_topic("twice")


def group_gone(leader: int, timeout_s: float = 10.0) -> bool:
    """Whether every process of the broker's process group has exited (bounded wait)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.killpg(leader, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_stop_leaves_no_process_behind_and_is_idempotent() -> None:
    broker = EmbeddedBroker().start()
    leader = broker._process.pid if broker._process else -1

    broker.stop()
    broker.stop()

    assert not broker.running
    assert group_gone(leader, timeout_s=0)


def test_broker_dies_with_its_parent_even_when_the_parent_is_killed(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from monitor.demo.broker import EmbeddedBroker\n"
        "broker = EmbeddedBroker().start()\n"
        "print(broker._process.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-W", "ignore", "-c", script],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert parent.stdout is not None
    leader = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    parent.stdout.close()

    assert group_gone(leader)


def test_restart_keeps_the_port_so_clients_reconnect_to_the_same_address() -> None:
    with EmbeddedBroker() as broker:
        address = broker.bootstrap_servers
        broker.kill()
        running_after_kill = broker.running
        broker.start()

        assert not running_after_kill
        assert broker.running
        assert broker.bootstrap_servers == address


@pytest.mark.usefixtures("kafka_outage")
def test_memory_storage_forgets_records_across_a_restart(broker: EmbeddedBroker) -> None:
    broker.create_topic("volatile")
    produce(broker.bootstrap_servers, "volatile", [b"gone"])
    broker.kill()
    broker.start()
    broker.create_topic("volatile")

    assert read_partition(broker.bootstrap_servers, "volatile", 1) == []


@pytest.mark.usefixtures("kafka_outage")
def test_s3_storage_keeps_records_across_a_broker_crash(moto_s3: MotoS3) -> None:
    with EmbeddedBroker(moto_s3.storage, env=moto_s3.broker_env) as broker:
        broker.create_topic("durable")
        produce(broker.bootstrap_servers, "durable", [b"a", b"b", b"c"])
        broker.kill()
        broker.start()

        assert read_partition(broker.bootstrap_servers, "durable", 3) == [b"a", b"b", b"c"]


def test_unknown_storage_scheme_is_rejected_before_starting_anything() -> None:
    with pytest.raises(ValueError, match="storage"):
        EmbeddedBroker("file:///tmp/x")
