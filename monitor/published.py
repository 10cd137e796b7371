"""Windows already on the windows topic: what a restarted monitor must not produce again.

After a crash the monitor replays every partition from its committed offset, which is the
first record of the oldest window that was open at the last commit. Windows finalized after
that commit may already have been published, in full or (a crash between two records) for
some segments only. The wiring reads the windows topic back and marks each record here; the
replay then skips their events (neither counted nor late) and their summaries.

A mark may name the partitions whose events the record covers (several instances in one
group each publish their own partitions' share of a window); without them it covers every
partition. Only the marked partitions' events are skipped.

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

from monitor.summary import Segment, WindowSummary
from monitor.window_assigner import WindowSpec

__all__ = ["EVERY_PARTITION", "PublishedWindows"]

EVERY_PARTITION = -1
NO_FLOOR = -(1 << 62)

_Mark = tuple[int, Segment, str, int]  # (window start, segment, version, partition)


class PublishedWindows:
    """Marks of published (window start, segment, evaluation-set version[, partition])."""

    def __init__(self, spec: WindowSpec) -> None:
        self._spec = spec
        self._marks: dict[_Mark, int | None] = {}  # -> offset read through (None: unknown)
        self._newest: dict[int, int] = {}  # partition -> newest marked start
        self._floors: dict[int, int] = {}  # partition -> floor

    def mark(
        self,
        start_ms: int,
        segment: Segment,
        version: str,
        partitions: Collection[int] | None,
        through: Mapping[int, int] | None = None,
    ) -> None:
        """Remember one published summary; raise the floor where it proves an older window
        complete."""
        for partition in partitions if partitions is not None else (EVERY_PARTITION,):
            key = (start_ms, segment, version, partition)
            offset = None if through is None else through.get(partition)
            known = self._marks.get(key, offset)
            self._marks[key] = None if offset is None or known is None else max(offset, known)
            newest = self._newest.get(partition)
            if newest is None or start_ms > newest:
                self._newest[partition] = start_ms
                proven = None if newest is None else newest + self._spec.size_ms
            else:
                proven = start_ms + self._spec.size_ms if start_ms < newest else None
            if proven is not None:
                self._floors[partition] = max(self._floors.get(partition, NO_FLOOR), proven)

    def __len__(self) -> int:
        return len(self._marks)

    def floor_ms(self, partition: int) -> int:
        """Windows ending by this are closed for the partition's events."""
        floors = self._floors
        return max(floors.get(EVERY_PARTITION, NO_FLOOR), floors.get(partition, NO_FLOOR))

    def covers(self, start_ms: int, segment: Segment, version: str, partition: int) -> bool:
        """Whether the partition's events of this window, segment and version are published."""
        marks = self._marks
        return (start_ms, segment, version, EVERY_PARTITION) in marks or (
            start_ms,
            segment,
            version,
            partition,
        ) in marks

    def open_starts(
        self, pane: int, watermark: int, segment: Segment, version: str, partition: int
    ) -> Sequence[int]:
        """Starts of an event's windows that are open and not published for its partition."""
        spec = self._spec
        first = pane - spec.size_ms + spec.hop_ms
        closed_up_to = max(watermark, self.floor_ms(partition))
        if closed_up_to > NO_FLOOR:
            first = max(first, spec.first_open_start(closed_up_to))
        starts = range(first, pane + 1, spec.hop_ms)
        return [s for s in starts if not self.covers(s, segment, version, partition)]

    def covers_any(self, pane: int, segment: Segment, version: str, partition: int) -> bool:
        """Whether any window holding an event of this pane was published for it."""
        starts = self._spec.starts_of(pane)
        return any(self.covers(s, segment, version, partition) for s in starts)

    def counted_before(
        self, pane: int, segment: Segment, version: str, partition: int, offset: int
    ) -> bool | None:
        """Whether the record at `offset` was counted in a published window of its pane:
        None if a mark says nothing about offsets (then the replayed watermark decides)."""
        unknown = False
        for start in self._spec.starts_of(pane):
            for key in (
                (start, segment, version, partition),
                (start, segment, version, EVERY_PARTITION),
            ):
                if key in self._marks:
                    through = self._marks[key]
                    if through is None:
                        unknown = True
                    elif offset < through:
                        return True
        return None if unknown else False

    def covers_all(self, summary: WindowSummary, partitions: Collection[int]) -> bool:
        """Whether every partition of a finalized summary had it published already."""
        start, segment, version = summary.start_ms, summary.segment, summary.evaluation_set_version
        return all(self.covers(start, segment, version, p) for p in partitions)

    def prune(self, watermark_ms: int) -> None:
        """Forget marks of windows the replayed watermark has passed: their events are late
        again, as they were before the crash."""
        size = self._spec.size_ms
        self._marks = {m: t for m, t in self._marks.items() if m[0] + size > watermark_ms}
