"""Windows and alerting together on a fake clock: when a drop can first page, it does.

drop at 20s ─┐ first window wholly after it: [20s, 30s)
time   0    10    20    30  32  34
ticks  every 2s (odd seconds)        window closes when the watermark (max event time
                                     - 2s lateness) passes 30s, i.e. at the tick at 33s
"""

from __future__ import annotations

import numpy as np

from monitor.alerting import AlertEngine, Status
from monitor.config.alerts import parse_alerting_config
from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows
from monitor.windows.scored import ScoredEvents
from monitor.windows.spec import WindowSpec

T0 = 1_700_000_000_000  # a multiple of 10 s: windows start at T0 + 10 s x n
MEASURE = "ndcg@10:linear"


def events(since_ms: int, until_ms: int, drop_at_ms: int, offset: int) -> ScoredEvents:
    """One event every 100 ms over 20 queries; each scores 0.8 before the drop, 0.3 after."""
    times = list(range(since_ms, until_ms, 100))
    scores = np.array([[0.3 if t >= drop_at_ms else 0.8] for t in times])
    offsets = list(range(offset, offset + len(times)))
    return ScoredEvents(
        partitions=[0] * len(times),
        offsets=offsets,
        event_times_ms=times,
        event_ids=[f"e{o}" for o in offsets],
        query_ids=[f"q{o % 20}" for o in offsets],
        segments=[()] * len(times),
        measures=scores,
    )


def test_floor_pages_at_the_first_tick_after_the_first_bad_window_closes() -> None:
    rule = {"name": "floor", "measure": "ndcg@10", "below": 0.6}
    config = parse_alerting_config(
        {"rules": [rule], "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=[],
        window="10s",
    )
    clock = FakeClock(T0 + 1_000)
    spec = WindowSpec(size_ms=10_000, hop_ms=10_000, allowed_lateness_ms=2_000, label="10s")
    windows = EventWindows(spec, [MEASURE], clock, version="v1", set_queries=20)
    engine = AlertEngine(config, start_ms=clock.now_ms())
    drop_at, last, offset, fired_at = T0 + 20_000, T0, 0, None
    while fired_at is None and clock.now_ms() < T0 + 60_000:
        clock.advance(2_000)
        batch = events(last, clock.now_ms(), drop_at, offset)
        windows.add_events(batch)
        last, offset = clock.now_ms(), offset + len(batch.event_ids)
        for transition in engine.observe(windows.finalize(), clock.now_ms()):
            assert transition.change.after is Status.FIRING
            assert transition.window == (drop_at, drop_at + 10_000)
            fired_at = clock.now_ms()
    # Lower bound: drop + window (10 s) + lateness (2 s) = 32 s; the next tick is at 33 s.
    assert fired_at == T0 + 33_000
