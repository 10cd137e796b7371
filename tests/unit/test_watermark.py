"""Watermarks on their own: per partition, global, idle partitions, assignment."""

from __future__ import annotations

from monitor.testing.clock import FakeClock
from monitor.windows.watermark import NO_WATERMARK, Watermarks


def tracker(lateness: int = 5, idle: int | None = 1_000) -> tuple[Watermarks, FakeClock]:
    clock = FakeClock(start_ms=0)
    return Watermarks(lateness, idle, clock), clock


def see(watermarks: Watermarks, clock: FakeClock, partition: int, event_time_ms: int) -> None:
    # What the window loop does on a record: activity now, and a new maximum event time.
    progress = watermarks.progress(partition)
    progress.last_record_s = clock.monotonic()
    progress.max_event_ms = max(progress.max_event_ms, event_time_ms)


def test_partition_watermark_is_its_latest_event_time_minus_the_lateness() -> None:
    watermarks, clock = tracker(lateness=5)
    see(watermarks, clock, 0, 100)
    see(watermarks, clock, 0, 40)  # out of order: the maximum stays
    assert watermarks.of_partition(0) == 95
    assert watermarks.refresh() == 95


def test_global_watermark_is_the_minimum_over_active_partitions() -> None:
    watermarks, clock = tracker(lateness=0)
    see(watermarks, clock, 0, 100)
    see(watermarks, clock, 1, 30)
    assert watermarks.refresh() == 30
    assert watermarks.floor_without(1, clock.monotonic()) == 100


def test_assigned_partition_without_events_holds_the_watermark_until_it_idles() -> None:
    watermarks, clock = tracker(lateness=0, idle=1_000)
    watermarks.assign([0, 1])
    see(watermarks, clock, 0, 100)
    assert watermarks.refresh() == NO_WATERMARK
    assert watermarks.of_partition(1) is None
    clock.advance(1_001)
    see(watermarks, clock, 0, 120)
    assert watermarks.idle_partitions() == [1]
    assert watermarks.refresh() == 120


def test_without_an_idle_timeout_a_silent_partition_holds_the_watermark_forever() -> None:
    watermarks, clock = tracker(lateness=0, idle=None)
    see(watermarks, clock, 0, 10)
    see(watermarks, clock, 1, 500)
    clock.advance(10**9)
    see(watermarks, clock, 1, 900)
    assert watermarks.refresh() == 10


def test_global_watermark_never_moves_backwards() -> None:
    watermarks, clock = tracker(lateness=0, idle=1_000)
    see(watermarks, clock, 0, 100)
    assert watermarks.refresh() == 100
    watermarks.assign([1])  # a new partition starts far behind
    see(watermarks, clock, 1, 3)
    assert watermarks.refresh() == 100
    watermarks.revoke([0])
    assert watermarks.refresh() == 100
    assert list(watermarks.partitions) == [1]
