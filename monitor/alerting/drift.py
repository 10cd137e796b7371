"""Page-Hinkley: a sequential detector of a downward change in a series of window values.

For values x_1..x_t with running mean m_t, the detector accumulates how far each value falls
under the mean, less a tolerated drift `delta`:

    g_t = sum_{i<=t} (m_i - x_i - delta),   G_t = min_{i<=t} g_i,   drift when g_t - G_t > threshold

A slow slide that no single window shows adds up in g_t; noise of mean zero cancels out. Once
it detects, the detector starts afresh (river's convention), so a slide that goes on is
detected again a few windows later and a `trend` alert stays firing through its
`keep_firing_for` windows; when the series settles, detections stop and the alert resolves.
No detection before `min_windows` values: the running mean needs a few to mean anything.
"""

from __future__ import annotations

import math

__all__ = ["PageHinkley"]


class PageHinkley:
    """Detects a decrease of the mean; `update(x)` then read `drift_detected`."""

    def __init__(self, delta: float, threshold: float, min_windows: int) -> None:
        if threshold <= 0 or delta < 0 or min_windows < 1:
            raise ValueError("Page-Hinkley needs threshold > 0, delta >= 0, min_windows >= 1")
        self.delta = delta
        self.threshold = threshold
        self.min_windows = min_windows
        self.drift_detected = False
        self._reset()

    def _reset(self) -> None:
        self._count = 0
        self._mean = 0.0
        self._cumulative = 0.0
        self._minimum = 0.0

    @property
    def statistic(self) -> float:
        """g_t - G_t: how far the cumulative shortfall is above its lowest point."""
        return self._cumulative - self._minimum

    def update(self, value: float) -> None:
        """Take the next window's value; NaN (no value) is skipped."""
        self.drift_detected = False
        if math.isnan(value):
            return
        self._count += 1
        self._mean += (value - self._mean) / self._count
        self._cumulative += self._mean - value - self.delta
        self._minimum = min(self._minimum, self._cumulative)
        if self._count >= self.min_windows and self.statistic > self.threshold:
            self.drift_detected = True
            self._reset()
