"""Memory of `EventWindows` with 1M events in one open window, against 10k.

Run: `.venv/bin/python bench/window_memory.py [--events N]`. Prints the process RSS and the
state entry counts after 10k events and after N (default 1M), all in one window that stays
open, so nothing is freed by finalizing. What may grow with events is the dedupe set (20
bytes per event of the open panes); the aggregates hold queries x segments cells whatever
the number of events. Batches are built on the fly and dropped, as the consumer's are.
"""

from __future__ import annotations

import argparse
import resource
from pathlib import Path

import numpy as np

from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows, ScoredEvents
from monitor.windows.spec import WindowSpec

BATCH = 500
MEASURES = tuple(f"m{j}" for j in range(20))
HOUR = 3_600_000


def rss_mb() -> float:
    """Resident set size now (not the peak), from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def batch(first: int, rng: np.random.Generator) -> ScoredEvents:
    n = np.arange(first, first + BATCH)
    picks = rng.integers(0, 2_000, BATCH).tolist()
    return ScoredEvents(
        partitions=n % 4,
        offsets=n // 4,
        event_times_ms=n // 1_000,  # 1M events span 1000 ms: one window
        event_ids=[f"3f2a9c4e-{k:08x}-4b1d-9e6f-{k:012x}" for k in n.tolist()],  # UUID-like
        query_ids=[f"query-{q:05d}" for q in picks],
        segments=[(("model", f"v{q % 3}"),) for q in picks],
        measures=rng.random((BATCH, len(MEASURES))),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    windows = EventWindows(
        WindowSpec.tumbling(HOUR), MEASURES, FakeClock(), version="sha256:bench", set_queries=2_000
    )
    baseline = rss_mb()
    for first in range(0, args.events, BATCH):
        windows.add_events(batch(first, rng))
        if first + BATCH == 10_000:
            small = rss_mb()
            print(f"after 10k events: RSS {small:.1f} MB, {windows.state_size()}")
    large = rss_mb()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"after {args.events:,} events: RSS {large:.1f} MB, {windows.state_size()}")
    print(
        f"growth 10k -> {args.events:,}: {large - small:.1f} MB "
        f"({(large - small) * 2**20 / (args.events - 10_000):.0f} bytes/event); "
        f"start {baseline:.1f} MB, peak {peak:.1f} MB"
    )


if __name__ == "__main__":
    main()
