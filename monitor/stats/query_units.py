"""The query as the unit: per-query paired differences across windows, and the two intervals
they give on a fixed evaluation set.

A fixed evaluation set replayed every window is one sample of n queries from a population,
scored again and again: windows add replay noise to average away, never new queries. Each
unit (a query, with the segment values a comparison does not fix) keeps the count, mean and
sum of squared deviations (Welford; Chan et al.'s merge) of its differences
d_iw = candidate_iw - baseline_iw over the windows that gave a verdict. With m_i the unit's
mean, w_i its windows and n units:

- estimate        d = mean_i m_i
- between-query   s = sd_i(m_i)  (n - 1 degrees of freedom)
- replay noise    v = sum_i M2_i / sum_i (w_i - 1), the pooled within-query variance of one
                  window's difference (unknown before some unit has two windows), and the
                  noise of d: replay_stderr = sqrt(v * sum_i 1/w_i) / n.

**On these queries** (`set_*`): the difference the set's n queries would show with the
replay noise averaged away, mean_i E[d_iw]. Interval d -/+ r(alpha), r the two-sided
normal-mixture boundary (Robbins; Howard et al. 2021, rho = 1) of the noise's running mean,
in units of one window's noise sqrt(v / n) at w_eff = n / sum_i 1/w_i windows:

    r(a) = sqrt(v / n) * sqrt((w_eff + 1) * log((w_eff + 1) / a^2)) / w_eff

It holds at every look at once; a deterministic ranker has v = 0 and an interval of width
0 from its second window.

**In the population of queries** (`population_*`): the mean difference over the queries the
set was drawn from. d - mu = (mean_i delta_i - mu) + (noise mean): the first is the sampling
error of n queries, fixed once the set is drawn, held by Student's t on the unit means
(whose spread s includes the noise, so it over-covers while the noise is large); the second
by the boundary above. The interval splits alpha (a union bound): alpha_noise = alpha / 20,
alpha_sample = alpha - alpha_noise,

    d -/+ ( t_{1 - alpha_sample / 2, n - 1} * s_q / sqrt(n) + r(alpha_noise) )

so it holds at every look with probability at least 1 - alpha. s is the unit means'
spread less their own replay noise, s_q^2 = max(0, s^2 - v * mean_i(1 / w_i)) (what the
queries' spread is once the noise is out; with the noise left in, a noisy replay's interval
over-covered: 98 % for 95 %); before any unit has two windows, s_q = s and v is bounded by
s^2 (the unit means' whole spread). For a deterministic ranker v = 0 and the interval is
the fixed-sample t interval over the n queries (at alpha_sample). `min_detectable` is the
population difference these n queries detect with 80 % power at the sample level:
(t_{1 - alpha_sample / 2, n - 1} + z_0.8) * s_q / sqrt(n).

`bench/validity.py` measures these promises by simulation (docs/alerting.md, "Comparisons").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from monitor.stats.student_t import t_ppf

__all__ = [
    "NOISE_SHARE",
    "Z_POWER",
    "FixedSetIntervals",
    "UnitMoments",
    "add_difference",
    "fixed_set_intervals",
    "noise_radius",
]

NOISE_SHARE = 1.0 / 20.0  # of alpha, spent on the replay noise in the population interval
Z_POWER = 0.8416212335729143  # the standard normal's 0.8 quantile: 80 % power


@dataclass(frozen=True)
class UnitMoments:
    """One unit's differences so far: how many windows, their mean and Welford's M2."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, difference: float) -> UnitMoments:
        """With one more window's difference (an equal value leaves M2 exactly as it was)."""
        count = self.count + 1
        delta = difference - self.mean
        mean = self.mean + delta / count
        return UnitMoments(count, mean, self.m2 + delta * (difference - mean))

    def merge(self, other: UnitMoments) -> UnitMoments:
        """Both units' windows at once (Chan et al.): equal means add no spread."""
        if not other.count:
            return self
        if not self.count:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * other.count / count
        m2 = self.m2 + other.m2 + delta * delta * self.count * other.count / count
        return UnitMoments(count, mean, m2)


def add_difference(units: dict[str, UnitMoments], unit: str, difference: float) -> None:
    """Take one window's difference of `unit` into `units` (in place)."""
    units[unit] = units.get(unit, UnitMoments()).add(difference)


@dataclass(frozen=True)
class FixedSetIntervals:
    """The two intervals of a fixed set's units (module docstring); NaN / infinite where
    not yet defined (fewer than 2 units)."""

    units: int
    estimate: float
    replay_stderr: float  # NaN before some unit has two windows
    set_lower: float
    set_upper: float
    population_lower: float
    population_upper: float
    min_detectable: float

    @classmethod
    def undefined(cls, units: int = 0) -> FixedSetIntervals:
        nan, inf = math.nan, math.inf
        return cls(units, nan, nan, -inf, inf, -inf, inf, nan)


def noise_radius(variance: float, units: int, windows: float, alpha: float) -> float:
    """r(alpha): the always-valid bound on the running mean of the replay noise."""
    if variance <= 0.0:
        return 0.0
    boundary = math.sqrt((windows + 1.0) * math.log((windows + 1.0) / (alpha * alpha)))
    return math.sqrt(variance / units) * boundary / windows


def fixed_set_intervals(
    moments: Iterable[UnitMoments] | Mapping[str, UnitMoments], alpha: float
) -> FixedSetIntervals:
    """Both intervals at level `alpha` (each holds at every look with prob. >= 1 - alpha)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    units = [m for m in (moments.values() if isinstance(moments, Mapping) else moments) if m.count]
    n = len(units)
    if n < 2:
        return FixedSetIntervals.undefined(n)
    means = [u.mean for u in units]
    estimate = math.fsum(means) / n
    if min(means) == max(means):
        spread = 0.0  # equal unit means: exactly no spread, not its rounding
    else:
        spread = math.sqrt(math.fsum((m - estimate) ** 2 for m in means) / (n - 1))
    inverse_windows = math.fsum(1.0 / u.count for u in units)
    windows = n / inverse_windows  # w_eff, the harmonic mean of the units' windows
    dof = sum(u.count - 1 for u in units)
    alpha_noise = alpha * NOISE_SHARE
    if dof:
        variance = math.fsum(u.m2 for u in units) / dof
        replay = math.sqrt(variance * inverse_windows) / n
        set_radius = noise_radius(variance, n, windows, alpha)
        # the unit means' spread less their own replay noise: the queries' spread
        sample = math.sqrt(max(0.0, spread * spread - variance * inverse_windows / n))
        noise = noise_radius(variance, n, windows, alpha_noise)
    else:
        replay, set_radius = math.nan, math.inf
        sample, noise = spread, noise_radius(spread * spread, n, windows, alpha_noise)
    t = t_ppf(1.0 - (alpha - alpha_noise) / 2.0, n - 1)
    radius = t * sample / math.sqrt(n) + noise
    return FixedSetIntervals(
        units=n,
        estimate=estimate,
        replay_stderr=replay,
        set_lower=estimate - set_radius,
        set_upper=estimate + set_radius,
        population_lower=estimate - radius,
        population_upper=estimate + radius,
        min_detectable=(t + Z_POWER) * sample / math.sqrt(n),
    )
