"""Windows already on the windows topic: what a restarted monitor must not produce again.

After a crash the monitor replays every partition from its committed offset, which is the
first record of the oldest window that was open at the last commit. Windows finalized after
that commit may already have been published, in full or (a crash between two records) for
some segments only. The wiring reads the windows topic back and marks each record here; the
replay then skips their events (neither counted nor late) and their summaries.

A mark is a window (its start and end: a window of another size, from before a resize, is
another window), a segment label, and the partitions whose events it holds (several instances
in one group each publish their own partitions' share of a window; a mark without them covers
every partition). It does not depend on the evaluation-set version: a window published with
one version is not published again when a replay scores its events with another.

A replayed event's segment is raw (`monitor.windows.segments`); a published window's label of it is
what the window's labels said then (`label_of`, from the state its shares carry).

Marks also restore part of the lost watermark. A finalize publishes its windows oldest first
and commits after the last one, so every marked window older than the newest marked start was
published in full: the original watermark had passed its end. That end is the `floor` (per
partition, when marks name partitions): events whose windows all end by it were late before
the crash and are late again, instead of opening windows that were never published. The
newest marked window may be partial; it and anything newer are decided by the replay.

    published    [0 -- 10) all segments   [10 -- 20) model=a only (crash)
    floor        10                       events of [10, 20) model=b are counted again

A mark may also say, per partition, the offset the partition had been read up to when the
window was finalized (`through`). A replayed event of a marked window below that offset was
counted in it (or was a duplicate, dead-lettered before the publish); one at or above it came
after the window closed and was late, whatever the replayed watermark says.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from monitor.windows.segments import LabelState, label_under
from monitor.windows.spec import Epoch
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["EVERY_PARTITION", "PublishedWindows"]

EVERY_PARTITION = -1
NOTHING_CLOSED = -(1 << 62)

Window = tuple[int, int]  # (start, end) in epoch ms
_Holder = tuple[Segment, int]  # (segment label, partition)


class PublishedWindows:
    """Marks of published (window, segment label[, partition]); `keys`: the segment keys."""

    def __init__(self, keys: Sequence[str] = ()) -> None:
        self._keys = tuple(sorted(keys))
        # window -> (label, partition) -> offset read through (None: unknown)
        self._marks: dict[Window, dict[_Holder, int | None]] = {}
        self._labels: dict[Window, LabelState] = {}  # the labels a window was published with
        self._newest: dict[int, Window] = {}  # partition -> newest marked window
        self._floors: dict[int, int] = {}  # partition -> floor

    def mark(
        self,
        window: Window,
        segment: Segment,
        partitions: Collection[int] | None,
        through: Mapping[int, int] | None = None,
        labels: LabelState | None = None,
    ) -> None:
        """Remember one published summary; raise the floor where it proves an older window
        complete."""
        if labels is not None:
            self._labels[window] = labels
        holders = self._marks.setdefault(window, {})
        for partition in partitions if partitions is not None else (EVERY_PARTITION,):
            key = (segment, partition)
            offset = None if through is None else through.get(partition)
            known = holders.get(key, offset)
            holders[key] = None if offset is None or known is None else max(offset, known)
            newest = self._newest.get(partition)
            if newest is None or window[0] > newest[0]:
                self._newest[partition] = window
                proven = None if newest is None else newest[1]
            else:
                proven = window[1] if window[0] < newest[0] else None
            if proven is not None:
                self._floors[partition] = max(self._floors.get(partition, NOTHING_CLOSED), proven)

    def __len__(self) -> int:
        return sum(len(holders) for holders in self._marks.values())

    def __bool__(self) -> bool:
        return bool(self._marks)

    def floor_ms(self, partition: int) -> int:
        """Windows ending by this are closed for the partition's events."""
        floors = self._floors
        return max(
            floors.get(EVERY_PARTITION, NOTHING_CLOSED), floors.get(partition, NOTHING_CLOSED)
        )

    def label_of(self, window: Window, raw: Segment) -> Segment:
        """The label the window was published with for a raw segment (itself if unknown)."""
        state = self._labels.get(window)
        return raw if state is None or not self._keys else label_under(state, self._keys, raw)

    def labels(self, window: Window) -> LabelState | None:
        """The labels the window was published with, if it was."""
        return self._labels.get(window)

    def covers(self, window: Window, label: Segment, partition: int) -> bool:
        """Whether the partition's events of this window and segment label are published."""
        holders = self._marks.get(window)
        return holders is not None and (
            (label, EVERY_PARTITION) in holders or (label, partition) in holders
        )

    def open_starts(
        self, pane: int, epoch: Epoch, watermark: int, raw: Segment, partition: int
    ) -> Sequence[int]:
        """Starts of an event's windows (in its epoch) that are open and not published for its
        partition."""
        spec = epoch.spec
        first = epoch.first_start(pane)
        closed_up_to = max(watermark, self.floor_ms(partition))
        if closed_up_to > NOTHING_CLOSED:
            first = max(first, spec.first_open_start(closed_up_to))
        starts = []
        for start in range(first, pane + 1, spec.hop_ms):
            window = (start, start + spec.size_ms)
            if not self.covers(window, self.label_of(window, raw), partition):
                starts.append(start)
        return starts

    def counted_before(
        self, time_ms: int, raw: Segment, partition: int, offset: int
    ) -> bool | None:
        """Whether the record at `offset` was counted in a published window holding its time
        (of any size): None if a mark says nothing about offsets (then the replayed watermark
        decides)."""
        unknown = False
        for window, holders in self._marks.items():
            if not window[0] <= time_ms < window[1]:
                continue
            label = self.label_of(window, raw)
            for holder in ((label, partition), (label, EVERY_PARTITION)):
                if holder not in holders:
                    continue
                through = holders[holder]
                if through is None:
                    unknown = True
                elif offset < through:
                    return True
        return None if unknown else False

    def covers_all(self, summary: WindowSummary, partitions: Collection[int]) -> bool:
        """Whether every partition of a finalized summary had it published already."""
        window = (summary.start_ms, summary.end_ms)
        return all(self.covers(window, summary.segment, p) for p in partitions)

    def prune(self, watermark_ms: int) -> None:
        """Forget marks of windows the replayed watermark has passed: their events are late
        again, as they were before the crash."""
        self._marks = {w: h for w, h in self._marks.items() if w[1] > watermark_ms}
        self._labels = {w: s for w, s in self._labels.items() if w[1] > watermark_ms}
