"""Timing for the benches: the best CPU time of a few runs (the least disturbed one)."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["best_cpu"]


def best_cpu(run: Callable[[], object], repeats: int) -> float:
    """The least process CPU time, in seconds, of `repeats` calls of `run`."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best
