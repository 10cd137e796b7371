"""Baselines: what a series looked like over its last N finalized windows.

Two baselines serve the `drop` condition, for different jobs:

- the headline baseline is the trailing **median** of the last N window values (or a pinned
  value): the size of a drop is measured against it, and one odd window does not move it;
- the per-query baseline is each query's **mean** over the last N windows it appeared in: the
  paired test compares the current window against it. A mean, not a median, because a query's
  per-window values are few, discrete and skewed (one event scores 0, 0.63 or 1): the median
  of such values sits away from their mean, and the paired differences would then be biased
  even when nothing changed, which is exactly a false alarm. The mean is unbiased under no
  change, so the test holds its level (measured in `bench/alerts.py`).

Every finalized window enters the history, bad ones too: a drop that lasts longer than about
half the baseline becomes the new normal and the alert resolves. Pinning the headline value
does not prevent it: the per-query baseline still takes the drop in, and the test stops
telling it apart (a `below` floor keeps paging).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BaselineWindow", "SeriesHistory"]


@dataclass(frozen=True)
class BaselineWindow:
    """One past window of one measure and segment: its headline value and per-query means."""

    start_ms: int
    value: float
    query_values: Mapping[str, float]


class SeriesHistory:
    """The last `size` windows of one measure in one segment, oldest first."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a baseline needs at least one window")
        self.size = size
        self._windows: deque[BaselineWindow] = deque(maxlen=size)

    def __len__(self) -> int:
        return len(self._windows)

    def update(self, window: BaselineWindow) -> None:
        """Add a finalized window; a window already seen (same start) is ignored."""
        if any(past.start_ms == window.start_ms for past in self._windows):
            return
        self._windows.append(window)

    def median(self) -> float:
        """The trailing median of the headline values (NaN with no history)."""
        if not self._windows:
            return float("nan")
        return statistics.median(window.value for window in self._windows)

    def query_means(self) -> dict[str, float]:
        """Each query's mean over the windows of the history it appeared in."""
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for window in self._windows:
            for query, value in window.query_values.items():
                sums[query] = sums.get(query, 0.0) + value
                counts[query] = counts.get(query, 0) + 1
        return {query: total / counts[query] for query, total in sums.items()}
