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

Which windows enter (`SeriesHistory.admit`, after the rule has judged the window):

- trailing median: every trusted window, bad ones too. A drop that lasts becomes the new
  normal and the alert resolves: the rule reports changes, and an accepted step change should
  stop paging without a config edit;
- `pinned`: the team has said what normal is, so a drop must not become it: only windows at
  or above the pinned level enter (`minimum`). The per-query reference then keeps the
  quality the team pinned, however slowly quality slides away from it: a reference that
  took in every window not yet judged bad followed a slow slide (1 query in 300 worse per
  window) down, and judged only 6.3 % of the slide's windows under the floor bad. A
  window judged bad is always under the pinned level, so a drop never enters, and neither
  does a replayed one after a restart: nothing about kept-out windows has to be stored.
  On a stable stream pinned at its own level about half the windows enter, the upper
  half; the reference leans upward by about half a window's noise, which the size gate
  (a window must also be `relative` under the pin) keeps from paging (measured in
  `bench/validity.py`).

Held windows (low coverage, too many unjudged documents, a drop held as a discovery) never
reach the history: the engine does not offer them.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["BaselineWindow", "SeriesHistory"]

_ROUNDING = 1e-12


@dataclass(frozen=True)
class BaselineWindow:
    """One past window of one measure and segment: its headline value and per-query means."""

    start_ms: int
    value: float
    query_values: Mapping[str, float]


class SeriesHistory:
    """The last `size` windows of one measure in one segment, oldest first.

    With `minimum` (a pinned drop rule's level), only windows whose value is at least it.
    """

    def __init__(self, size: int, *, minimum: float | None = None) -> None:
        if size < 1:
            raise ValueError("a baseline needs at least one window")
        self.size = size
        self.minimum = minimum
        self._windows: deque[BaselineWindow] = deque(maxlen=size)

    def __len__(self) -> int:
        return len(self._windows)

    def admit(self, window: BaselineWindow) -> None:
        """Offer a window its rule has judged: it enters unless it is under `minimum`."""
        # a mean that is the level up to its rounding is at it (30 x 0.7 / 30 < 0.7)
        if self.minimum is None or window.value >= self.minimum - _ROUNDING:
            self.update(window)

    def update(self, window: BaselineWindow) -> None:
        """Add a finalized window; a window already seen (same start) is ignored."""
        if any(past.start_ms == window.start_ms for past in self._windows):
            return
        self._windows.append(window)

    def rebase(self, rescore: Callable[[BaselineWindow], BaselineWindow | None]) -> bool:
        """Each window as `rescore` makes it (under a new evaluation-set version); False, and
        nothing changed, if it cannot make one of them."""
        rescored = [rescore(window) for window in self._windows]
        if any(window is None for window in rescored):
            return False
        self._windows = deque((w for w in rescored if w is not None), maxlen=self.size)
        return True

    def median(self) -> float:
        """The trailing median of the headline values (NaN with no history)."""
        if not self._windows:
            return float("nan")
        return statistics.median(window.value for window in self._windows)

    def mean_value(self) -> float:
        """The mean of the headline values (NaN with no history)."""
        if not self._windows:
            return math.nan
        return math.fsum(window.value for window in self._windows) / len(self._windows)

    def queries(self) -> set[str]:
        """The queries of any window of the history."""
        return set().union(*(window.query_values for window in self._windows))

    def query_means(self) -> dict[str, float]:
        """Each query's mean over the windows of the history it appeared in."""
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for window in self._windows:
            for query, value in window.query_values.items():
                sums[query] = sums.get(query, 0.0) + value
                counts[query] = counts.get(query, 0) + 1
        return {query: total / counts[query] for query, total in sums.items()}
