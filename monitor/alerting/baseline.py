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
- `pinned`: the team has said what normal is, so a drop must not become it. Once two windows
  in a row are judged bad, the drop is confirmed and its windows stay out, those two included,
  until a window is judged good again (windows judged unknown meanwhile stay out too). The
  per-query reference then keeps the quality from before the drop, and the alert fires until
  quality is back. A lone bad window is held back until the next is judged, and enters unless
  that one is bad too: a single bad window is as likely a false alarm as the start of a drop,
  and keeping every one out would keep the lowest windows out, biasing the reference upward
  and raising the false-alarm rate (measured at a level of 0.05 with the size gate out of
  play: 0.0517 with every window in, 0.0625 with lone bad windows out, 0.0536 as done here).

Held windows (low coverage, too many unjudged documents) never reach the history: the engine
does not offer them.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from monitor.alerting.state import Evidence

__all__ = ["CONFIRMING_WINDOWS", "BaselineWindow", "SeriesHistory"]

CONFIRMING_WINDOWS = 2  # bad windows in a row that make a drop, for `keep_out_drops`


@dataclass(frozen=True)
class BaselineWindow:
    """One past window of one measure and segment: its headline value and per-query means."""

    start_ms: int
    value: float
    query_values: Mapping[str, float]


class SeriesHistory:
    """The last `size` windows of one measure in one segment, oldest first.

    With `keep_out_drops` (a pinned drop rule), the windows of a confirmed drop stay out.
    """

    def __init__(self, size: int, *, keep_out_drops: bool = False) -> None:
        if size < 1:
            raise ValueError("a baseline needs at least one window")
        self.size = size
        self.keep_out_drops = keep_out_drops
        self._windows: deque[BaselineWindow] = deque(maxlen=size)
        self._held: list[BaselineWindow] = []
        self._in_drop = False

    def __len__(self) -> int:
        return len(self._windows)

    @property
    def in_drop(self) -> bool:
        """True while a confirmed drop keeps windows out (only with `keep_out_drops`)."""
        return self._in_drop

    def admit(self, window: BaselineWindow, evidence: Evidence) -> None:
        """Offer a window its rule has judged: every one enters, unless `keep_out_drops`.

        Then a bad window is held back; a second bad one in a row confirms a drop, and both
        stay out, as does every later window until one is judged good. A good window ends
        the drop and enters, after a held window it followed. An unknown window outside a
        drop enters (and leaves a held one held).
        """
        if not self.keep_out_drops:
            self.update(window)
        elif evidence is Evidence.GOOD:
            for held in self._held:
                self.update(held)
            self._held.clear()
            self._in_drop = False
            self.update(window)
        elif self._in_drop:
            return
        elif evidence is Evidence.BAD:
            self._held.append(window)
            if len(self._held) >= CONFIRMING_WINDOWS:
                self._held.clear()
                self._in_drop = True
        else:
            self.update(window)

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
