"""Duplicates, evaluation-set versions, safe offsets, revoked partitions and bounded state."""

from __future__ import annotations

from monitor.windows.engine import StateSize
from tests.unit.test_windows import Ev, add, spans, windows


def test_duplicate_inside_an_open_window_is_counted_but_not_scored_twice() -> None:
    #   0         10        20
    #   a   a'                       (a' repeats a's event_id, even at another time)
    monitor, _ = windows(size=10)
    admission = add(monitor, Ev(1, "a", score=1.0), Ev(4, "a", score=0.0, offset=1))
    assert (admission.accepted, admission.duplicates) == (1, [1])
    add(monitor, Ev(20, "z", offset=2))
    [summary] = monitor.finalize()
    assert (summary.events, summary.means["ndcg@10:linear"]) == (1, 1.0)


def test_duplicate_within_one_batch_and_across_batches_are_both_caught() -> None:
    monitor, _ = windows(size=10)
    first = add(monitor, Ev(1, "a"), Ev(2, "a", offset=1))
    second = add(monitor, Ev(3, "a", offset=2), Ev(12, "a", offset=3))
    assert first.duplicates == [1]
    assert second.duplicates == [0, 1]


def test_duplicate_of_an_event_in_a_finalized_window_is_late_not_duplicate() -> None:
    monitor, _ = windows(size=10)
    add(monitor, Ev(1, "a"), Ev(15, "b", offset=1))
    monitor.finalize()
    admission = add(monitor, Ev(1, "a", offset=2))
    assert (admission.late, admission.duplicates) == ([0], [])


def test_dedupe_memory_is_released_when_windows_finalize() -> None:
    monitor, _ = windows(size=10)
    add(monitor, *(Ev(t % 10, f"id{t}", offset=t) for t in range(50)))
    assert monitor.state_size().event_ids == 50
    add(monitor, Ev(10, "next", offset=50))
    monitor.finalize()
    assert monitor.state_size().event_ids == 1  # only the open window's event remains
    # An id is remembered only while its window is open: reused later it counts again.
    assert add(monitor, Ev(11, "id3", offset=51)).accepted == 1


def test_an_evaluation_set_reloaded_mid_window_takes_effect_at_the_next_window() -> None:
    #   0         10        20
    #   a b  c d  z         y         a, b before the reload; c, d, z after it
    #   [0 ---- 10) v1      [10 -- 20) v2: the open window finishes with its version
    monitor, _ = windows(size=10)
    add(monitor, Ev(1, "a", score=1.0), Ev(2, "b", score=0.5, offset=1), version="v1")
    assert monitor.begin_version("v2", 10) == 10
    assert monitor.windower.epoch_of(6) == 0 and monitor.windower.epoch_of(10) == 1
    add(monitor, Ev(5, "c", score=0.0, offset=2), Ev(6, "d", score=0.0, offset=3), version="v2")
    add(monitor, Ev(10, "z", offset=4), Ev(20, "y", offset=5), version="v2")
    summaries = monitor.finalize()
    assert [(s.start_ms, s.evaluation_set_version, s.events) for s in summaries] == [
        (0, "v1", 4),
        (10, "v2", 1),
    ]
    assert monitor.windower.versions() == {"v2"}  # the v1 epoch ended with its last window


def test_segments_get_separate_summaries_in_sorted_order() -> None:
    v42, v43 = (("model", "v42"),), (("model", "v43"),)
    monitor, _ = windows(size=10)
    add(
        monitor,
        Ev(1, "a", segment=v43, score=0.2),
        Ev(2, "b", segment=v42, score=0.8, offset=1),
        Ev(3, "c", segment=v42, score=0.4, offset=2),
        Ev(10, "z", offset=3),
    )
    summaries = monitor.finalize()
    assert [(s.segment, s.events) for s in summaries] == [(v42, 2), (v43, 1)]
    assert summaries[0].means["ndcg@10:linear"] == (0.8 + 0.4) / 2


