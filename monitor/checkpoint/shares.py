"""Recovery: window shares on the windows topic, and what an assigned instance learns from them.

Several instances of one consumer group each own some partitions, so each finalizes its own
partitions' share of a window. A share is one record on the windows topic: the
`WindowSummary` of those partitions' events, plus the partitions it covers:

    key     10s/1767225600000/model=v1/p0,2        (`WindowSummary.key` + "/p" + partitions)
    value   the summary's JSON + "partitions": [0, 2]
    header  rankmon-through-offsets: 0:1250,2:988  (each partition's next offset to read
                                                   when the window was finalized)

Shares are told apart by their partitions, not by an instance id: a partition belongs to one
group member at a time, so two live shares of one window and segment never cover the same
partition, and a restarted instance (a new member id) writes the very same records an
uninterrupted one would. Queries are keyed to one partition (docs/operations.md, "Scaling out"), so
shares merge exactly: the window's mean over queries is `sum(sums) / sum(queries)` over its
shares, which is what the recording rules compute from the exported companions.

Whenever a partition is assigned to it (the first assignment included), the instance reads
the topic's tail back (`read_shares` with `RestoreNeeds`) and:

- marks every share as published, for its partitions (`EventWindows.mark_published`): the
  replay from the committed offsets then skips the events and summaries already published,
  by this instance before a crash or by the partition's previous owner; a replayed event of a
  published window at or past the through offset came after the window closed: it is late
  again (and dead-lettered again, in case that was lost in the crash). The offsets are in a
  header, not the value: the value is what an uninterrupted run publishes, byte for byte;
- restores the alert baselines from the shares whose partitions it now owns entirely: those
  are the windows its own alert engine would have seen. Another instance's share is a
  different population of queries and would make a false baseline.

A record without "partitions" (written before shares existed) covers every partition.

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
import heapq
import itertools
import logging
import math
import time
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import orjson
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from monitor.checkpoint.progress import ProgressRecord
from monitor.comparisons.record import ComparisonRecord
from monitor.kafka.bootstrap import KafkaUnavailableError, bootstrap_reachable
from monitor.kafka.producer import RecordSink
from monitor.logs import fields
from monitor.windows.engine import EventWindows
from monitor.windows.segments import LabelState
from monitor.windows.spec import NO_BOUNDARY, Epoch, WindowSpec, align_up
from monitor.windows.summary import Segment, WindowSummary

__all__ = [
    "GroupFilter",
    "RecordTail",
    "RestoreNeeds",
    "ShareReader",
    "ShareRestore",
    "WindowShare",
    "WindowsRecord",
    "fitted_value",
    "parse_records",
    "publish_shares",
    "read_shares",
]

_log = logging.getLogger(__name__)

SHARE_HEADERS = [("content-type", b"application/json")]
# Room a share's record needs beyond its compressed value: key, headers, batch framing.
RECORD_OVERHEAD_BYTES = 16_384
THROUGH_HEADER = "rankmon-through-offsets"
# The consumer group (the deployment) that published a windows-topic record. A reader of
# another group ignores the record: two deployments on one windows topic would otherwise
# restore each other's windows, labels and alerts. Records without it predate the header.
GROUP_HEADER = "rankmon-group"
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


@dataclass(frozen=True)
class ShareHead:
    """What a share's key and headers say: enough to decide how far back to read."""

    start_ms: int
    partitions: frozenset[int]
    through: Mapping[int, int] | None


