"""Page-Hinkley on standardized window means: a sequential detector of a downward change.

Each window brings the mean x_t of its n_t query values, their variance and their third
central moment. Since the last reset the detector pools the windows before: their mean m
(weighted by queries, N queries in all), the between-query variance s^2 and skewness g pooled
over every window including this one. The window's standardized innovation is

    z_t = (x_t - m) / sqrt(s^2 / n_t + s^2 / N)

which, on a stable stream of windows drawn from one population, has mean 0 and variance 1.
A window mean of few queries from a skewed population (nDCG has a heavy tail at 0) has
skewness g / sqrt(n_t), and a Normal reading of z would see its long tail as drift: z is
corrected by the first Cornish-Fisher term (`monitor.stats.spread.cornish_fisher`). The
detector accumulates the shortfall less a tolerated drift `delta` (in standard errors):

    g_t = sum_{i<=t} (-z_i - delta),   G_t = min_{i<=t} g_i,   drift when g_t - G_t > h

(g_t - G_t is the one-sided CUSUM of -z). Because z is standardized, the threshold h fixes the
in-control run length (windows between false detections on a stable stream) whatever the
measure's noise: `threshold_for_run_length` solves Siegmund's approximation for Normal
increments

    ARL_0 = (exp(2 delta b) - 2 delta b - 1) / (2 delta^2),   b = h + 1.166

for h (b^2 when delta is 0), so a rule's share of `alerts.false_pages_per_day` sets h
(bench/validity.py scenario 9 measures the rate it gives). Once it detects, the detector
starts afresh (river's convention), so a slide that goes on is detected again a few windows
later; no detection before `min_windows` values since the last start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from monitor.stats.spread import cornish_fisher

__all__ = ["PageHinkley", "run_length", "threshold_for_run_length"]

# Siegmund's correction for the overshoot of a Normal CUSUM over its threshold.
_OVERSHOOT = 1.166


def run_length(threshold: float, delta: float) -> float:
    """The in-control average run length (windows) of the standardized detector (Siegmund)."""
    b = threshold + _OVERSHOOT
    if delta == 0:
        return b * b
    x = 2.0 * delta * b
    return (math.expm1(x) - x) / (2.0 * delta * delta)


def threshold_for_run_length(windows: float, delta: float) -> float:
    """The threshold h (standard errors) whose in-control run length is `windows`."""
    if windows <= 1:
        return 0.0
    low, high = 0.0, 1.0
    while run_length(high, delta) < windows:
        high *= 2.0
    for _ in range(80):
        middle = (low + high) / 2.0
        if run_length(middle, delta) < windows:
            low = middle
        else:
            high = middle
    return high


class PageHinkley:
    """Detects a decrease of the mean of standardized window means; `update(values, h)`,
    then read `drift_detected` (and `z`, the window's standardized innovation)."""

    def __init__(self, delta: float, min_windows: int) -> None:
        if delta < 0 or min_windows < 1:
            raise ValueError("Page-Hinkley needs delta >= 0 and min_windows >= 1")
        self.delta = delta
        self.min_windows = min_windows
        self.drift_detected = False
        self.z = math.nan
        self._reset()

    def _reset(self) -> None:
        self._windows = 0
        self._queries = 0  # N: queries of the windows since the last start
        self._total = 0.0  # their values' sum
        self._squares = 0.0  # sum of squared deviations from each window's own mean
        self._cubes = 0.0  # the same, cubed
        self._freedom = 0  # sum of (n_i - 1)
        self._cumulative = 0.0
        self._minimum = 0.0

    @property
    def statistic(self) -> float:
        """g_t - G_t, in standard errors: how far the cumulative shortfall is above its
        lowest point."""
        return self._cumulative - self._minimum

    def update(self, values: Sequence[float], threshold: float) -> bool:
        """Take the next window's query values (NaN left out); False: the window was skipped,
        with fewer than 2 values or no spread among them or the windows before."""
        self.drift_detected = False
        self.z = math.nan
        finite = [v for v in values if math.isfinite(v)]
        n = len(finite)
        if n < 2:
            return False
        mean = math.fsum(finite) / n
        squares = math.fsum((v - mean) ** 2 for v in finite)
        cubes = math.fsum((v - mean) ** 3 for v in finite)
        variance = (self._squares + squares) / (self._freedom + n - 1)
        if variance <= 0:
            return False
        if self._windows:
            self.z = self._standardized(mean, variance, cubes, n)
            self._cumulative += -self.z - self.delta
            self._minimum = min(self._minimum, self._cumulative)
        self._windows += 1
        self._queries += n
        self._total += mean * n
        self._squares += squares
        self._cubes += cubes
        self._freedom += n - 1
        if self._windows >= self.min_windows and self.statistic > threshold:
            self.drift_detected = True
            self._reset()
        return True

    def _standardized(self, mean: float, variance: float, cubes: float, n: int) -> float:
        """The window's innovation in standard errors, skew-corrected (module docstring)."""
        before = self._total / self._queries
        z = (mean - before) / math.sqrt(variance / n + variance / self._queries)
        skew = (self._cubes + cubes) / (self._queries + n) / math.pow(variance, 1.5)
        return cornish_fisher(z, skew, n)
