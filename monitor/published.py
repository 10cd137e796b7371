"""Windows already on the windows topic: what a restarted monitor must not produce again.

After a crash the monitor replays every partition from its committed offset, which is the
first record of the oldest window that was open at the last commit. Windows finalized after
that commit may already have been published, in full or (a crash between two records) for
some segments only. The wiring reads the windows topic back and marks each record here; the
replay then skips their events (neither counted nor late) and their summaries.

Marks also restore part of the lost watermark. A finalize publishes its windows oldest first
and commits after the last one, so every marked window older than the newest marked start was
published in full: the original watermark had passed its end. That end is the `floor`:
events whose windows all end by it were late before the crash and are late again, instead of
opening windows that were never published. The newest marked window may be partial; it and
anything newer are decided by the replayed records.

    published    [0 -- 10) all segments   [10 -- 20) model=a only (crash)
    floor        10                       events of [10, 20) model=b are counted again
"""

from __future__ import annotations

from monitor.summary import Segment

__all__ = ["PublishedWindows"]

NO_FLOOR = -(1 << 62)


class PublishedWindows:
    """Marks of published (window start, segment, evaluation-set version) summaries."""

    def __init__(self, size_ms: int) -> None:
        self._size_ms = size_ms
        self._marks: set[tuple[int, Segment, str]] = set()
        self._newest_start: int | None = None
        self.floor_ms = NO_FLOOR

    def mark(self, start_ms: int, segment: Segment, version: str) -> None:
        """Remember one published summary and raise the floor if it proves an older window
        complete."""
        self._marks.add((start_ms, segment, version))
        newest = self._newest_start
        if newest is None or start_ms > newest:
            if newest is not None:
                self.floor_ms = max(self.floor_ms, newest + self._size_ms)
            self._newest_start = start_ms
        elif start_ms < newest:
            self.floor_ms = max(self.floor_ms, start_ms + self._size_ms)

    def __contains__(self, key: tuple[int, Segment, str]) -> bool:
        return key in self._marks

    def __len__(self) -> int:
        return len(self._marks)

    def any_of(self, starts: range, segment: Segment, version: str) -> bool:
        """Whether any of these windows was published for the segment and version."""
        return any((start, segment, version) in self._marks for start in starts)

    def prune(self, watermark_ms: int) -> None:
        """Forget marks of windows the replayed watermark has passed: their events are late
        again, as they were before the crash."""
        self._marks = {k for k in self._marks if k[0] + self._size_ms > watermark_ms}
