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
uninterrupted one would. Queries are keyed to one partition (DESIGN.md "Scaling out"), so
shares merge exactly: the window's mean over queries is `sum(sums) / sum(queries)` over its
shares, which is what the recording rules compute from the exported companions.

Whenever a partition is assigned to it (the first assignment included), the instance reads
the whole topic back (`read_shares`) and:

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
"""

from __future__ import annotations

import gc
import logging
import time
import zlib
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from monitor.bootstrap import KafkaUnavailableError, bootstrap_reachable
from monitor.config_kafka import KafkaConfig
from monitor.kafka_options import consumer_options
from monitor.logs import fields
from monitor.producer import RecordProducer
from monitor.summary import Segment, WindowSummary
from monitor.windows import EventWindows

__all__ = [
    "ShareRestore",
    "WindowShare",
    "WindowsTopic",
    "fitted_value",
    "publish_shares",
    "read_shares",
]

_log = logging.getLogger(__name__)

SHARE_HEADERS = [("content-type", b"application/json")]
# Room a share's record needs beyond its compressed value: key, headers, batch framing.
RECORD_OVERHEAD_BYTES = 16_384
THROUGH_HEADER = "rankmon-through-offsets"


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
        summary = WindowSummary.from_json(data)
        raw = orjson.loads(data).get("partitions")
        if raw is None:
            return cls(summary, None)
        if not isinstance(raw, list) or not all(isinstance(p, int) for p in raw):
            raise ValueError("malformed window summary: partitions must be a list of integers")
        return cls(summary, frozenset(raw))

    @property
    def headers(self) -> list[tuple[str, bytes]]:
        """The record headers: content type, and the through offsets if known."""
        if self.through is None:
            return list(SHARE_HEADERS)
        text = ",".join(f"{p}:{o}" for p, o in sorted(self.through.items()))
        return [*SHARE_HEADERS, (THROUGH_HEADER, text.encode())]

    def owned_by(self, assignment: Collection[int]) -> bool:
        """Whether every partition of the share is in `assignment`."""
        if self.partitions is None:
            return False
        return self.partitions <= frozenset(assignment)


def _partition_list(partitions: Iterable[int]) -> str:
    return ",".join(str(p) for p in sorted(partitions))


def publish_shares(
    producer: RecordProducer,
    topic: str,
    shares: Iterable[WindowShare],
    max_record_bytes: int = 1_048_576,
) -> None:
    """Send every share and wait for the acknowledgements.

    Raises `KafkaUnavailableError` if any is not acknowledged: commit nothing past these
    windows then; the producer keeps them and the next flush sends them again. A share that
    would not fit in one record of `max_record_bytes` even compressed goes without its
    per-query means (`fitted_value`): a record the broker refuses would hold every later
    commit back for good.
    """
    for share in shares:
        producer.send(topic, share.key, fitted_value(share, max_record_bytes), share.headers)
    producer.flush()


def fitted_value(share: WindowShare, max_record_bytes: int) -> bytes:
    """The share's record value, without its per-query means if it is too large with them.

    The producer compresses with gzip; the size checked is that of the value compressed
    alone, with room left for the record's key, headers and batch framing.
    """
    value = share.to_json()
    budget = max_record_bytes - RECORD_OVERHEAD_BYTES
    if len(value) <= budget or len(zlib.compress(value, 6)) <= budget:
        return value
    trimmed = replace(share, summary=replace(share.summary, query_means={})).to_json()
    _log.warning(
        "window share too large for one record: published without its per-query means",
        extra=fields(
            key=share.key.decode(),
            queries=share.summary.queries,
            json_bytes=len(value),
            max_record_bytes=max_record_bytes,
        ),
    )
    return trimmed


class WindowsTopic:
    """Reads the configured windows topic back, with the event consumer's connection options."""

    def __init__(self, kafka: KafkaConfig, timeout_s: float = 10.0) -> None:
        options = dict(consumer_options(kafka))
        for key in ("group_id", "enable_auto_commit", "bootstrap_servers", "client_id"):
            options.pop(key, None)
        self._options = options
        self._kafka = kafka
        self._timeout_s = timeout_s

    def read(self, take: Callable[[WindowShare], None]) -> None:
        """Hand every share on the topic to `take`, as read; `KafkaUnavailableError` if it
        cannot be read now (`take` may have seen some)."""
        read_shares(
            bootstrap_servers=list(self._kafka.bootstrap_servers),
            topic=self._kafka.windows_topic,
            client_id=f"{self._kafka.client_id}-restore",
            timeout_s=self._timeout_s,
            take=take,
            **self._options,
        )


class ShareRestore:
    """Takes shares one by one as they are read back: marks each published and keeps, per
    segment, the newest `keep` owned ones for the alert restore.

    A share with its per-query means weighs about 130 KB for 300 queries: holding the whole
    topic at once grew a restarted soak instance by 60 MB, in proportion to the topic's size.
    Alert baselines need only their last windows.
    """

    def __init__(self, windows: EventWindows, owned: Collection[int], keep: int = 64) -> None:
        self._windows = windows
        self._owned = frozenset(owned)
        self._keep = keep
        self.read = 0
        self._own: dict[Segment, deque[WindowSummary]] = {}

    def take(self, share: WindowShare) -> None:
        """Mark one share published; keep it for the alerts if this instance owns it."""
        summary = share.summary
        self._windows.mark_published(
            summary.start_ms,
            summary.segment,
            summary.evaluation_set_version,
            share.partitions,
            share.through,
        )
        self.read += 1
        if share.owned_by(self._owned):
            kept = self._own.setdefault(summary.segment, deque(maxlen=self._keep))
            kept.append(summary)

    def owned_summaries(self) -> list[WindowSummary]:
        """The kept summaries, for `AlertEngine.restore`."""
        return [summary for kept in self._own.values() for summary in kept]


def read_shares(
    *,
    bootstrap_servers: str | Sequence[str],
    topic: str,
    client_id: str = "rankmon-restore",
    timeout_s: float = 60.0,
    take: Callable[[WindowShare], None] | None = None,
    **kafka_options: Any,
) -> list[WindowShare]:
    """Every share on the windows topic, in offset order per partition; none if no topic.
    With `take`, each share goes to it as it is read and none is returned.

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
        shares: list[WindowShare] = []
        _read_to_end(consumer, topic, time.monotonic() + timeout_s, take or shares.append)
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
    consumer: KafkaConsumer, topic: str, deadline: float, take: Callable[[WindowShare], None]
) -> None:
    partitions = [
        TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
    ]
    if not partitions:
        return
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    while not _at_end(consumer, partitions):
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"{topic} not read to its end in time")
        for tp in sorted(batches := consumer.poll(timeout_ms=200)):
            for share in _parsed(batches[tp]):
                take(share)


def _at_end(consumer: KafkaConsumer, partitions: list[TopicPartition]) -> bool:
    for tp in partitions:
        highwater = consumer.highwater(tp)
        position = None if highwater is None else consumer.position(tp, timeout_ms=1000)
        if highwater is None or position is None or position < highwater:
            return False
    return True


def _parsed(records: Iterable[Any]) -> list[WindowShare]:
    shares = []
    for record in records:
        try:
            share = WindowShare.from_json(record.value or b"")
            through = dict(record.headers or ()).get(THROUGH_HEADER)
            if through is not None:
                share = replace(share, through=_offsets(through.decode()))
            shares.append(share)
        except (ValueError, UnicodeDecodeError, orjson.JSONDecodeError) as error:
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