@dataclass(frozen=True)
class WindowShare:
    """One published window summary and the partitions whose events it holds.

    `partitions` None: a record from before shares, covering every partition.
    """

    summary: WindowSummary
    partitions: frozenset[int] | None
    through: Mapping[int, int] | None = None  # partition -> next offset at the finalize

    @property
    def key(self) -> bytes:
        """The record key: the summary's key and the covered partitions, `.../p0,2`."""
        if self.partitions is None:
            return self.summary.key.encode()
        return f"{self.summary.key}/p{_partition_list(self.partitions)}".encode()

    def to_json(self) -> bytes:
        """The record value: the summary's JSON with `partitions` added (sorted keys)."""
        value = orjson.loads(self.summary.to_json())
        if self.partitions is not None:
            value["partitions"] = sorted(self.partitions)
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def from_json(cls, data: bytes) -> WindowShare:
        """Parse a windows-topic record value; `ValueError` if it is not a summary."""
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise ValueError(f"malformed window summary: {error}") from error
        summary = WindowSummary.from_dict(value)
        raw = value.get("partitions")
        if raw is None:
            return cls(summary, None)
        if not isinstance(raw, list) or not all(isinstance(p, int) for p in raw):
            raise ValueError("malformed window summary: partitions must be a list of integers")
        return cls(summary, frozenset(raw))

    @classmethod
    def from_record(cls, value: bytes, headers: Iterable[tuple[str, bytes]]) -> WindowShare:
        """A windows-topic record: its value, and the through offsets of its header."""
        share = cls.from_json(value)
        through = dict(headers).get(THROUGH_HEADER)
        return share if through is None else replace(share, through=_offsets(through.decode()))

    @property
    def headers(self) -> list[tuple[str, bytes]]:
        """The record headers: content type, and the through offsets if known."""
        if self.through is None:
            return list(SHARE_HEADERS)
        text = ",".join(f"{p}:{o}" for p, o in sorted(self.through.items()))
        return [*SHARE_HEADERS, (THROUGH_HEADER, text.encode())]

    @property
    def head(self) -> ShareHead:
        """What the tail read decides on (`RestoreNeeds`)."""
        partitions = self.partitions if self.partitions is not None else frozenset()
        through = None if self.partitions is None else self.through
        return ShareHead(self.summary.start_ms, partitions, through)

    def owned_by(self, assignment: Collection[int]) -> bool:
        """Whether every partition of the share is in `assignment`."""
        if self.partitions is None:
            return False
        return self.partitions <= frozenset(assignment)


def _partition_list(partitions: Iterable[int]) -> str:
    return ",".join(str(p) for p in sorted(partitions))


def publish_shares(
    producer: RecordSink,
    topic: str,
    shares: Iterable[WindowShare],
    max_record_bytes: int = 1_048_576,
    group: str | None = None,
) -> list[str]:
    """Send every share and wait for the acknowledgements; return what was left out of them
    to fit (`fitted_value`: one name per part dropped, e.g. "query_means").

    Raises `KafkaUnavailableError` if any is not acknowledged: commit nothing past these
    windows then; the producer keeps them and the next flush sends them again. A share that
    would not fit in one record of `max_record_bytes` even compressed goes without what makes
    it too large: a record the broker refuses would hold every later commit back for good.
    `group`: the publishing consumer group, sent as the `GROUP_HEADER` header.
    """
    dropped: list[str] = []
    stamp = group_headers(group)
    for share in shares:
        value, left_out = fitted_value(share, max_record_bytes)
        dropped += left_out
        producer.send(topic, share.key, value, [*share.headers, *stamp])
    producer.flush()
    return dropped


def group_headers(group: str | None) -> list[tuple[str, bytes]]:
    """The header that says which consumer group published a windows-topic record."""
    return [] if group is None else [(GROUP_HEADER, group.encode())]


# What a share can go without, in the order it is dropped, and what that costs: the per-query
# means feed explanations and restored baselines' per-query tests; the segment labels make a
# restart label as before (without them, the next window's labels are decided afresh).
TRIMMABLE = ("query_means", "segment_labels")


def fitted_value(share: WindowShare, max_record_bytes: int) -> tuple[bytes, tuple[str, ...]]:
    """The share's record value, and the parts (`TRIMMABLE`) left out to make it fit.

    The producer compresses with gzip; the size checked is that of the value compressed
    alone, with room left for the record's key, headers and batch framing. What remains once
    both are dropped (sums, counts, the segment and partitions) is bounded by the measures
    and `segments.max_value_bytes`, so the record is sent whatever it carried.
    """
    budget = max_record_bytes - RECORD_OVERHEAD_BYTES
    whole = value = share.to_json()
    dropped, summary = [], share.summary
    for part in TRIMMABLE:
        if len(value) <= budget or len(zlib.compress(value, 6)) <= budget:
            break
        dropped.append(part)
        if part == "query_means":
            summary = replace(summary, query_means={})
        else:
            summary = replace(summary, segment_labels={})
        value = replace(share, summary=summary).to_json()
    if dropped:
        _log.warning(
            "window share too large for one record: published without %s",
            " and ".join(dropped),
            extra=fields(
                key=share.key.decode()[:200],
                queries=share.summary.queries,
                json_bytes=len(whole),
                max_record_bytes=max_record_bytes,
            ),
        )
    return value, tuple(dropped)


