"""Per-event cost of `EventWindows.add_events` on poll-sized batches of 500 scored events.

Run: `.venv/bin/python bench/window_cost.py [--events N]`. Prints CPU microseconds per
event for tumbling and sliding windows, and the cost of finalizing. The stream is what the
service sees: 45k events/s of event time over 4 partitions (one partition per batch, as a
poll returns them), 2,000 queries in 3 segments, 20 measure columns, unique event ids, out
of order by up to 300 ms. Windows are 2 s (90k events, every query in every segment) so
that many finalize in a short run: tumbling, and sliding with a 500 ms hop (4 windows each).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows, ScoredEvents
from monitor.windows.spec import WindowSpec

BATCH = 500
RATE_PER_MS = 45
MEASURES = tuple(f"m{j}" for j in range(20))


def batches(events: int, size: int = BATCH) -> list[ScoredEvents]:
    rng = np.random.default_rng(7)
    segments = [(("model", f"v{s}"),) for s in range(3)]
    queries = [f"query-{q:05d}" for q in range(2_000)]
    out = []
    for first in range(0, events, size):
        n = np.arange(first, first + size)
        partition = (first // size) % 4
        times = 1_700_000_000_000 + n // RATE_PER_MS - rng.integers(0, 300, size)
        picks = rng.integers(0, len(queries), size)
        out.append(
            ScoredEvents(
                partitions=np.full(size, partition, dtype=np.int64),
                offsets=n // 4,
                event_times_ms=times,
                event_ids=[f"evt-{k:012d}" for k in n.tolist()],
                query_ids=[queries[q] for q in picks.tolist()],
                segments=[segments[q % 3] for q in picks.tolist()],
                measures=rng.random((size, len(MEASURES))),
            )
        )
    return out


def measure(spec: WindowSpec, stream: list[ScoredEvents]) -> tuple[float, float, int]:
    windows = EventWindows(spec, MEASURES, FakeClock(), version="sha256:bench")
    adding = finalizing = 0.0
    summaries = 0
    for k, batch in enumerate(stream):
        started = time.process_time()
        windows.add_events(batch)
        adding += time.process_time() - started
        size = len(batch.event_ids)
        if (k + 1) * size % 15_000 < size:  # a tick every ~15k events (~0.3 s of stream)
            started = time.process_time()
            summaries += len(windows.finalize())
            finalizing += time.process_time() - started
    return adding, finalizing, summaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--batch", type=int, default=BATCH, help="events per add_events")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    stream = batches(args.events, args.batch)
    events = len(stream) * args.batch
    print(f"{events} events in batches of {args.batch}, {len(MEASURES)} measures, 2000 queries")
    for name, spec in (
        ("tumbling", WindowSpec.tumbling(2_000, allowed_lateness_ms=500)),
        ("sliding x4", WindowSpec(2_000, 500, allowed_lateness_ms=500)),
    ):
        # CPU time, best of several runs: the machine is shared with other work.
        adding, finalizing, summaries = min(measure(spec, stream) for _ in range(args.repeat))
        print(
            f"{name:>10}: add_events {adding / events * 1e6:.2f} us/event "
            f"({events / adding:,.0f} events/s); finalize {finalizing * 1e3:.0f} ms in total "
            f"for {summaries} summaries"
        )


if __name__ == "__main__":
    main()
