"""In-memory stand-ins for the service's IO, so the loop runs in milliseconds without a broker.

- `FakeStream` (an `EventStream`): a partition log the test appends to; `poll()` hands out
  what was appended since, in partition then offset order; commits are kept. It can be made
  to block inside `poll()` (`stall()` / `release()`), as a client stuck in a busy loop.
- `FakeProducer` (a `RecordSink`): keeps every record sent, by topic; flushes succeed.
- `FakeWindowsTopic` (a `ShareReader`): reads back what the producer put on the windows topic,
  and follows it (`FakeTail`) for a group's decider.
- `FakeFeed` (a judging `RecordFeed`): reads back what the producer put on a topic, from its
  beginning.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.share import WindowShare, WindowsRecord
from monitor.checkpoint.share_reader import RestoreNeeds
from monitor.comparisons.record import ComparisonRecord
from monitor.kafka.consumer import Poll, SourceRecord, UnreadableBatch
from monitor.testing.clock import FakeClock

if TYPE_CHECKING:
    from monitor.service import Monitor


class FakeStream:
    """One consumer's view of a topic held in memory."""

    def __init__(
        self,
        topic: str,
        partitions: Iterable[int] = (0,),
        *,
        topic_partitions: Iterable[int] | None = None,
    ) -> None:
        """`partitions`: those this member owns; `topic_partitions`: all the topic has
        (default: the owned ones, a member alone in its group)."""
        self.topic = topic
        self.log: dict[int, list[SourceRecord]] = {p: [] for p in partitions}
        self.all_partitions = frozenset(self.log if topic_partitions is None else topic_partitions)
        self.positions = dict.fromkeys(self.log, 0)
        self.commits: list[dict[int, int]] = []
        self.broker_up = True
        self.group_joined = True
        self.unreadable: dict[int, UnreadableBatch] = {}
        self.errors: dict[str, int] = {}
        self.polls = 0
        self._assigned_once = False
        self._running = threading.Event()
        self._running.set()
        self.stalled = threading.Event()

    @property
    def assignment(self) -> frozenset[int]:
        return frozenset(self.log)

    def restart(self) -> None:
        """A new consumer of the group (another life of the process): it is assigned every
        partition and starts at the committed offsets."""
        committed = self.committed(self.log)
        self.positions = {p: committed[p] or 0 for p in self.log}
        self._assigned_once = False
        self.release()

    def append(self, partition: int, value: bytes, timestamp_ms: int = 0) -> SourceRecord:
        records = self.log[partition]
        record = SourceRecord(self.topic, partition, len(records), timestamp_ms, None, value)
        records.append(record)
        return record

    def stall(self) -> None:
        """Make the next `poll()` block until `release()`."""
        self._running.clear()

    def release(self) -> None:
        self._running.set()

    def poll(self, timeout_ms: int = 1000) -> Poll:
        self.polls += 1
        if not self._running.is_set():
            self.stalled.set()
            self._running.wait()
        assigned = frozenset() if self._assigned_once else self.assignment
        self._assigned_once = True
        records: list[SourceRecord] = []
        for partition in sorted(self.log):
            records += self.log[partition][self.positions[partition] :]
            self.positions[partition] = len(self.log[partition])
        return Poll(records, frozenset(), assigned)

    def take_unreadable(self) -> list[UnreadableBatch]:
        return []

    def commit(self, offsets: Mapping[int, int]) -> bool:
        self.commits.append(dict(offsets))
        return True

    def rewind(self, partitions: Iterable[int]) -> bool:
        committed = self.committed(partitions)
        for partition, offset in committed.items():
            self.positions[partition] = offset or 0
        return True

    def committed(self, partitions: Iterable[int]) -> dict[int, int | None]:
        last: dict[int, int | None] = dict.fromkeys(partitions)
        for commit in self.commits:
            for partition, offset in commit.items():
                if partition in last:
                    last[partition] = offset
        return last

    def lag(self, partition: int) -> int | None:
        return len(self.log[partition]) - self.positions[partition]

    def topic_partitions(self) -> frozenset[int] | None:
        return self.all_partitions

    def close(self) -> None:
        self.release()


