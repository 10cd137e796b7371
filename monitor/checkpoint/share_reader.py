"""Reading the windows topic's tail back, as far as a restore needs (`RestoreNeeds`).

How much of the tail is read depends on what the restore needs, not on the topic's
retention. Two things: the shares whose windows a replay from the committed offsets can meet
(those with a through offset past the partition's committed offset: older shares hold only
records before it) and the newest `horizon_windows` windows, which the alert baselines use.
The reader finds where those begin without reading the topic from its start, with fetches
only (Tansu answers `offsets_for_times` and `end_offsets` wrongly):

1. the end: `seek_to_end` (exact on Kafka; on Tansu the last batch's first offset), and one
   fetch from just before it, whose response carries the true highwater;
2. backwards in chunks (each read forwards, each share parsed and handed on once), until for
   every owned partition a share with a through offset at or before its committed offset was
   seen (through offsets grow along the topic: older shares are not needed) and a share
   older than the alert horizon, or the beginning of the topic. The first chunk is 64
   records; the next is sized from the shares per window seen so far to reach the horizon,
   or doubled when that says nothing.

Marks do not depend on the order shares are read in, and `ShareRestore` keeps the newest
windows per segment whatever the order, so the tail is read once.

A partition never committed, or whose shares carry no through offsets, makes the reader go
back to the beginning, once.
"""

from __future__ import annotations

import gc
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from monitor.checkpoint.share import (
    GroupFilter,
    ShareHead,
    WindowShare,
    WindowsRecord,
    parse_records,
)
from monitor.kafka.bootstrap import KafkaUnavailableError, bootstrap_reachable

__all__ = ["FIRST_CHUNK_RECORDS", "RestoreNeeds", "at_end", "read_shares", "topic_consumer"]

_log = logging.getLogger(__name__)

FIRST_CHUNK_RECORDS = 64  # the tail read's first step back (then sized from what it found)


@dataclass(frozen=True)
class RestoreNeeds:
    """What an assignment's restore needs from the windows topic.

    `committed`: each owned events-topic partition's committed offset (None: never
    committed, so every share of it counts). `horizon_windows`: how many of the newest
    windows the alert baselines use (0: none), `hop_ms` their spacing.
    """

    committed: Mapping[int, int | None]
    horizon_windows: int = 0
    hop_ms: int = 1

    def met(self, heads: Sequence[ShareHead]) -> bool:
        """Whether these heads (a tail of the topic) reach back far enough."""
        if not heads:
            return not self.committed and not self.horizon_windows
        return self._marks_met(heads) and self._horizon_met(heads)

    def next_chunk(self, heads: Sequence[ShareHead], last: int, read: int) -> int:
        """How many records to read next, having read `read` (the last chunk `last`): enough
        to reach the alert horizon at the rate of shares per window seen, else twice `last`."""
        if len(heads) < 2 or self._horizon_met(heads):
            return 2 * last
        newest = max(head.start_ms for head in heads)
        oldest = min(head.start_ms for head in heads)
        horizon = newest - self.horizon_windows * self.hop_ms
        if newest == oldest:
            return 2 * last
        per_ms = read / (newest - oldest + self.hop_ms)
        return max(64, math.ceil((oldest - horizon + self.hop_ms) * per_ms * 1.25))

    def _marks_met(self, heads: Sequence[ShareHead]) -> bool:
        for partition, committed in self.committed.items():
            if committed is None:
                return False
            if not any(
                head.through is not None
                and partition in head.partitions
                and head.through.get(partition, committed + 1) <= committed
                for head in heads
            ):
                return False
        return True

    def _horizon_met(self, heads: Sequence[ShareHead]) -> bool:
        if not self.horizon_windows:
            return True
        newest = max(head.start_ms for head in heads)
        return min(head.start_ms for head in heads) < newest - self.horizon_windows * self.hop_ms


def read_shares(
    *,
    bootstrap_servers: str | Sequence[str],
    topic: str,
    client_id: str = "rankmon-restore",
    timeout_s: float = 60.0,
    take: Callable[[WindowsRecord], None] | None = None,
    needs: RestoreNeeds | None = None,
    group: str | None = None,
    foreign: dict[str, int] | None = None,
    **kafka_options: Any,
) -> list[WindowsRecord]:
    """The shares on the windows topic in offset order per partition; none if no topic.
    Without `needs` every share, with it the tail the restore needs (module docstring).
    With `take`, each share goes to it as it is read and none is returned. With `group`,
    records another consumer group published (`GROUP_HEADER`) are passed over, and counted
    by their group in `foreign`.

    Reads with a plain consumer (no group, nothing committed) until each partition's position
    reaches the highwater that came with the fetch responses (`end_offsets()` is wrong on
    Tansu). Raises `KafkaUnavailableError` if that does not happen within `timeout_s`.
    """
    consumer = topic_consumer(bootstrap_servers, client_id, f"read {topic}", kafka_options)
    try:
        shares: list[WindowsRecord] = []
        deadline = time.monotonic() + timeout_s
        only = GroupFilter(group, {} if foreign is None else foreign)
        _read_to_end(consumer, topic, deadline, take or shares.append, needs, only=only)
        return shares
    except KafkaError as error:
        raise KafkaUnavailableError(f"cannot read {topic}: {error}") from error
    finally:
        consumer.close(autocommit=False)
        # The closed consumer's objects form reference cycles that keep its fetched (and, for
        # gzipped shares, decompressed) buffers alive until a full collection, which may not
        # come for a long time: measured, 165 shares of 300 queries held +48 MB, +10 after this.
        del consumer
        gc.collect()


