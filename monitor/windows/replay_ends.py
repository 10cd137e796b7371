"""A replay is judged as one unit: its windows close as soon as it is over, not after a wait.

`rankmon replay` stamps every record of a replay with the replay's start as its event time
and ends the replay with a marker on every partition of the topic, sent after all its records
were stored (`monitor/replay/events.py`). A partition's marker is therefore behind every record
the replay put on that partition. Once this consumer has read the marker of a replay on every
partition it owns, it has read all of that replay it will ever get. The windows holding the
replay's start may then close at once: `floor(owned)` is the event time the watermark may
move to, the end of the last window holding that start.

The replays whose markers all came are remembered (the newest `MAX_OPEN_REPLAYS`), so each
window's summary can name the replays it holds (`replays_in`): a marker carries the replay's
static segment labels, and a replay is in a segment's window when it started in the window
and no label of the segment says otherwise.

Without markers (live traffic, an older replayer) nothing changes: windows close on the
watermark, or on processing time when the stream is quiet (`windows.idle_timeout`). A replay
whose marker never comes (the replayer was killed mid-way) closes that way too, and its
coverage says what is missing.

    replay R started 12:00:03, windows 10m     markers read: p0 p1 p2 (all owned)
    floor = 12:10:00: [12:00, 12:10) closes at the next tick
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from monitor.windows.spec import WindowSpec
from monitor.windows.summary import Segment

__all__ = ["MAX_OPEN_REPLAYS", "ReplayEnds"]

# Replays whose markers are still arriving, at most (oldest dropped first): a replay lasts
# minutes; thousands open at once is a replayer gone wrong, not a reason to grow.
MAX_OPEN_REPLAYS: Final = 1024


@dataclass
class _Ending:
    started_ms: int
    segment: Mapping[str, str]
    partitions: set[int] = field(default_factory=set)
    stopped: bool = False  # a stop ended it before every query was asked


class ReplayEnds:
    """The end-of-replay markers this consumer read, by replay."""

    def __init__(self, spec: WindowSpec) -> None:
        self.spec = spec
        self._endings: dict[str, _Ending] = {}
        self._ended: dict[str, _Ending] = {}  # replays whose markers all came, oldest first

    def add(
        self,
        replay_id: str,
        partition: int,
        started_ms: int,
        segment: Mapping[str, str] | None = None,
        *,
        stopped: bool = False,
    ) -> None:
        """The marker of `replay_id` (with its static `segment` labels; `stopped`: a stop
        ended it early) was read on `partition`."""
        ending = self._endings.get(replay_id)
        if ending is None:
            if len(self._endings) >= MAX_OPEN_REPLAYS:
                del self._endings[next(iter(self._endings))]
            ending = self._endings[replay_id] = _Ending(started_ms, dict(segment or {}))
        ending.partitions.add(partition)
        ending.stopped = ending.stopped or stopped

    def replays_in(
        self, start_ms: int, end_ms: int, segment: Segment, *, stopped: bool = False
    ) -> tuple[str, ...]:
        """The ended replays that started in [start_ms, end_ms) and may be of `segment`
        (none of its labels differs from the replay's static ones), oldest first; with
        `stopped`, only those a stop ended early."""
        return tuple(
            replay_id
            for replay_id, ending in self._ended.items()
            if start_ms <= ending.started_ms < end_ms
            and all(ending.segment.get(key, value) == value for key, value in segment)
            and (ending.stopped or not stopped)
        )

    def floor(self, owned: frozenset[int]) -> int | None:
        """How far the watermark may move now: the end of the last window holding the start
        of the newest replay whose marker every owned partition delivered (None: no such
        replay). Those replays are forgotten: the watermark never moves back."""
        if not owned:
            return None
        over = [r for r, ending in self._endings.items() if owned <= ending.partitions]
        if not over:
            return None
        ended = [(r, self._endings.pop(r)) for r in over]
        for replay_id, ending in sorted(ended, key=lambda item: item[1].started_ms):
            if len(self._ended) >= MAX_OPEN_REPLAYS:
                del self._ended[next(iter(self._ended))]
            self._ended[replay_id] = ending
        started = max(ending.started_ms for _, ending in ended)
        return self.spec.starts_of(started)[-1] + self.spec.size_ms

    def __len__(self) -> int:
        return len(self._endings)
