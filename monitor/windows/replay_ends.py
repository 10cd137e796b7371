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

Several replayers may run at once (two rankers on one schedule, a manual `--once` beside
it): a replay's start marker (sent on every partition before its first query) makes it
open here, and the floor never passes the start of a window an open replay is in. The
first replay to end therefore does not close the windows the slower one is still writing
to: they close when the last replay in them ended. An open replay whose end never comes
(its replayer was killed) stops holding the floor once the watermark passed its windows.

    replays A (ranker v1) and B (v2) start 12:00:03   A ends 12:00:40, B ends 12:01:30
    floor after A: none (B is open in [12:00, 12:10))  after B: 12:10:00

A replay that starts in a window already closed (a manual `--once` after the scheduled
replay of its window ended) would be late there, every record. It is moved instead
(`retime`): its records, failed queries and end markers count at the start of the first
window still open, beside whatever else replays there, and the service logs the move.

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
        self._open: dict[str, int] = {}  # replays whose start marker came: their start
        self._moved: dict[str, int] = {}  # replays moved out of a closed window: their start
        self._reached: int | None = None  # the floor the ended replays allow, if held back
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

    def started(self, replay_id: str, started_ms: int) -> None:
        """The start marker of `replay_id` was read (on any partition): until it ends, the
        floor stays before the windows holding `started_ms`."""
        if replay_id in self._ended or replay_id in self._open:
            return
        if len(self._open) >= MAX_OPEN_REPLAYS:
            del self._open[next(iter(self._open))]
        self._open[replay_id] = started_ms

    def retime(self, replay_id: str, to_ms: int) -> None:
        """Count `replay_id` (started in a window already closed) as started at `to_ms`."""
        if len(self._moved) >= MAX_OPEN_REPLAYS:
            del self._moved[next(iter(self._moved))]
        self._moved[replay_id] = to_ms
        self.started(replay_id, to_ms)

    def holding(self) -> int:
        """How many replays hold their windows open: started, not ended on every partition."""
        return len(self._open.keys() | self._endings.keys())

    def moved(self) -> Mapping[str, int]:
        """The replays moved out of a closed window, and where to."""
        return self._moved

    def start_of(self, replay_id: str, started_ms: int) -> int:
        """Where a replay's records count: its start, or where it was moved."""
        return self._moved.get(replay_id, started_ms)

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

    def floor(self, owned: frozenset[int], watermark_ms: int | None = None) -> int | None:
        """How far the watermark may move now: the end of the last window holding the start
        of the newest replay whose marker every owned partition delivered, but never past
        the first window holding the start of a replay still open (started, or ended on
        some partitions only). None: no such replay, or an open one holds every window it
        could close. Ended replays are forgotten here: the watermark never moves back.
        `watermark_ms`: the watermark now; open replays whose windows it passed no longer
        hold anything."""
        if not owned:
            return None
        for replay_id in [r for r in self._open if r in self._endings]:
            del self._open[replay_id]  # its end markers speak for it now
        if watermark_ms is not None:
            self._open = {
                r: at for r, at in self._open.items() if not self.closed(at, watermark_ms)
            }
            # A moved replay's window closed: nothing of it counts any more, and the intake
            # stops looking for its records (`moved` is read at every poll).
            self._moved = {
                r: at for r, at in self._moved.items() if not self.closed(at, watermark_ms)
            }
            self._endings = {
                r: ending
                for r, ending in self._endings.items()
                if not self.closed(ending.started_ms, watermark_ms)
            }
        over = [r for r, ending in self._endings.items() if owned <= ending.partitions]
        ended = [(r, self._endings.pop(r)) for r in over]
        for replay_id, ending in sorted(ended, key=lambda item: item[1].started_ms):
            if len(self._ended) >= MAX_OPEN_REPLAYS:
                del self._ended[next(iter(self._ended))]
            self._ended[replay_id] = ending
        if ended:
            end = self._end_of(max(ending.started_ms for _, ending in ended))
            self._reached = end if self._reached is None else max(self._reached, end)
        if self._reached is None:
            return None
        floor = self._reached
        holding = [*self._open.values(), *(e.started_ms for e in self._endings.values())]
        if holding:
            floor = min(floor, self.spec.starts_of(min(holding))[0])
        else:
            self._reached = None  # the watermark is there now: nothing more to hold
        return floor

    def closed(self, started_ms: int, watermark_ms: int) -> bool:
        """Whether a replay starting at `started_ms` finds every window holding it closed."""
        return self._end_of(started_ms) <= watermark_ms

    def _end_of(self, started_ms: int) -> int:
        """The end of the last window holding a replay's start."""
        return self.spec.starts_of(started_ms)[-1] + self.spec.size_ms

    def __len__(self) -> int:
        return len(self._endings)