def topic_consumer(
    bootstrap_servers: str | Sequence[str],
    client_id: str,
    purpose: str,
    options: Mapping[str, Any],
) -> KafkaConsumer:
    """A consumer outside any group, without commits, for reading the windows topic;
    `KafkaUnavailableError` (saying it could not `purpose`) when no broker answers."""
    if not bootstrap_reachable(bootstrap_servers):
        raise KafkaUnavailableError(f"no Kafka bootstrap server reachable at {bootstrap_servers}")
    try:
        return KafkaConsumer(
            bootstrap_servers=(
                bootstrap_servers if isinstance(bootstrap_servers, str) else list(bootstrap_servers)
            ),
            client_id=client_id,
            group_id=None,
            enable_auto_commit=False,
            **options,
        )
    except KafkaError as error:
        raise KafkaUnavailableError(f"cannot {purpose}: {error}") from error


def _read_to_end(
    consumer: KafkaConsumer,
    topic: str,
    deadline: float,
    take: Callable[[WindowsRecord], None],
    needs: RestoreNeeds | None,
    *,
    only: GroupFilter,
) -> None:
    partitions = [
        TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
    ]
    if not partitions:
        return
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    begins = {tp: consumer.position(tp, timeout_ms=10_000) for tp in partitions}
    if needs is not None:
        for tp in partitions:
            begin = begins[tp] or 0
            end = _highwater(consumer, tp, begin, deadline)
            _read_tail(consumer, tp, (begin, end), needs, take, deadline=deadline, only=only)
        return
    while not at_end(consumer, partitions):
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"{topic} not read to its end in time")
        for tp in sorted(fetched := consumer.poll(timeout_ms=200)):
            for share in parse_records(only.records(fetched[tp])):
                take(share)


def _highwater(consumer: KafkaConsumer, tp: TopicPartition, begin: int, deadline: float) -> int:
    """The partition's end, from a fetch response (Tansu's `seek_to_end` may stop short)."""
    consumer.seek_to_end(tp)
    listed = consumer.position(tp, timeout_ms=10_000) or begin
    if listed <= begin:
        return begin  # nothing there
    consumer.seek(tp, max(begin, listed - 1))
    while consumer.highwater(tp) is None:
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"{tp.topic} did not answer a fetch in time")
        consumer.poll(timeout_ms=200, max_records=1)
    return max(int(consumer.highwater(tp)), listed)


def _read_tail(
    consumer: KafkaConsumer,
    tp: TopicPartition,
    offsets: tuple[int, int],
    needs: RestoreNeeds,
    take: Callable[[WindowsRecord], None],
    *,
    deadline: float,
    only: GroupFilter,
) -> None:
    """Hand `take` the shares of [x, end) for the x `needs` asks for: chunks read backwards;
    `offsets` are the partition's (begin, end)."""
    begin, end = offsets
    heads: list[ShareHead] = []
    upper, size = end, FIRST_CHUNK_RECORDS
    while upper > begin:
        lower = max(begin, upper - size)
        for share in _shares_between(consumer, tp, lower, upper, deadline, only=only):
            if isinstance(share, WindowShare):
                heads.append(share.head)
            take(share)  # one at a time: a chunk of whole shares would weigh ~150 MB
        if needs.met(heads) or lower == begin:
            return
        upper, size = lower, needs.next_chunk(heads, upper - lower, end - lower)


def _shares_between(
    consumer: KafkaConsumer,
    tp: TopicPartition,
    lower: int,
    upper: int,
    deadline: float,
    *,
    only: GroupFilter,
) -> Iterator[WindowsRecord]:
    """The shares at offsets [lower, upper) of one partition, in offset order, as read."""
    consumer.seek(tp, lower)
    while _position(consumer, tp, upper) < upper:
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"{tp.topic} not read back in time")
        for records in consumer.poll(timeout_ms=200, max_records=16).values():
            yield from parse_records(only.records([r for r in records if r.offset < upper]))


def _position(consumer: KafkaConsumer, tp: TopicPartition, unknown: int) -> int:
    position = consumer.position(tp, timeout_ms=1000)
    return unknown if position is None else int(position)


def at_end(consumer: KafkaConsumer, partitions: list[TopicPartition]) -> bool:
    """Whether the consumer's position is at each partition's end, as a fetch answered it
    (not before one has)."""
    for tp in partitions:
        highwater = consumer.highwater(tp)
        position = None if highwater is None else consumer.position(tp, timeout_ms=1000)
        if highwater is None or position is None or position < highwater:
            return False
    return True
