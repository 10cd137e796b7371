"""Several instances in one consumer group: shares that combine, marks that name partitions."""

from __future__ import annotations

import math

from tests.unit.test_windows import Ev, add, mark, windows
from tests.unit.test_windows_replay import PARTITIONS, Broker, run, stream


def test_instances_owning_different_partitions_combine_into_the_single_instance_sums() -> None:
    logs = stream(4)
    single = Broker()
    run(logs, single, crash_at=None)
    whole = {(s.start_ms, s.segment): s for s in single.published}
    shares = []
    for partition in PARTITIONS:
        instance = Broker()
        run({partition: logs[partition]}, instance, crash_at=None)
        shares.append({(s.start_ms, s.segment): s for s in instance.published})
    assert set(whole) == set(shares[0]) | set(shares[1])
    for key, summary in whole.items():
        parts = [share[key] for share in shares if key in share]
        assert summary.queries == sum(p.queries for p in parts)
        assert summary.events == sum(p.events for p in parts)
        for measure, total in summary.sums.items():
            assert math.isclose(total, sum(p.sums[measure] for p in parts), rel_tol=1e-12)


def test_mark_naming_partitions_skips_only_their_replayed_events() -> None:
    # Instance A published [0, 10) for partition 0; B, owning partition 1, crashed first.
    monitor, _ = windows(size=10)
    mark(monitor, 0, (), [0])
    admission = add(
        monitor,
        Ev(1, "a", partition=0),
        Ev(2, "b", query="q2", partition=1),
        Ev(15, "c", partition=0, offset=1),
        Ev(16, "d", partition=1, offset=1),
    )
    assert (admission.already_published, admission.accepted) == ([0], 3)
    [(summary, partitions)] = monitor.finalize_with_partitions()
    assert (summary.start_ms, summary.events, partitions) == (0, 1, frozenset({1}))


def test_mark_without_partitions_covers_every_partition() -> None:
    monitor, _ = windows(size=10)
    mark(monitor, 0, ())
    admission = add(monitor, Ev(1, "a", partition=0), Ev(2, "b", partition=5))
    assert admission.already_published == [0, 1]


def test_floor_from_marks_applies_to_the_marked_partitions_only() -> None:
    monitor, _ = windows(size=10)
    mark(monitor, 0, (), [0])
    mark(monitor, 10, (), [0])
    other = (("model", "b"),)
    admission = add(
        monitor, Ev(5, "x", segment=other, partition=0), Ev(5, "y", segment=other, partition=1)
    )
    assert (admission.late, admission.accepted) == ([0], 1)
