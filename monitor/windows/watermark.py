"""Watermarks: how far event time has progressed, per partition and for the whole consumer.

A partition's watermark is the largest event time seen on it minus the allowed lateness: the
partition promises nothing older is still coming. The global watermark is the minimum over the
active partitions, so the slowest partition holds everyone back:

    lateness 2      p0: events 10 .. 30   watermark 28
                    p1: events 10 .. 14   watermark 12   <- global watermark 12

A partition that has delivered no record for `idle_timeout_ms` (by the monotonic clock) is
idle and stops holding the watermark back; its next record makes it active again. When every
partition is idle the global watermark is the largest partition watermark: nothing newer has
been seen anywhere. The global watermark never moves backwards (a partition that wakes up or
is newly assigned cannot reopen windows).

When every partition is idle and the caller says the stream is quiet (`refresh(quiet_now_ms)`:
the consumer is caught up and the broker answers), the watermark also follows processing time:
it moves to `now - allowed_lateness`, so the window holding the newest events closes once its
end plus the allowed lateness is behind the clock, instead of waiting for the next event.
A scheduled replay's last window is then finalized about `idle_timeout` after the replay ends:

    size 10, lateness 2, idle 5      burst: events at 21..28, then silence
    processing time   28   29 .. 33   34
    partitions        active ...      idle (no record since 28 + 5 < 34)
    watermark         26              32: [20, 30) closes, as 30 + 2 <= 34
"""

from __future__ import annotations

from collections.abc import Iterable

from monitor.clock import Clock

__all__ = ["NO_OTHER_WATERMARK", "NO_WATERMARK", "PartitionProgress", "Watermarks"]

# Plain ints rather than None keep the per-event comparisons in the hot loop branch-free.
NO_WATERMARK = -(1 << 62)
NO_OTHER_WATERMARK = 1 << 62


class PartitionProgress:
    """What one partition has delivered: its latest event time, last record, next offset."""

    __slots__ = ("last_record_s", "max_event_ms", "next_offset")

    def __init__(self, now_s: float) -> None:
        self.max_event_ms = NO_WATERMARK
        self.last_record_s = now_s  # a new assignment counts as activity: it may have a backlog
        self.next_offset: int | None = None


class Watermarks:
    """Per-partition progress and the global watermark, with idle partitions released."""

    def __init__(self, allowed_lateness_ms: int, idle_timeout_ms: int | None, clock: Clock):
        self.allowed_lateness_ms = allowed_lateness_ms
        self._idle_timeout_s = None if idle_timeout_ms is None else idle_timeout_ms / 1000.0
        self._clock = clock
        self.partitions: dict[int, PartitionProgress] = {}
        self.global_ms = NO_WATERMARK

    def assign(self, partitions: Iterable[int]) -> None:
        """Start tracking partitions; each holds the watermark back until it delivers or idles."""
        now = self._clock.monotonic()
        for partition in partitions:
            self.partitions.setdefault(partition, PartitionProgress(now))

    def revoke(self, partitions: Iterable[int]) -> None:
        """Forget partitions; the global watermark keeps its value while any remain.

        With none left (an eager rebalance revokes every partition) it starts over: the next
        assignment replays from the committed offsets, the first record of the oldest window
        open at the last commit, and must find the windows closed since then, but not yet
        finalized, open again, or their events would be dropped as late. Windows finalized
        since that commit are skipped by their published marks, not by the watermark.
        """
        for partition in partitions:
            self.partitions.pop(partition, None)
        if not self.partitions:
            self.global_ms = NO_WATERMARK

    def progress(self, partition: int) -> PartitionProgress:
        """The partition's progress, tracking it from now on if it was not assigned."""
        found = self.partitions.get(partition)
        if found is None:
            found = self.partitions[partition] = PartitionProgress(self._clock.monotonic())
        return found

    def of_partition(self, partition: int) -> int | None:
        """The partition's watermark in epoch ms, `None` before its first event."""
        progress = self.partitions.get(partition)
        if progress is None or progress.max_event_ms == NO_WATERMARK:
            return None
        return progress.max_event_ms - self.allowed_lateness_ms

    def is_idle(self, progress: PartitionProgress, now_s: float) -> bool:
        """Whether the partition has been silent for longer than the idle timeout."""
        timeout = self._idle_timeout_s
        return timeout is not None and now_s - progress.last_record_s > timeout

    def idle_partitions(self) -> list[int]:
        """Partitions currently not holding the watermark back."""
        now = self._clock.monotonic()
        return sorted(p for p, progress in self.partitions.items() if self.is_idle(progress, now))

    def by_partition(self) -> dict[int, int | None]:
        """Each tracked partition's watermark in epoch ms (`None` before its first event)."""
        return {p: self.of_partition(p) for p in sorted(self.partitions)}

    def all_idle(self) -> bool:
        """Whether every tracked partition has been idle for the idle timeout (none: True)."""
        return len(self.idle_partitions()) == len(self.partitions)

    def floor_without(self, partition: int, now_s: float) -> int:
        """Minimum watermark over the other active partitions (`NO_OTHER_WATERMARK` if none).

        The global watermark after an event on `partition` is the smaller of this and the
        partition's own new watermark.
        """
        floor = NO_OTHER_WATERMARK
        lateness = self.allowed_lateness_ms
        for other, progress in self.partitions.items():
            if other != partition and not self.is_idle(progress, now_s):
                floor = min(floor, progress.max_event_ms - lateness)
        return floor

    def refresh(self, quiet_now_ms: int | None = None, floor_ms: int | None = None) -> int:
        """Recompute the global watermark (idle partitions released) and return it.

        `quiet_now_ms`: the processing time, given when the stream is quiet (see the module
        docstring); with every partition idle the watermark then reaches `now - lateness`.
        `floor_ms`: an event time the consumer knows it has read everything before (the
        end of a replay's windows, `monitor.windows.replay_ends`); the watermark reaches it.
        """
        now = self._clock.monotonic()
        lateness = self.allowed_lateness_ms
        active = [
            progress.max_event_ms - lateness
            for progress in self.partitions.values()
            if not self.is_idle(progress, now)
        ]
        if active:
            candidate = min(active)
        else:
            seen = [
                p.max_event_ms for p in self.partitions.values() if p.max_event_ms > NO_WATERMARK
            ]
            candidate = max(seen) - lateness if seen else NO_WATERMARK
            if quiet_now_ms is not None and seen:
                candidate = max(candidate, quiet_now_ms - lateness)
        if floor_ms is not None:
            candidate = max(candidate, floor_ms)
        self.global_ms = max(self.global_ms, candidate)
        return self.global_ms
