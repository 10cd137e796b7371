"""A window share: one record on the windows topic, and how it is written and read back.

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
uninterrupted one would. Queries are keyed to one partition (docs/operations.md, "Scaling
out"), so shares merge exactly: the window's mean over queries is `sum(sums) / sum(queries)`
over its shares, which is what the recording rules compute from the exported companions.

A record without "partitions" (written before shares existed) covers every partition. The
topic also holds comparison records and progress records (`WindowsRecord`); `parse_records`
tells them apart, and `GroupFilter` passes over another deployment's records.

What an assigned instance learns from the shares is `monitor.checkpoint.restore`; how much
of the topic's tail is read, `monitor.checkpoint.share_reader`.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from monitor.checkpoint.progress import ProgressRecord
from monitor.comparisons.record import ComparisonRecord
from monitor.kafka.producer import RecordSink
from monitor.kafka.records import SourceRecord
from monitor.logs import fields
from monitor.windows.summary import WindowSummary

__all__ = [
    "GROUP_HEADER",
    "RECORD_OVERHEAD_BYTES",
    "SHARE_HEADERS",
    "THROUGH_HEADER",
    "GroupFilter",
    "ShareHead",
    "WindowShare",
    "WindowsRecord",
    "fitted_value",
    "group_headers",
    "parse_records",
    "publish_shares",
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
                stamp = getattr(record, "timestamp", None)
                record_ms = stamp if type(stamp) is int else 0
                value = record.value or b""
                read_from = SourceRecord(
                    getattr(record, "topic", ""),
                    record.partition,
                    record.offset,
                    record_ms,
                    record.key,
                    value,
                )
                shares.append(ProgressRecord.from_json(value, record_ms, read_from))
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
