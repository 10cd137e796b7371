"""Progress records: what a group member has finalized, for the member that decides.

When a consumer group's members share the events topic's partitions, every comparison and
alert rule is decided once, over all queries, by one member (`monitor.group`). It merges the
window shares the others publish; to know when a window is whole it reads each member's
progress on the windows topic:

    key     progress/p0,2
    value   {"record": "progress", "schema_version": 1, "partitions": [0, 2],
             "closed_through_ms": 1767225610000, "quiet": false, "at_ms": ...,
             "shares": ["10s/1767225600000/model=v1/p0,2", ...]}

- `closed_through_ms`: the member's watermark after its finalize. Every window of its
  partitions ending at or before it is final: its shares are on the topic (they were
  acknowledged before this record was sent), and a later event for it is late. None before
  the member's first event.
- `quiet`: its partitions are idle, nothing is left to fetch and no window is open: nothing
  more is coming for any window until new events arrive.
- `shares`: the keys of the shares acknowledged since the member's previous progress record.
  With a windows topic of several partitions a share and the progress record that follows it
  may be read in either order; the decider waits for every share a record names.

A member sends one after each tick whose publish was acknowledged, when anything in it
changed (`monitor.checkpoint.publisher.ProgressPublisher`). Losing one costs nothing but
time: the next one says as much and more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from monitor.kafka.records import SourceRecord

__all__ = ["PROGRESS_KEY_PREFIX", "ProgressRecord", "share_start"]

PROGRESS_KEY_PREFIX = "progress/"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ProgressRecord:
    """One member's progress over its partitions (module docstring)."""

    partitions: frozenset[int]
    closed_through_ms: int | None
    quiet: bool
    at_ms: int
    shares: tuple[str, ...] = ()
    # The Kafka timestamp of the record it was read from (0: none, or not read): not written.
    record_ms: int = field(default=0, compare=False)
    # The record it was read from (None: made here), for a dead letter if it is refused.
    read_from: SourceRecord | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> bytes:
        return f"{PROGRESS_KEY_PREFIX}p{','.join(map(str, sorted(self.partitions)))}".encode()

    def closes(self, end_ms: int) -> bool:
        """Whether every window of these partitions ending at `end_ms` is final."""
        return self.quiet or (
            self.closed_through_ms is not None and self.closed_through_ms >= end_ms
        )

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "record": "progress",
                "schema_version": SCHEMA_VERSION,
                "partitions": sorted(self.partitions),
                "closed_through_ms": self.closed_through_ms,
                "quiet": self.quiet,
                "at_ms": self.at_ms,
                "shares": list(self.shares),
            },
            option=orjson.OPT_SORT_KEYS,
        )

    @classmethod
    def from_json(
        cls, data: bytes, record_ms: int = 0, read_from: SourceRecord | None = None
    ) -> ProgressRecord:
        """Parse a record value (read with Kafka timestamp `record_ms`, from `read_from`);
        `ValueError` if it is not a progress record."""
        try:
            raw = orjson.loads(data)
            if not isinstance(raw, dict) or raw.get("record") != "progress":
                raise ValueError("not a rankmon progress record")
            if raw.get("schema_version") != SCHEMA_VERSION:
                raise ValueError(f"progress record schema {raw.get('schema_version')!r}")
            closed = raw["closed_through_ms"]
            shares = tuple(str(key) for key in raw.get("shares") or ())
            for key in shares:
                share_start(key)  # each must name its window, or the decider cannot use it
            return cls(
                partitions=frozenset(int(p) for p in raw["partitions"]),
                closed_through_ms=None if closed is None else int(closed),
                quiet=bool(raw["quiet"]),
                at_ms=int(raw["at_ms"]),
                shares=shares,
                record_ms=record_ms,
                read_from=read_from,
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as error:
            raise ValueError(f"malformed progress record: {str(error)[:200]}") from error

    @staticmethod
    def is_key(key: bytes | None) -> bool:
        """Whether a windows-topic record key is a progress record's."""
        return key is not None and key.startswith(PROGRESS_KEY_PREFIX.encode())


def share_start(key: str) -> tuple[str, int]:
    """The (window label, start ms) a share's key begins with (`10s/1767225600000/...`);
    `ValueError` if it names none."""
    parts = key.split("/", 2)
    label, start = (parts[0], parts[1]) if len(parts) == 3 else ("", "")
    if not label or not start.isdigit() or len(start) > 19:
        raise ValueError(f"share key {key[:80]!r} names no window")
    return label, int(start)
