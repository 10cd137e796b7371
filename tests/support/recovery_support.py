"""What the recovery, scale-out, restart and shutdown tests share: `rankmon run` as a child
process, a mixed stream fed in chunks, and reading topics and committed offsets back.

Time: windows of 1 s with 500 ms lateness, valid events 40 ms apart (25 per window), a tick
every 200 ms; the stream is fed in chunks a few ticks apart, so windows are finalized,
published and committed while it is still arriving, as in production.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.demo.synthetic import generate_corpus
from monitor.testing.crashpoints import CRASH_ENV
from monitor.testing.mixed_traffic import MixedTraffic, TrafficRecord

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
STEP_MS = 40
CORPUS = generate_corpus(5, queries=40, judged_per_query=8, unjudged_per_query=4)
TRAFFIC = MixedTraffic(CORPUS, start_ms=T0, step_ms=STEP_MS, late_by_ms=3_000)
SERVICE_STOP_S = 30.0
# Tansu's join waits half the session timeout, and a killed member holds its partitions for
# the whole of it: short, so restarts and rebalances cost seconds, not tens of seconds.
SESSION_TIMEOUT_MS = 3000


def stream(seed: int, count: int) -> list[TrafficRecord]:
    """`count` mixed records and a closer 5 s after the last, which closes every window."""
    records = list(TRAFFIC.records(seed, count))
    last = max(r.event_time_ms for r in records)
    return [*records, TRAFFIC.closer(seed, last + 5_000)]


def create_topics(broker: EmbeddedBroker, topic: str, partitions: int) -> None:
    """The events topic and its dead-letter and windows topics."""
    broker.create_topic(topic, partitions)
    broker.create_topic(f"{topic}.dlq", 1)
    broker.create_topic(f"{topic}.windows", 1)


def write_config(
    directory: Path,
    bootstrap: str,
    topic: str,
    group: str,
    *,
    interval: str = "200ms",
    session_timeout_ms: int = SESSION_TIMEOUT_MS,
    window: str = "1s",
    idle_timeout: str = "1h",
    extra: str = "",
    name: str | None = None,
    segments: str = "{keys: [model]}",
) -> Path:
    """A config for `rankmon run`; qrels from `CORPUS` (written once, so a test may edit
    them); each process gets its own port; `extra` adds top-level sections."""
    qrels = directory / "qrels.txt"
    if not qrels.exists():
        CORPUS.write_qrels(qrels)
    config = directory / f"{name or group}.yaml"
    config.write_text(
        f"""
kafka:
  bootstrap_servers: ["{bootstrap}"]
  topic: {topic}
  group_id: {group}
  dead_letter_topic: {topic}.dlq
  windows_topic: {topic}.windows
  session_timeout_ms: {session_timeout_ms}
  max_poll_records: 50
evaluation_set: {{path: {qrels}}}
metrics: {{cutoffs: [5, 10], gains: [linear]}}
windows: {{size: {window}, allowed_lateness: 500ms, idle_timeout: {idle_timeout}}}
schedule: {{interval: {interval}}}
segments: {segments}
export: {{host: 127.0.0.1, port: 9464}}
{extra}"""
    )
    return config


class ServiceProcess:
    """`rankmon run --config FILE` as a child process, its log in a file next to the config.

    With `RANKMON_TEST_CRASH_AT` in `env` it runs `monitor.testing.crash_run` instead: the same
    service with that crash point armed."""

    def __init__(self, config: Path, name: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = config.parent / f"{name}.log"
        environ = {**os.environ, "RANKMON_EXPORT__PORT": str(self.port), **(env or {})}
        crashing = CRASH_ENV in (env or {})
        entry = ["monitor.testing.crash_run"] if crashing else ["monitor.cli", "run"]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", *entry, "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environ,
            )

    @property
    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.process.poll() is None

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Wait until `/readyz` answers 200: evaluation set loaded, group joined, broker up."""

        def ready() -> bool:
            assert self.alive, self.log()
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as response:
                    return bool(response.status == 200)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        wait_until(ready, timeout_s, "the service to be ready", poll_s=0.1)

    def metrics(self) -> str:
        """The `/metrics` text, empty if the endpoint does not answer."""
        try:
            with urllib.request.urlopen(f"{self.url}/metrics", timeout=2) as response:
                return str(response.read().decode())
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return ""

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.alive:
            self.process.kill()
        self.process.wait()

    def terminate(self, timeout_s: float = SERVICE_STOP_S) -> int:
        """SIGTERM and wait for the exit status (the process is killed if it overruns)."""
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def log(self) -> str:
        """The end of the process's log, for assertion messages."""
        return self.log_path.read_text(errors="replace")[-3000:]


def produce(
    bootstrap: str, topic: str, records: Iterable[TrafficRecord], partition: int | None = None
) -> None:
    """Produce records (keyed by query id) and wait for the acks."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for record in records:
        producer.send(topic, key=record.key, value=record.value, partition=partition)
    producer.flush()
    producer.close()


def feed(
    bootstrap: str,
    topic: str,
    records: Sequence[TrafficRecord],
    *,
    chunks: int,
    pause_s: float,
    between: Callable[[int], None] = lambda chunk: None,
) -> None:
    """Produce `records` in `chunks` parts, `pause_s` apart, calling `between(i)` after each."""
    size = -(-len(records) // chunks)
    for index in range(chunks):
        produce(bootstrap, topic, records[index * size : (index + 1) * size])
        between(index)
        time.sleep(pause_s)


def read_topic(bootstrap: str, topic: str, timeout_s: float = 20.0) -> list[Any]:
    """Every record of `topic`, partition then offset order, read up to the highwater."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        partitions = [
            TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))
        ]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        records: dict[int, list[Any]] = {tp.partition: [] for tp in partitions}
        deadline = time.monotonic() + timeout_s
        while not all(
            consumer.highwater(tp) is not None and consumer.position(tp) >= consumer.highwater(tp)
            for tp in partitions
        ):
            assert time.monotonic() < deadline, f"{topic} not read to its end"
            for tp, batch in consumer.poll(timeout_ms=200).items():
                records[tp.partition].extend(batch)
        return [r for p in sorted(records) for r in records[p]]
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    """The group's committed offset of each partition (None: nothing committed)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        consumer.close()


def wait_until(
    condition: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.3
) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll_s)


@dataclass(frozen=True)
class Published:
    """The windows and dead-letter topics of one run, as comparable values."""

    windows: list[tuple[bytes, bytes]]  # (key, value) in topic order
    dead_letters: set[tuple[int, int, str]]  # (source partition, offset, outcome), no repeats

    @classmethod
    def read(cls, bootstrap: str, topic: str) -> Published:
        """Read both topics of `topic`'s run."""
        windows = [(r.key, r.value) for r in read_topic(bootstrap, f"{topic}.windows")]
        dead = {
            (
                int(h["rankmon-source-partition"]),
                int(h["rankmon-source-offset"]),
                h["rankmon-outcome"].decode(),
            )
            for h in (dict(r.headers) for r in read_topic(bootstrap, f"{topic}.dlq"))
        }
        return cls(windows, dead)