def test_safe_offsets_follow_the_oldest_open_window_through_finalizes() -> None:
    #   offset   0   1    2    3    4    5       (tumbling 10, lateness 0)
    #   time     1   4    12   13   21   2 (late)
    monitor, _ = windows(size=10)
    add(monitor, Ev(1, "a"), Ev(4, "b", offset=1), Ev(12, "c", offset=2))
    assert monitor.safe_offsets() == {0: 0}  # [0, 10) closed but not finalized yet
    assert spans(monitor.finalize()) == [(0, 10, 2)]
    assert monitor.safe_offsets() == {0: 2}
    add(monitor, Ev(13, "d", offset=3), Ev(21, "e", offset=4), Ev(2, "f", offset=5))
    assert monitor.safe_offsets() == {0: 2}
    monitor.finalize()
    assert monitor.safe_offsets() == {0: 4}
    add(monitor, Ev(40, "g", offset=6))
    monitor.finalize()
    assert monitor.safe_offsets() == {0: 6}


def test_safe_offset_moves_past_rejected_records_when_nothing_is_open() -> None:
    monitor, _ = windows(size=10)
    add(monitor, Ev(1, "a"), Ev(12, "b", offset=1))
    monitor.record_consumed(0, 7)
    monitor.finalize()
    assert monitor.safe_offsets() == {0: 1}  # b's window is open: replay from b
    add(monitor, Ev(30, "c", offset=8))
    monitor.finalize()
    monitor.record_consumed(0, 9)
    assert monitor.safe_offsets() == {0: 8}


def test_safe_offsets_are_per_partition() -> None:
    monitor, _ = windows(size=10)
    add(
        monitor,
        Ev(1, "a", partition=0, offset=100),
        Ev(2, "b", partition=1, offset=7),
        Ev(11, "c", partition=0, offset=101),
        Ev(12, "d", partition=1, offset=8),
    )
    monitor.finalize()
    assert monitor.safe_offsets() == {0: 101, 1: 8}


def test_revoking_a_partition_drops_exactly_its_share_of_open_windows() -> None:
    monitor, _ = windows(size=10)
    add(
        monitor,
        Ev(1, "a", query="q1", partition=0, score=1.0),
        Ev(2, "b", query="q2", partition=1, score=0.0),
        Ev(3, "c", query="q3", partition=0, score=0.5, offset=1),
    )
    monitor.revoke([1])
    assert monitor.safe_offsets() == {0: 0}
    assert add(monitor, Ev(4, "b", query="q2", partition=0, offset=2)).accepted == 1
    add(monitor, Ev(20, "z", partition=0, offset=3))
    [summary] = monitor.finalize()
    assert sorted(summary.query_means) == ["q1", "q2", "q3"]
    assert summary.events == 3


def test_revoking_every_contributor_leaves_no_window_behind() -> None:
    monitor, _ = windows(size=10)
    add(monitor, Ev(1, "a", partition=3))
    monitor.revoke([3])
    assert monitor.open_windows == 0
    assert monitor.state_size().event_ids == 0
    assert monitor.safe_offsets() == {}


def test_state_after_100k_events_of_the_same_queries_equals_state_after_1k() -> None:
    def state_after(events: int) -> StateSize:
        monitor, _ = windows(size=200, hop=100)
        for first in range(0, events, 500):
            stream = range(first, first + 500)  # one event per ms, 50 queries in 2 segments
            add(
                monitor,
                *(Ev(n, f"e{n}", f"q{n % 50}", 0, n, 0.5, (("m", str(n % 2)),)) for n in stream),
            )
            monitor.finalize()
        return monitor.state_size()

    # Both runs end with the same two windows open, each holding 50 query cells; the dedupe
    # set holds the 200 ids of the open panes, however long the stream ran before.
    small, large = state_after(1_000), state_after(100_000)
    assert large == small
    assert (large.windows, large.cells, large.event_ids) == (2, 100, 200)
