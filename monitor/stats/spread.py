"""A segment's between-query spread pooled over its windows, and what the tests on a window
need from it: its kurtosis (is the spread surely over a limit?) and its skewness (a window
mean of few queries from a skewed population, read as Normal).

`cornish_fisher` corrects a standardized window mean for skewness: a mean of n values of
skewness g has skewness g / sqrt(n), and the first Cornish-Fisher term maps its z to the
Normal value of the same tail, z - (g / (6 sqrt(n))) (z^2 - 1), with z clipped to where that
stays monotone (|z| <= 3 sqrt(n) / |g|). nDCG has a heavy tail at 0 (skewness down to -4
where most queries do well), and without it a test of few queries per window sees that tail
as a drop.

Is the spread surely over a limit? A one-sided test on the variance.

The sample variance s^2 of n values with variance sigma^2 and kurtosis kappa (the fourth
central moment over sigma^4) has mean sigma^2 and variance sigma^4 (kappa - (n - 3) / (n - 1))
/ n, with no Normal assumption on the values. Its distribution is skewed to the right, the
more so the fewer the values and the heavier their tails, so a Normal quantile calls too many
windows over at small n. `variance_over` reads s^2 against a Gamma with that mean and
variance under "sigma^2 is at the limit" (a chi-square of d = 2 / (kappa - (n - 3) / (n - 1))
x n degrees of freedom, scaled), its quantile from Wilson and Hilferty's cube-root
approximation. The kurtosis is not estimated from the window alone: a window whose values
happen to spread evenly has a low kurtosis exactly when its s^2 is high, which makes the test
too eager; `SpreadMoments` pools it over a segment's windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["SpreadMoments", "cornish_fisher", "variance_limit"]

_NORMAL_KURTOSIS = 3.0


@dataclass
class SpreadMoments:
    """Second and fourth central moments pooled over windows (each about its own mean)."""

    values: int = 0
    windows: int = 0
    squares: float = 0.0
    cubes: float = 0.0
    fourths: float = 0.0

    def add(self, values: Sequence[float]) -> None:
        """Pool one window's values."""
        if len(values) < 2:
            return
        mean = math.fsum(values) / len(values)
        self.values += len(values)
        self.windows += 1
        self.squares += math.fsum((v - mean) ** 2 for v in values)
        self.cubes += math.fsum((v - mean) ** 3 for v in values)
        self.fourths += math.fsum((v - mean) ** 4 for v in values)

    @property
    def freedom(self) -> int:
        """Degrees of freedom of the pooled variance: one lost to each window's mean."""
        return self.values - self.windows

    @property
    def variance(self) -> float:
        """The pooled between-query variance (NaN before a window of 2 values)."""
        return self.squares / self.freedom if self.freedom > 0 else math.nan

    @property
    def kurtosis(self) -> float:
        """The pooled kurtosis (a Normal's 3 until there is a spread to read it from)."""
        if self.values < 2 or self.squares <= 0:
            return _NORMAL_KURTOSIS
        second = self.squares / self.values
        return self.fourths / self.values / (second * second)

    @property
    def skewness(self) -> float:
        """The pooled skewness (0 until there is a spread to read it from)."""
        if self.values < 2 or self.squares <= 0:
            return 0.0
        second = self.squares / self.values
        return self.cubes / self.values / math.pow(second, 1.5)


def cornish_fisher(z: float, skewness: float, n: int) -> float:
    """A standardized mean of `n` values of this `skewness`, read as the Normal value of
    its tail (module docstring)."""
    g = skewness / math.sqrt(n)
    if g == 0 or not math.isfinite(z):
        return z
    reach = 3.0 / abs(g)
    z = max(-reach, min(reach, z))
    return z - g / 6.0 * (z * z - 1.0)


def variance_limit(allowed: float, n: int, kurtosis: float, level: float) -> float:
    """The sample variance of `n` values above which their variance is over `allowed` at
    `level` (module docstring)."""
    excess = max(kurtosis - (n - 3) / (n - 1), 1e-9) / n
    freedom = 2.0 / excess
    z = NormalDist().inv_cdf(1.0 - level)
    cube = 1.0 - 2.0 / (9.0 * freedom) + z * math.sqrt(2.0 / (9.0 * freedom))
    return allowed * max(cube, 0.0) ** 3
