"""`EventSource`: the ranking-events topic as batches of records, for one consumer group member.

A thin layer over kafka-python's `KafkaConsumer` (>= 3.0.12) with the rules the service needs:

- Auto-commit is off: the service commits explicit offsets, only up to what is safe
  (`commit({partition: next_offset})`, docs/recovery.md, "The rules").
- Rebalances arrive as data. kafka-python 3.x runs rebalance listeners on its IO loop, where a
  blocking consumer call raises, so the listener only records revoked and assigned partitions;
  `poll()` returns them with the records, for the service to drop or rebuild state after poll
  returns. The default (eager) assignors revoke every partition at each rebalance, but
  kafka-python 3 keeps the fetch position of a partition in both `revoked` and `assigned`: it
  continues where it was, not from its committed offset. A caller that drops such a
  partition's state must `rewind()` it to replay from the committed offset.
- A broker that does not answer is not an error: `poll()` connects lazily, waits with backoff,
  and returns empty batches while `broker_up` is False. Nothing here raises on a Kafka error;
  `commit()` returns False instead. `broker_up` is whether some connection to a broker has
  completed its handshake: a connection still being attempted does not count.
- A batch that cannot be read (a codec library missing, a corrupt batch) is reported, not
  retried in a loop: the partition is paused at that offset (`unreadable` says where and why)
  and tried again after a backoff (1 minute, doubling to 10); the other partitions go on.
  Records after it are never skipped: the committed offset stays before the batch, so a
  restart (after installing the codec, say) reads it again. Whatever else `poll()` raises is
  logged (once a minute at most for the same error) and counted in `errors`.
- Records come as `SourceRecord`s: read from the fetched batches in C where that is safe
  (monitor/kafka/records.py), else converted from kafka-python's ConsumerRecords.
- Lag is `highwater - next offset`, both known without `end_offsets()` (which Tansu answers
  wrongly): the highwater comes with every fetch response.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Final, Protocol

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import MemberState, OffsetAndMetadata

from monitor.kafka.bootstrap import (
    RECONNECT_BACKOFF_MAX_MS,
    Backoff,
    KafkaUnavailableError,
    bootstrap_reachable,
)
from monitor.kafka.records import SourceRecord, UnreadableBatch, install_reader

__all__ = [
    "EventSource",
    "EventStream",
    "Poll",
    "SourceRecord",
    "UnreadableBatch",
    "source_records",
]

_log = logging.getLogger(__name__)

# A commit that takes longer fails and is retried at the next tick (offsets only move forward).
COMMIT_TIMEOUT_MS = 10_000
# Errors are logged as text: a logged exception keeps its traceback's frames, and with them
# kafka-python's sockets, alive for as long as a handler holds the record.
UNREADABLE_RETRY_S = 60.0  # first retry of a paused, unreadable partition; doubles up to
UNREADABLE_RETRY_MAX_S = 600.0
ERROR_LOG_INTERVAL_S = 60.0  # the same poll error is logged at most this often


@dataclass(frozen=True)
class Poll:
    """What one `poll()` brought: records in partition then offset order, and rebalances."""

    records: list[SourceRecord] = field(default_factory=list)
    revoked: frozenset[int] = frozenset()
    assigned: frozenset[int] = frozenset()


class EventStream(Protocol):
    """What the service needs of its source of records: `EventSource`, or a fake in tests."""

    @property
    def broker_up(self) -> bool: ...

    @property
    def group_joined(self) -> bool: ...

    @property
    def assignment(self) -> frozenset[int]: ...

    @property
    def unreadable(self) -> Mapping[int, UnreadableBatch]: ...

    @property
    def errors(self) -> Mapping[str, int]: ...

    def poll(self, timeout_ms: int = 1000) -> Poll: ...

    def take_unreadable(self) -> list[UnreadableBatch]: ...

    def commit(self, offsets: Mapping[int, int]) -> bool: ...

    def rewind(self, partitions: Iterable[int]) -> bool: ...

    def committed(self, partitions: Iterable[int]) -> dict[int, int | None]: ...

    def lag(self, partition: int) -> int | None: ...

    def topic_partitions(self) -> frozenset[int] | None: ...

    def close(self) -> None: ...


class _RecordingListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Notes rebalances without touching the consumer (blocking calls raise in kafka-python 3)."""

    def __init__(self) -> None:
        # Called on kafka-python's IO thread while poll() waits for it.
        self._lock = threading.Lock()
        self._revoked: set[int] = set()
        self._assigned: set[int] = set()

    def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._revoked.update(tp.partition for tp in revoked)

    def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._assigned.update(tp.partition for tp in assigned)

    def take(self) -> tuple[frozenset[int], frozenset[int]]:
        """The partitions revoked and assigned since the last call."""
        with self._lock:
            taken = frozenset(self._revoked), frozenset(self._assigned)
            self._revoked.clear()
            self._assigned.clear()
        return taken


