"""The decider's ledger: a window is decided once every member has finished it, in order."""

from __future__ import annotations

import logging

import pytest

from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.share import WindowShare
from monitor.group.decider import ALONE, DECIDES, MEMBER, group_role
from monitor.group.ledger import ShareLedger
from monitor.windows.summary import WindowSummary

T0 = 1_767_225_600_000
ALL = frozenset({0, 1, 2})


def share(start: int, partitions: set[int], model: str = "v1") -> WindowShare:
    summary = WindowSummary(
        window="10s",
        start_ms=T0 + start,
        end_ms=T0 + start + 10_000,
        segment=(("model", model),),
        evaluation_set_version="v",
        events=1,
        queries=1,
        evaluation_set_queries=3,
        means={"ndcg@10:linear": 0.5},
        sums={"ndcg@10:linear": 0.5},
        event_means={"ndcg@10:linear": 0.5},
        query_means={f"q{min(partitions)}": {"ndcg@10:linear": 0.5}},
    )
    return WindowShare(summary, frozenset(partitions))


def progress(
    partitions: set[int], through: int | None, *, at: int, shares: tuple[WindowShare, ...] = ()
) -> ProgressRecord:
    closed = None if through is None else T0 + through
    keys = tuple(s.key.decode() for s in shares)
    return ProgressRecord(frozenset(partitions), closed, False, at, keys)


def starts(ledger: ShareLedger, **kwargs: bool) -> list[int]:
    return [window.start_ms - T0 for window in ledger.whole(**kwargs)]


def test_a_window_is_whole_only_once_every_partition_has_closed_it() -> None:
    ledger = ShareLedger(ALL)
    ledger.take_all([share(0, {0}), share(0, {1, 2})])
    ledger.take(progress({0}, 10_000, at=1))
    assert starts(ledger) == []  # partitions 1 and 2 have not said so
    ledger.take(progress({1, 2}, 9_999, at=2))
    assert starts(ledger) == []  # their watermark is short of the window's end
    ledger.take(progress({1, 2}, 10_000, at=3))
    whole = ledger.whole()
    assert [len(w.shares) for w in whole] == [2] and ledger.pending == 0
    assert ledger.whole() == []  # handed out once


def test_a_quiet_member_closes_every_window_of_its_partitions() -> None:
    ledger = ShareLedger(ALL)
    ledger.take_all([share(0, {0, 1}), progress({0, 1}, 10_000, at=1)])
    ledger.take(ProgressRecord(frozenset({2}), None, True, 2))  # no events ever
    assert starts(ledger) == [0]


def test_a_window_waits_for_a_share_its_progress_record_named_but_not_yet_read() -> None:
    ledger = ShareLedger(ALL)
    late = share(0, {1, 2}, model="v2")
    ledger.take_all([share(0, {0}), progress({0}, 10_000, at=1)])
    ledger.take(progress({1, 2}, 10_000, at=2, shares=(share(0, {1, 2}), late)))
    ledger.take(share(0, {1, 2}))
    assert starts(ledger) == []
    ledger.take(late)  # read after the record that names it (another topic partition)
    assert [len(w.shares) for w in ledger.whole()] == [3]


def test_windows_are_decided_in_order_and_a_later_one_waits_behind_an_earlier() -> None:
    ledger = ShareLedger(ALL)
    named = share(0, {1, 2})
    ledger.take_all([share(0, {0}), share(10_000, {0}), share(10_000, {1, 2})])
    ledger.take_all([progress({0}, 20_000, at=1), progress({1, 2}, 20_000, at=2, shares=(named,))])
    assert starts(ledger) == []  # the first window still waits for a share: so does the second
    ledger.take(named)
    assert starts(ledger) == [0, 10_000]


def test_a_share_of_a_decided_window_is_counted_and_left_out() -> None:
    ledger = ShareLedger(ALL)
    ledger.take_all([share(0, {0}), progress(set(ALL), 10_000, at=1)])
    assert starts(ledger) == [0]
    ledger.take(share(0, {1}))
    assert ledger.late_shares == 1 and ledger.pending == 0


def test_too_many_waiting_windows_force_the_oldest_and_the_log_names_the_silent_partitions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forced: list[str] = []
    ledger = ShareLedger(ALL, max_pending=2, forced=forced.append)
    ledger.take(progress({0, 1}, 100_000, at=1))  # partition 2 never reports
    ledger.take_all([share(n * 10_000, {0, 1}) for n in range(4)])
    with caplog.at_level(logging.WARNING):
        whole = ledger.whole()
    assert [w.start_ms - T0 for w in whole] == [0, 10_000]
    # counted (rankmon_group_forced_decisions_total{reason}): alertable
    assert forced == ["partition_silent"] * 2
    assert all(w.missing == frozenset({2}) for w in whole)
    assert ledger.pending == 2
    assert caplog.records[0].__dict__["fields"]["partitions_without_final_word"] == [2]


def test_a_restore_takes_the_windows_whose_shares_cover_every_partition_and_all_before() -> None:
    ledger = ShareLedger(ALL)
    ledger.take_all([share(0, {0, 1}), share(10_000, {0, 1, 2}), share(20_000, {0})])
    # no progress records in the tail read (a single instance wrote these windows)
    assert starts(ledger, restoring=True) == [0, 10_000]
    assert ledger.pending == 1  # the newest waits for the members' word, live


def test_the_newest_progress_record_of_a_partition_is_the_one_that_counts() -> None:
    ledger = ShareLedger(ALL)
    ledger.take_all([share(0, {0, 1, 2}), progress(set(ALL), 10_000, at=5)])
    ledger.take(progress({2}, None, at=1))  # older: read out of order after a restart
    assert starts(ledger) == [0]


def test_the_owner_of_the_first_partition_decides_when_the_partitions_are_shared() -> None:
    assert group_role(ALL, ALL) == ALONE
    assert group_role(None, frozenset({1})) == ALONE  # the topic's partitions unknown
    assert group_role(ALL, frozenset({0, 2})) == DECIDES
    assert group_role(ALL, frozenset({1})) == MEMBER
    assert group_role(ALL, frozenset()) == MEMBER
