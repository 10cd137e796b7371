"""Crash and replay: a restarted monitor publishes exactly what an uninterrupted one would.

The "wiring" here is a few lines that do what the service does on each poll: add the batch,
finalize, publish the summaries, then commit the safe offsets. A crash loses everything but
the published summaries and the committed offsets; the restart marks the summaries
published and replays every partition from its committed offset.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from monitor.windows.engine import EventWindows
from monitor.windows.summary import WindowSummary
from tests.unit.test_windows import Ev, add, mark, windows

PARTITIONS = (0, 1)
POLL = 7  # records per partition per poll


def stream(seed: int) -> dict[int, list[Ev]]:
    """Each partition's log: mostly in order, jitter within the lateness, some duplicates,
    some events far behind (late), two segments, and a closing event far ahead."""
    rng = random.Random(seed)
    logs: dict[int, list[Ev]] = {p: [] for p in PARTITIONS}
    for n in range(600):
        partition = n % 2
        log = logs[partition]
        time = n * 3 + rng.randrange(-20, 5)
        roll = rng.random()
        if roll < 0.05 and log:
            time = n * 3 - 400  # long after its window closed
        event = Ev(
            time=time,
            id=f"e{n}",
            query=f"q{partition}-{rng.randrange(6)}",
            partition=partition,
            offset=len(log),
            score=rng.choice((0.1, 0.2, 0.3, 0.7, 1.0)),
            segment=(("model", rng.choice(("a", "b"))),),
        )
        log.append(event)
        if 0.05 <= roll < 0.1:  # the producer retried: same event id, next offset
            log.append(Ev(**{**event.__dict__, "offset": len(log)}))
    for partition, log in logs.items():
        log.append(Ev(10_000, f"end{partition}", partition=partition, offset=len(log)))
    return logs


@dataclass
class Broker:
    """What survives a crash: the windows topic and the committed offsets."""

    published: list[WindowSummary] = field(default_factory=list)
    committed: dict[int, int] = field(default_factory=dict)


def run(logs: dict[int, list[Ev]], broker: Broker, crash_at: tuple[int, str] | None) -> bool:
    """Consume from the committed offsets to the end (or the crash); True if it crashed."""
    monitor, _ = windows(size=60, hop=30, lateness=25)
    for summary in broker.published:
        monitor.mark_published(summary)
    monitor.assign(logs)
    position = {p: broker.committed.get(p, 0) for p in logs}
    polls = 0
    while any(position[p] < len(logs[p]) for p in logs):
        records = []
        for p in logs:
            records += logs[p][position[p] : position[p] + POLL]
            position[p] += POLL
        add(monitor, *records)
        polls += 1
        if crash_at is not None and polls == crash_at[0]:
            return crash(monitor, broker, crash_at[1])
        broker.published += monitor.finalize()
        broker.committed.update(monitor.safe_offsets())
    return False


def crash(monitor: EventWindows, broker: Broker, when: str) -> bool:
    summaries = monitor.finalize()
    if when == "mid-publish":
        broker.published += summaries[: len(summaries) // 2]
    elif when == "before-commit":
        broker.published += summaries
    return True


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("when", ["before-finalize", "mid-publish", "before-commit"])
def test_restart_after_a_crash_publishes_exactly_the_uninterrupted_windows(
    seed: int, when: str
) -> None:
    logs = stream(seed)
    uninterrupted = Broker()
    run(logs, uninterrupted, crash_at=None)
    for crash_poll in (9, 23, 31):
        broker = Broker()
        assert run(logs, broker, crash_at=(crash_poll, when))
        assert not run(logs, broker, crash_at=None)
        keys = [(s.start_ms, s.segment, s.evaluation_set_version) for s in broker.published]
        assert len(keys) == len(set(keys)), "a window was published twice"
        ordered = sorted(broker.published, key=lambda s: (s.start_ms, s.segment))
        assert ordered == sorted(uninterrupted.published, key=lambda s: (s.start_ms, s.segment))


def test_stream_exercises_late_duplicate_and_sliding_paths() -> None:
    # Guards the crash test against a generator that stops producing the hard cases.
    monitor, _ = windows(size=60, hop=30, lateness=25)
    logs = stream(1)
    admission = add(monitor, *(e for p in PARTITIONS for e in logs[p]))
    assert admission.late and admission.duplicates
    assert len(monitor.finalize()) > 20


def test_replayed_events_of_a_published_window_are_neither_counted_nor_late() -> None:
    monitor, _ = windows(size=10)
    mark(monitor, 0, ())
    admission = add(monitor, Ev(1, "a"), Ev(2, "b", offset=1), Ev(11, "c", offset=2))
    assert (admission.already_published, admission.late, admission.accepted) == ([0, 1], [], 1)
    add(monitor, Ev(20, "d", offset=3))
    assert [s.start_ms for s in monitor.finalize()] == [10]


def test_partly_published_window_is_finished_for_the_missing_segments_only() -> None:
    a, b = (("model", "a"),), (("model", "b"),)
    monitor, _ = windows(size=10)
    mark(monitor, 0, a)
    admission = add(monitor, Ev(1, "x", segment=a), Ev(2, "y", segment=b, offset=1))
    assert admission.already_published == [0]
    add(monitor, Ev(12, "z", offset=2))
    assert [(s.start_ms, s.segment) for s in monitor.finalize()] == [(0, b)]


def test_windows_older_than_the_newest_published_are_closed_on_restart() -> None:
    # [0, 10) and [10, 20) were published: [0, 10) was complete, so a record of a segment
    # it never had is late again, while [10, 20) may still miss segments.
    monitor, _ = windows(size=10)
    mark(monitor, 0, (("model", "a"),))
    mark(monitor, 10, (("model", "a"),))
    other = (("model", "b"),)
    admission = add(monitor, Ev(5, "x", segment=other), Ev(15, "y", segment=other, offset=1))
    assert (admission.late, admission.accepted) == ([0], 1)


def test_replayed_event_of_a_published_window_still_dedupes_its_retry() -> None:
    monitor, _ = windows(size=10)
    mark(monitor, 0, ())
    # Before the crash the retry at 12 was a duplicate of e, whose window was then open.
    admission = add(monitor, Ev(5, "e"), Ev(12, "e", offset=1))
    assert (admission.already_published, admission.duplicates) == ([0], [1])
