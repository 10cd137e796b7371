"""Event-time windows, drawn as timelines.

In the drawings time runs left to right in milliseconds, `[s -- e)` is a window, letters are
events placed at their event time, and the order they are added is written beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from monitor.testing.clock import FakeClock
from monitor.windows.engine import Admission, EventWindows, ScoredEvents
from monitor.windows.spec import WindowSpec
from monitor.windows.summary import Segment, WindowSummary

KEYS = ("ndcg@10:linear", "precision@5")


@dataclass(frozen=True)
class Ev:
    """One scored event; its measure vector is `(score, score / 2)`."""

    time: int
    id: str
    query: str = "q1"
    partition: int = 0
    offset: int = 0
    score: float = 1.0
    segment: Segment = ()


def batch(events: Sequence[Ev]) -> ScoredEvents:
    return ScoredEvents(
        partitions=[e.partition for e in events],
        offsets=[e.offset for e in events],
        event_times_ms=[e.time for e in events],
        event_ids=[e.id for e in events],
        query_ids=[e.query for e in events],
        segments=[e.segment for e in events],
        measures=np.array([[e.score, e.score / 2] for e in events], dtype=np.float64).reshape(
            -1, len(KEYS)
        ),
    )


def windows(
    size: int = 10, hop: int | None = None, lateness: int = 0, idle: int | None = None
) -> tuple[EventWindows, FakeClock]:
    clock = FakeClock(start_ms=1_000_000)
    spec = WindowSpec(size, hop or size, lateness, idle, label=f"{size}ms")
    return EventWindows(spec, KEYS, clock, version="v1", set_queries=10), clock


def add(monitor: EventWindows, *events: Ev, version: str = "v1") -> Admission:
    """Add events; a `version` other than the current one is a reload first."""
    monitor.begin_version(version, 10)
    return monitor.add_events(batch(events))


def mark(
    monitor: EventWindows,
    start: int,
    segment: Segment = (),
    partitions: Sequence[int] | None = None,
    through: dict[int, int] | None = None,
) -> None:
    """Mark the window at `start` (of the monitor's spec) published for `segment`."""
    summary = WindowSummary(
        window=monitor.spec.label,
        start_ms=start,
        end_ms=start + monitor.spec.size_ms,
        segment=segment,
        evaluation_set_version="v1",
        events=1,
        queries=1,
        evaluation_set_queries=10,
        means={},
        sums={},
        event_means={},
    )
    monitor.mark_published(summary, partitions, through)


def spans(summaries: Sequence[WindowSummary]) -> list[tuple[int, int, int]]:
    """(start, end, events) of each summary."""
    return [(s.start_ms, s.end_ms, s.events) for s in summaries]


def test_event_exactly_at_a_window_end_goes_to_the_next_window() -> None:
    #   0         10        20        30
    #   a        b c                  d        (added a, b, c, d)
    #   [0 ---- 10)[10 --- 20)
    monitor, _ = windows(size=10)
    add(monitor, Ev(0, "a"), Ev(9, "b"), Ev(10, "c"), Ev(30, "d"))
    assert spans(monitor.finalize()) == [(0, 10, 2), (10, 20, 1)]


def test_sliding_event_lies_in_every_window_that_contains_it() -> None:
    #   0    5    10   15   20
    #          a                      (a at 7; then b at 40 closes every window ending by 40)
    #   [0 ---- 10)
    #        [5 ---- 15)
    monitor, _ = windows(size=10, hop=5)
    add(monitor, Ev(7, "a"), Ev(40, "b"))
    assert spans(monitor.finalize()) == [(0, 10, 1), (5, 15, 1)]
    add(monitor, Ev(50, "c"))
    assert spans(monitor.finalize()) == [(35, 45, 1), (40, 50, 1)]


def test_window_is_finalized_only_once_the_watermark_reaches_its_end() -> None:
    #   0         10        20
    #   a        b|c        (lateness 2: c at 11 gives watermark 9, d at 12 gives 10)
    monitor, _ = windows(size=10, lateness=2)
    add(monitor, Ev(1, "a"), Ev(9, "b"), Ev(11, "c"))
    assert monitor.finalize() == []
    assert monitor.watermark_ms == 9
    add(monitor, Ev(12, "d"))
    assert spans(monitor.finalize()) == [(0, 10, 2)]
    assert monitor.open_windows == 1


def test_out_of_order_event_within_the_lateness_is_counted() -> None:
    #   0         10        20
    #   a      c    b               (added a, b at 12, then c at 7: watermark 12 - 5 = 7)
    monitor, _ = windows(size=10, lateness=5)
    admission = add(monitor, Ev(1, "a"), Ev(12, "b"), Ev(7, "c", offset=2))
    assert admission.accepted == 3
    assert admission.late == []
    add(monitor, Ev(30, "d"))
    assert spans(monitor.finalize()) == [(0, 10, 2), (10, 20, 1)]


def test_event_whose_every_window_closed_is_late_and_returned_by_row() -> None:
    #   0         10        20
    #   a  c           b            (added a, b at 15, then c at 3 and e at 10: watermark 15)
    monitor, _ = windows(size=10)
    admission = add(monitor, Ev(1, "a"), Ev(15, "b"), Ev(3, "c"), Ev(10, "e"))
    assert admission.late == [2]
    assert admission.accepted == 3
    add(monitor, Ev(25, "f"))
    assert spans(monitor.finalize()) == [(0, 10, 1), (10, 20, 2)]


def test_late_is_decided_by_the_watermark_not_by_when_finalize_runs() -> None:
    monitor, _ = windows(size=10)
    add(monitor, Ev(1, "a"), Ev(20, "b"))
    # [0, 10) is closed but not yet finalized: an event for it is still late.
    assert add(monitor, Ev(2, "c")).late == [0]
    assert spans(monitor.finalize()) == [(0, 10, 1)]


def test_sliding_event_with_one_open_window_is_counted_into_the_open_one_only() -> None:
    #   0    5    10   15   20
    #         a     b c              (added a at 6, b at 10, then c at 7)
    #   [0 ---- 10)                  closed by b: watermark 10
    #        [5 ---- 15)             still open: gets a, b and c
    #             [10 --- 20)
    monitor, _ = windows(size=10, hop=5)
    admission = add(monitor, Ev(6, "a"), Ev(10, "b"), Ev(7, "c"))
    assert admission.late == []
    add(monitor, Ev(100, "z"))
    assert spans(monitor.finalize())[:3] == [(0, 10, 1), (5, 15, 3), (10, 20, 1)]


def test_event_before_the_epoch_is_aligned_like_any_other() -> None:
    monitor, _ = windows(size=10)
    add(monitor, Ev(-1, "a"), Ev(-10, "b"), Ev(5, "c"), Ev(20, "d"))
    assert spans(monitor.finalize()) == [(-10, 0, 2), (0, 10, 1)]


def test_slow_partition_holds_the_watermark_back() -> None:
    #   p0  a ........................ b at 50
    #   p1  c at 3          d at 12              global watermark = min(50, 12) = 12
    monitor, _ = windows(size=10)
    monitor.assign([0, 1])
    add(monitor, Ev(1, "a", partition=0), Ev(50, "b", partition=0, offset=1))
    assert monitor.watermarks.by_partition() == {0: 50, 1: None}  # p1 has sent nothing yet
    assert [monitor.watermark_ms] == [None]
    add(monitor, Ev(3, "c", partition=1))
    assert monitor.watermark_ms == 3
    # p0 is 46 ms ahead, yet an event at 4 is on time: p1 holds the watermark at 3.
    assert add(monitor, Ev(4, "e", partition=0, offset=2)).late == []
    add(monitor, Ev(12, "d", partition=1, offset=2))
    assert monitor.watermarks.by_partition() == {0: 50, 1: 12}
    assert spans(monitor.finalize()) == [(0, 10, 3)]


def test_idle_partition_stops_holding_the_watermark_back() -> None:
    monitor, clock = windows(size=10, idle=5_000)
    monitor.assign([0, 1])
    add(monitor, Ev(1, "a", partition=0), Ev(25, "b", partition=0, offset=1))
    clock.advance(5_000)
    assert monitor.finalize() == []  # p1 silent for exactly the timeout: not idle yet
    clock.advance(1)
    add(monitor, Ev(26, "c", partition=0, offset=2))
    assert monitor.watermarks.idle_partitions() == [1]
    assert spans(monitor.finalize()) == [(0, 10, 1)]


def test_woken_partition_cannot_reopen_finalized_windows() -> None:
    monitor, clock = windows(size=10, idle=1_000)
    monitor.assign([0, 1])
    add(monitor, Ev(1, "a", partition=0))
    clock.advance(2_000)
    add(monitor, Ev(30, "b", partition=0, offset=1))
    assert spans(monitor.finalize()) == [(0, 10, 1)]
    admission = add(monitor, Ev(5, "c", partition=1), Ev(31, "d", partition=1, offset=1))
    assert admission.late == [0]
    assert monitor.watermark_ms == 30  # p1 is active again, but the watermark never goes back
    assert admission.accepted == 1


def test_when_every_partition_is_idle_everything_seen_is_finalized() -> None:
    monitor, clock = windows(size=10, lateness=3, idle=1_000)
    add(monitor, Ev(1, "a"), Ev(15, "b", offset=1))
    assert spans(monitor.finalize()) == [(0, 10, 1)]
    clock.advance(1_001)
    # Nothing newer than 15 arrived anywhere: [10, 20) still waits for the watermark (12).
    assert monitor.finalize() == []
    add(monitor, Ev(23, "c", offset=2))
    assert spans(monitor.finalize()) == [(10, 20, 1)]


def test_numpy_columns_give_the_same_result_as_lists() -> None:
    events = [Ev(t, f"e{t}", query=f"q{t % 3}", offset=t) for t in range(0, 40, 3)]
    as_lists, _ = windows(size=10)
    as_arrays, _ = windows(size=10)
    as_lists.add_events(batch(events))
    plain = batch(events)
    as_arrays.add_events(
        ScoredEvents(
            partitions=np.array(plain.partitions, dtype=np.int64),
            offsets=np.array(plain.offsets, dtype=np.int64),
            event_times_ms=np.array(plain.event_times_ms, dtype=np.int64),
            event_ids=plain.event_ids,
            query_ids=plain.query_ids,
            segments=plain.segments,
            measures=plain.measures,
        )
    )
    assert as_lists.finalize() == as_arrays.finalize()
    assert as_lists.safe_offsets() == as_arrays.safe_offsets() == {0: 30}


def test_batch_with_columns_of_different_lengths_is_refused() -> None:
    good = batch([Ev(1, "a"), Ev(2, "b")])
    with pytest.raises(ValueError, match="one row per event"):
        ScoredEvents(
            partitions=[0],
            offsets=good.offsets,
            event_times_ms=good.event_times_ms,
            event_ids=good.event_ids,
            query_ids=good.query_ids,
            segments=good.segments,
            measures=good.measures,
        )


def test_batch_with_the_wrong_number_of_measures_is_refused() -> None:
    monitor, _ = windows()
    wrong = batch([Ev(1, "a")])
    with pytest.raises(ValueError, match="2 columns"):
        monitor.add_events(
            ScoredEvents(
                partitions=[0],
                offsets=[0],
                event_times_ms=[1],
                event_ids=["a"],
                query_ids=["q"],
                segments=[()],
                measures=np.hstack([wrong.measures, wrong.measures]),
            )
        )


def test_window_spec_refuses_a_hop_that_does_not_divide_the_size() -> None:
    with pytest.raises(ValueError, match="multiple of the hop"):
        WindowSpec(size_ms=10, hop_ms=4)
    with pytest.raises(ValueError, match="hop"):
        WindowSpec(size_ms=10, hop_ms=20)
    with pytest.raises(ValueError, match="lateness"):
        WindowSpec.tumbling(10, allowed_lateness_ms=-1)