# The windows topic holds window shares; when comparisons are configured, one comparison
# record per comparison and window (`monitor.comparisons.record`); and, from the members of
# a group that share the events topic, their progress (`monitor.checkpoint.progress`).
WindowsRecord = WindowShare | ComparisonRecord | ProgressRecord


class RecordTail(Protocol):
    """Follows the windows topic from where it began (`monitor.checkpoint.tail`)."""

    def poll(self) -> list[WindowsRecord]: ...

    def close(self) -> None: ...


class ShareReader(Protocol):
    """Reads shares back for a restore, and follows the topic for the group's decider:
    `WindowsTopic`, or a fake in tests."""

    def read(
        self, take: Callable[[WindowsRecord], None], needs: RestoreNeeds | None = None
    ) -> None: ...

    def tail(self) -> RecordTail: ...


class ShareRestore:
    """Takes shares one by one as they are read back: marks each published and keeps, per
    segment, the newest `keep` owned ones for the alert restore.

    It also learns, from the shares of partitions now owned, what the replay continues from:
    the window spec they were published with (`epochs`: windows.size or hop changed across
    the restart) and the segment labels of the newest one (`label_state`).

    A share with its per-query means weighs about 130 KB for 300 queries: holding the whole
    topic at once grew a restarted soak instance by 60 MB, in proportion to the topic's size.
    Alert baselines need only their last windows, and only the measures their rules watch:
    with `measures`, a kept summary's per-query means are cut down to those.
    """

    def __init__(
        self,
        windows: EventWindows,
        owned: Collection[int],
        keep: int = 64,
        measures: Collection[str] | None = None,
    ) -> None:
        self._windows = windows
        self._owned = frozenset(owned)
        self._keep = keep
        self._measures = None if measures is None else frozenset(measures)
        self.read = 0
        # per segment, the newest `keep` owned summaries (a min-heap on the start: shares
        # may come in any order)
        self._own: dict[Segment, list[tuple[int, int, WindowSummary]]] = {}
        self._arrival = itertools.count()
        # (size, hop) -> (newest start, window label), over shares touching owned partitions
        self._specs: dict[tuple[int, int], tuple[int, str]] = {}
        self._newest: tuple[int, LabelState | None] | None = None
        self._comparisons: dict[str, ComparisonRecord] = {}

    def take(self, share: WindowsRecord) -> None:
        """Mark one share published; keep it for the alerts if this instance owns it. Of
        the comparison records, keep the newest owned one of each comparison; progress
        records are for the group's decider (`monitor.group`)."""
        if isinstance(share, ProgressRecord):
            return
        if isinstance(share, ComparisonRecord):
            newest = self._comparisons.get(share.name)
            if share.owned_by(self._owned) and (newest is None or share.start_ms > newest.start_ms):
                self._comparisons[share.name] = share
            return
        summary = share.summary
        self._windows.mark_published(summary, share.partitions, share.through)
        self.read += 1
        if share.partitions is None or share.partitions & self._owned:
            self._learn(summary)
        if self._keep and share.owned_by(self._owned):
            kept = self._own.setdefault(summary.segment, [])
            item = (summary.start_ms, next(self._arrival), self._cut(summary))
            if len(kept) < self._keep:
                heapq.heappush(kept, item)
            elif item[0] >= kept[0][0]:
                heapq.heapreplace(kept, item)

    def _learn(self, summary: WindowSummary) -> None:
        spec = (summary.end_ms - summary.start_ms, summary.hop)
        newest, _ = self._specs.get(spec, (summary.start_ms, ""))
        self._specs[spec] = (max(newest, summary.start_ms), summary.window)
        if self._newest is None or summary.start_ms > self._newest[0]:
            labels = summary.segment_labels
            self._newest = (summary.start_ms, LabelState.from_json(labels) if labels else None)

    def label_state(self) -> LabelState | None:
        """The segment labels after the newest window published for an owned partition."""
        return None if self._newest is None else self._newest[1]

    def epochs(self, current: Epoch) -> list[Epoch]:
        """The epochs the replay windows events by: `current` alone, unless the newest window
        published for an owned partition had another size or hop. Then that spec holds the
        events until the first start of `current`'s spec after its newest window, and
        `current` from there (`monitor.windows.spec.Epoch`)."""
        if not self._specs:
            return [current]
        spec = current.spec
        (size, hop), (start, label) = max(self._specs.items(), key=lambda item: item[1][0])
        if (size, hop) == (spec.size_ms, spec.hop_ms):
            return [current]
        before = WindowSpec(size, hop, spec.allowed_lateness_ms, spec.idle_timeout_ms, label=label)
        boundary = align_up(start + hop, spec.hop_ms)
        return [
            Epoch(NO_BOUNDARY, before, current.version, current.set_queries),
            Epoch(boundary, spec, current.version, current.set_queries),
        ]

    def _cut(self, summary: WindowSummary) -> WindowSummary:
        keep = self._measures
        if keep is None:
            return summary
        query_means = {
            query: {k: means[k] for k in keep if k in means}
            for query, means in summary.query_means.items()
        }
        return replace(summary, query_means=query_means)

    def comparison_records(self) -> list[ComparisonRecord]:
        """The newest owned record of each comparison, for `ComparisonEngine.restore`."""
        return sorted(self._comparisons.values(), key=lambda record: record.name)

    def owned_summaries(self) -> list[WindowSummary]:
        """The kept summaries, oldest window first, for `AlertEngine.restore`."""
        kept = sorted(item for items in self._own.values() for item in items)
        return [summary for _, _, summary in kept]


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
    while not _at_end(consumer, partitions):
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"{topic} not read to its end in time")
        for tp in sorted(batches := consumer.poll(timeout_ms=200)):
            for share in parse_records(only.records(batches[tp])):
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