class FakeProducer:
    """Keeps what is sent: `sent[topic]` is a list of (key, value, headers)."""

    def __init__(self) -> None:
        self.sent: dict[str, list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]]] = {}

    def send(
        self, topic: str, key: bytes | None, value: bytes, headers: list[tuple[str, bytes]]
    ) -> None:
        self.sent.setdefault(topic, []).append((key, value, list(headers)))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def shares(self, topic: str) -> list[WindowShare]:
        sent = self.sent.get(topic, [])
        return [
            WindowShare.from_record(value, headers)
            for key, value, headers in sent
            if not ComparisonRecord.is_key(key) and not ProgressRecord.is_key(key)
        ]

    def comparisons(self, topic: str) -> list[ComparisonRecord]:
        """The comparison records on the windows topic `topic`, in the order sent."""
        sent = self.sent.get(topic, [])
        return [ComparisonRecord.from_json(v) for k, v, _ in sent if ComparisonRecord.is_key(k)]

    def records(self, topic: str, start: int = 0) -> list[WindowsRecord]:
        """Shares, comparison and progress records, in the order sent (from the `start`th)."""
        return [
            _parsed(key, value, headers) for key, value, headers in self.sent.get(topic, [])[start:]
        ]

    def progress(self, topic: str) -> list[ProgressRecord]:
        """The progress records on the windows topic `topic`, in the order sent."""
        return [r for r in self.records(topic) if isinstance(r, ProgressRecord)]


def _parsed(key: bytes | None, value: bytes, headers: list[tuple[str, bytes]]) -> WindowsRecord:
    if ComparisonRecord.is_key(key):
        return ComparisonRecord.from_json(value)
    if ProgressRecord.is_key(key):
        return ProgressRecord.from_json(value)
    return WindowShare.from_record(value, headers)


class FakeWindowsTopic:
    """The windows topic as the fake producer holds it."""

    def __init__(self, producer: FakeProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self.reads = 0

    def read(
        self, take: Callable[[WindowsRecord], None], needs: RestoreNeeds | None = None
    ) -> None:
        self.reads += 1
        for record in self.producer.records(self.topic):
            take(record)

    def tail(self) -> FakeTail:
        return FakeTail(self.producer, self.topic)


class FakeTail:
    """Follows the fake windows topic from its end when made."""

    def __init__(self, producer: FakeProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self.position = len(producer.sent.get(topic, []))
        self.closed = False

    def poll(self) -> list[WindowsRecord]:
        records = self.producer.records(self.topic, self.position)
        self.position += len(records)
        return records

    def close(self) -> None:
        self.closed = True


class FakeFeed:
    """A topic as the fake producer holds it, read from its beginning (one partition; the
    record timestamp is the clock's when read)."""

    def __init__(self, producer: FakeProducer, topic: str, clock: FakeClock) -> None:
        self.producer = producer
        self.topic = topic
        self.clock = clock
        self.position = 0
        self.catch_ups = 0

    def catch_up(self, take: Callable[[SourceRecord], None]) -> None:
        self.catch_ups += 1
        self.position = 0
        for record in self.poll():
            take(record)

    def poll(self) -> list[SourceRecord]:
        sent = self.producer.sent.get(self.topic, [])[self.position :]
        records = [
            SourceRecord(self.topic, 0, self.position + n, self.clock.now_ms(), key, value)
            for n, (key, value, _) in enumerate(sent)
        ]
        self.position += len(records)
        return records

    def close(self) -> None:
        pass


class FakeServer:
    """An HTTP endpoint that serves nothing: a monitor on fakes then opens no socket."""

    url = "http://fake"

    def __init__(self) -> None:
        self.started = self.stopped = 0

    def start(self) -> FakeServer:
        self.started += 1
        return self

    def stop(self) -> None:
        self.stopped += 1


def finalize_all(monitor: Monitor, clock: FakeClock) -> None:
    """Take in what the stream holds, then let five minutes pass (every lateness and idle
    timeout of the tests' configs) and tick until every window is finalized."""
    for _ in range(20):
        monitor.step()
        clock.advance(100)
    clock.advance(300_000)
    for _ in range(80):
        monitor.step()
        clock.advance(100)