class EventSource:
    """A group member reading `topic`; build it, then `poll()` in a loop and `close()`."""

    def __init__(
        self,
        *,
        bootstrap_servers: str | Sequence[str],
        topic: str,
        group_id: str,
        client_id: str = "rankmon",
        session_timeout_ms: int = 45_000,
        max_poll_records: int = 5_000,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        unreadable_retry_s: float = UNREADABLE_RETRY_S,
        **kafka_options: Any,
    ) -> None:
        self.topic = topic
        self._bootstrap_servers = bootstrap_servers
        self._options: dict[str, Any] = {
            "bootstrap_servers": bootstrap_servers,
            "group_id": group_id,
            "client_id": client_id,
            "session_timeout_ms": session_timeout_ms,
            "heartbeat_interval_ms": max(100, session_timeout_ms // 6),
            "max_poll_records": max_poll_records,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "bootstrap_timeout_ms": 10_000,
            "reconnect_backoff_max_ms": RECONNECT_BACKOFF_MAX_MS,
            **kafka_options,
        }
        self._sleep = sleep
        self._backoff = Backoff()
        self._consumer: KafkaConsumer | None = None
        self._listener = _RecordingListener()
        self._next_offsets: dict[int, int] = {}
        self.broker_up = False
        self.reader = "none"  # which record reader the consumer got (`install_reader`)
        self._monotonic = monotonic
        self._unreadable_retry_s = unreadable_retry_s
        self.unreadable: dict[int, UnreadableBatch] = {}  # paused partitions, and why
        self._retry_at: dict[int, tuple[float, float]] = {}  # partition -> (when, next delay)
        self._reported: list[UnreadableBatch] = []  # by the reader, during the current poll
        self._new_unreadable: list[UnreadableBatch] = []  # since `take_unreadable()`
        self.errors: dict[str, int] = {}  # poll errors by exception type, since the start
        self._error_logged: tuple[str, float] | None = None

    @property
    def group_joined(self) -> bool:
        """Whether this member holds a stable assignment in its group."""
        if self._consumer is None:
            return False
        return bool(self._consumer.group_metadata().state == MemberState.STABLE)

    @property
    def assignment(self) -> frozenset[int]:
        """The partitions this member owns now."""
        if self._consumer is None:
            return frozenset()
        return frozenset(tp.partition for tp in self._consumer.assignment())

    def poll(self, timeout_ms: int = 1000) -> Poll:
        """Records that arrived within `timeout_ms`, plus rebalances; never raises on Kafka."""
        consumer = self._connected()
        if consumer is None:
            return Poll()
        self._retry_unreadable(consumer)
        try:
            fetched = consumer.poll(timeout_ms=timeout_ms)
        except Exception as error:  # whatever kafka-python raises, the loop goes on
            self._poll_failed(error)
            fetched = {}
        self._note_broker_state(consumer)
        # The listener ran inside this poll, before the fetch: apply it before the records.
        revoked, assigned = self._listener.take()
        for partition in revoked | assigned:
            self._next_offsets.pop(partition, None)
            # A new assignment starts unpaused, at the committed offset: a batch that is
            # still unreadable is reported again when it is reached.
            self.unreadable.pop(partition, None)
            self._retry_at.pop(partition, None)
        records: list[SourceRecord] = []
        for tp in sorted(fetched, key=lambda tp: tp.partition):
            raws = fetched[tp]
            if raws:
                records += source_records(raws)
                self._next_offsets[tp.partition] = raws[-1].offset + 1
                self._readable_again(tp.partition, raws[-1].offset)
        self._pause_unreadable(consumer)
        return Poll(records, revoked, assigned)

    def take_unreadable(self) -> list[UnreadableBatch]:
        """Unreadable batches reported since the last call (each pause once)."""
        taken, self._new_unreadable = self._new_unreadable, []
        return taken

    def _report(self, batch: UnreadableBatch) -> None:
        self._reported.append(batch)

    def _pause_unreadable(self, consumer: KafkaConsumer) -> None:
        """Pause each partition the reader could not read, until its retry is due."""
        reported, self._reported = self._reported, []
        now = self._monotonic()
        # The first report of a partition in this poll (a pipelined fetch may report again).
        for batch in {b.partition: b for b in reversed(reported)}.values():
            _, delay = self._retry_at.get(batch.partition, (now, self._unreadable_retry_s))
            self._retry_at[batch.partition] = (now + delay, min(delay * 2, UNREADABLE_RETRY_MAX_S))
            self.unreadable[batch.partition] = batch
            self._new_unreadable.append(batch)
            consumer.pause(TopicPartition(self.topic, batch.partition))
            _log.error(
                "cannot read partition %s at offset %s; paused it, retrying in %.0f s: %s",
                batch.partition,
                batch.offset,
                delay,
                batch.error,
            )

    def _retry_unreadable(self, consumer: KafkaConsumer) -> None:
        now = self._monotonic()
        due = [p for p, (at, _) in self._retry_at.items() if at <= now and p in self.unreadable]
        for partition in due:
            # Still listed as unreadable (and its backoff kept) until a record past the
            # batch arrives; a failure again pauses it for twice as long.
            _, delay = self._retry_at[partition]
            self._retry_at[partition] = (float("inf"), delay)
            consumer.resume(TopicPartition(self.topic, partition))

    def _readable_again(self, partition: int, last_offset: int) -> None:
        batch = self.unreadable.get(partition)
        if batch is not None and last_offset >= batch.offset:
            del self.unreadable[partition]
            self._retry_at.pop(partition, None)
            _log.warning("partition %s is readable again from offset %s", partition, batch.offset)

    def _poll_failed(self, error: Exception) -> None:
        name = type(error).__name__
        self.errors[name] = self.errors.get(name, 0) + 1
        text, now = f"{name}: {error}", self._monotonic()
        last = self._error_logged
        if last is None or last[0] != text or now - last[1] >= ERROR_LOG_INTERVAL_S:
            self._error_logged = (text, now)
            _log.warning("poll failed, retrying: %s", text)

    def commit(self, offsets: Mapping[int, int]) -> bool:
        """Commit `{partition: next offset to read}` for the partitions still owned.

        Returns False if the commit could not be made now (broker down, rebalance running):
        the caller commits again later; offsets only move forward, so nothing is lost.
        """
        consumer = self._consumer
        if consumer is None or not self.broker_up:
            return False  # a commit would only block until its timeout
        owned = self.assignment
        to_commit = {
            TopicPartition(self.topic, partition): OffsetAndMetadata(offset, "", -1)
            for partition, offset in offsets.items()
            if partition in owned
        }
        if not to_commit:
            return True
        try:
            consumer.commit(to_commit, timeout_ms=COMMIT_TIMEOUT_MS)
        except KafkaError as error:
            _log.warning("commit of %s failed, will retry: %s", dict(offsets), str(error))
            return False
        return True

    def rewind(self, partitions: Iterable[int]) -> bool:
        """Seek owned partitions back to their committed offsets (by `auto_offset_reset` if
        none), so their records are fetched again; False on a Kafka error (state unknown)."""
        consumer = self._consumer
        if consumer is None:
            return False
        try:
            for partition in sorted(set(partitions) & self.assignment):
                tp = TopicPartition(self.topic, partition)
                offset = consumer.committed(tp)
                if offset is not None:
                    consumer.seek(tp, offset)
                elif self._options["auto_offset_reset"] == "earliest":
                    consumer.seek_to_beginning(tp)
                else:
                    consumer.seek_to_end(tp)
                self._next_offsets.pop(partition, None)
        except KafkaError as error:
            _log.warning("rewind of %s failed: %s", sorted(partitions), error)
            return False
        return True

    def committed(self, partitions: Iterable[int]) -> dict[int, int | None]:
        """Each partition's committed offset (None: the group never committed it).

        Raises `KafkaUnavailableError` when the broker cannot say now."""
        consumer = self._consumer
        if consumer is None:
            raise KafkaUnavailableError("not connected to Kafka")
        try:
            return {p: consumer.committed(TopicPartition(self.topic, p)) for p in partitions}
        except KafkaError as error:
            raise KafkaUnavailableError(f"cannot read committed offsets: {error}") from error

    def topic_partitions(self) -> frozenset[int] | None:
        """Every partition of the events topic, from the client's metadata; None if unknown."""
        consumer = self._consumer
        if consumer is None:
            return None
        try:
            found = consumer.partitions_for_topic(self.topic)
        except KafkaError:
            return None
        return frozenset(found) if found else None

    def lag(self, partition: int) -> int | None:
        """Records after the last one returned, from the last fetch's highwater; None if unknown."""
        consumer, next_offset = self._consumer, self._next_offsets.get(partition)
        if consumer is None or next_offset is None or partition not in self.assignment:
            return None
        highwater = consumer.highwater(TopicPartition(self.topic, partition))
        return None if highwater is None else max(0, highwater - next_offset)

    def close(self) -> None:
        """Leave the group without committing anything more."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close(autocommit=False)
        self.broker_up = False

    def _connected(self) -> KafkaConsumer | None:
        if self._consumer is not None:
            return self._consumer
        if bootstrap_reachable(self._bootstrap_servers):
            try:
                consumer = KafkaConsumer(**self._options)
                self.reader = install_reader(consumer, self._report)
                consumer.subscribe([self.topic], listener=self._listener)
            except KafkaError as error:
                _log.warning("cannot reach Kafka at %s: %s", self._bootstrap_servers, str(error))
            else:
                self._consumer = consumer
                self.broker_up = True
                self._backoff.reset()
                return consumer
        self.broker_up = False
        self._sleep(self._backoff.next_delay())
        return None

    def _note_broker_state(self, consumer: KafkaConsumer) -> None:
        # kafka-python reconnects by itself and poll() just returns nothing while no broker
        # answers. Its `connection-count` metric counts connections still being attempted
        # (it read 1 two seconds into an outage); a connection counts here once its
        # handshake completed, which no broker that is down can do.
        connections = getattr(getattr(consumer, "_manager", None), "_conns", None)
        if isinstance(connections, dict):
            self.broker_up = any(getattr(c, "connected", False) for c in connections.values())
            return
        count = consumer.metrics().get("consumer-metrics", {}).get("connection-count")
        self.broker_up = count is None or count > 0


# One C call per record picks the fields (this runs for every record consumed).
_RECORD_FIELDS: Final = attrgetter("topic", "partition", "offset", "timestamp", "key", "value")


def source_records(raws: list[Any]) -> list[SourceRecord]:
    """A fetch's records of one partition as `SourceRecord`s: as they are when read in C
    (`monitor.kafka.records`), else from kafka-python's `ConsumerRecord`s."""
    if raws and type(raws[0]) is SourceRecord:
        return raws
    return list(map(_source_record, map(_RECORD_FIELDS, raws)))


def _source_record(fields: tuple[Any, ...]) -> SourceRecord:
    if fields[5] is None:  # a tombstone: no value is an empty value
        fields = (*fields[:5], b"")
    return SourceRecord._make(fields)