def _at_end(consumer: KafkaConsumer, partitions: list[TopicPartition]) -> bool:
    for tp in partitions:
        highwater = consumer.highwater(tp)
        position = None if highwater is None else consumer.position(tp, timeout_ms=1000)
        if highwater is None or position is None or position < highwater:
            return False
    return True


class GroupFilter:
    """Passes the records of `group` (and those without a group header); counts the others
    by their group in `foreign`. A None group passes everything."""

    def __init__(self, group: str | None, foreign: dict[str, int]) -> None:
        self.group = None if group is None else group.encode()
        self.foreign = foreign

    def records(self, records: Iterable[Any]) -> list[Any]:
        if self.group is None:
            return list(records)
        kept = []
        for record in records:
            found = dict(record.headers or ()).get(GROUP_HEADER)
            if found is None or found == self.group:
                kept.append(record)
            else:
                other = found.decode("utf-8", "replace")[:200]
                self.foreign[other] = self.foreign.get(other, 0) + 1
        return kept


def parse_records(records: Iterable[Any]) -> list[WindowsRecord]:
    shares: list[WindowsRecord] = []
    for record in records:
        try:
            if ComparisonRecord.is_key(record.key):
                shares.append(ComparisonRecord.from_json(record.value or b""))
                continue
            if ProgressRecord.is_key(record.key):
                shares.append(ProgressRecord.from_json(record.value or b""))
                continue
            shares.append(WindowShare.from_record(record.value or b"", record.headers or ()))
        except (ValueError, UnicodeDecodeError) as error:
            _log.warning(
                "skipping record %s/%s of the windows topic: %s",
                record.partition,
                record.offset,
                error,
            )
    return shares


def _offsets(text: str) -> dict[int, int]:
    """`0:1250,2:988` -> {0: 1250, 2: 988}; `ValueError` if malformed."""
    pairs = (item.split(":") for item in text.split(",") if item)
    return {int(partition): int(offset) for partition, offset in pairs}
