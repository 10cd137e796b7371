"""The always-valid test: a normal-mixture confidence sequence over window estimates.

A gate looked at after every window and acting on the first "significant" one has a false
alarm rate that grows with the number of looks (8,640 ten-second windows a day). A
confidence sequence is a sequence of intervals that holds the true difference at every look
at once with probability 1 - alpha, so acting on any of them is safe.

Each window w gives an estimate x_w of the difference (the mean over its common queries)
with standard error s_w; for the hundreds of queries of an evaluation set x_w is close to
normal, N(theta, s_w^2). With precision P = sum 1/s_w^2 and S = sum x_w/s_w^2 the likelihood
ratio of theta against theta_0, mixed over theta ~ N(theta_0, tau^2), is

    L(theta_0) = (1 + tau^2 P)^(-1/2) * exp(tau^2 (S - theta_0 P)^2 / (2 (1 + tau^2 P)))

a nonnegative martingale under theta_0, so by Ville's inequality P(sup_n L_n >= 1/alpha) <=
alpha (Robbins 1970; Johari et al. 2017 call the test mSPRT; Howard et al. 2021). Inverting
it gives the sequence: theta_0 is excluded after window n when L_n(theta_0) >= 1/alpha,

    theta in  S/P -/+ sqrt( 2 (1 + tau^2 P) / (tau^2 P^2) * log( sqrt(1 + tau^2 P) / alpha ) )

and the always-valid p-value of "no difference" is min(1, min over n of 1 / L_n(0)).

`tau` is the size of difference the test is most sensitive to (the sequence is tightest
when tau^2 P is around a few units); the default 0.02 fits differences of about 2 points of
nDCG. Windows that overlap (sliding windows) share events, so only windows that start at or
after the end of the last one taken count.

**Live traffic** (`add_window`): the guarantee needs each s_w to be the true standard error,
and a window's own variance estimate is not: on 10-50 lumpy per-query differences it is
small exactly when the mean is (a window of zeros and one big loss has both a low mean and a
low spread), so precision-weighting by it biases S and the sequence drifts (measured: false
alarms on 99 % of days at 10 queries a window). `add_window` weights window w by
n_w / sigma^2, sigma^2 the pooled variance of every per-query difference of the windows
*before* it (predictable: it cannot react to the window it weights), and takes no window into
the test until `burn_in` differences have fed that variance. The windows must be fresh
samples of queries: on a fixed set replayed every window they are not, and
`monitor.stats.query_units` gives the intervals (see docs/alerting.md, "Comparisons").

**Skewed differences.** The mixture is a Normal likelihood: it holds once the sum of the
differences taken is close to Normal. A sum of n differences of skewness g has skewness
g / sqrt(n); where most queries change a little and a few lose a lot (skewness -3.5), the
first hundreds of differences are far from Normal, and the sequence crossed early on 7.3 %
of null days at alpha 0.05 (`bench/validity.py` scenario 2). So no window enters the test
until the pooled differences are enough for |g| / sqrt(n) <= `MAX_SUM_SKEW`, g their pooled
skewness (n >= (g / MAX_SUM_SKEW)^2), as well as `burn_in`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from monitor.stats.query_units import UnitMoments

__all__ = ["DEFAULT_BURN_IN", "DEFAULT_TAU", "MAX_SUM_SKEW", "MixtureSequence", "SequenceState"]

DEFAULT_TAU = 0.02
DEFAULT_BURN_IN = 50  # per-query differences that feed the pooled variance before a verdict
MAX_SUM_SKEW = 0.15  # the skewness of the pooled differences' sum a verdict waits under


@dataclass(frozen=True)
class SequenceState:
    """What the sequence knows after its windows: mergeable sums and the running p-value."""

    windows: int = 0
    precision: float = 0.0  # P = sum of 1 / s_w^2
    weighted_sum: float = 0.0  # S = sum of x_w / s_w^2
    p_value: float = 1.0  # min over the looks of 1 / L(0)
    last_end_ms: int = -1  # end of the last window taken (sliding windows overlap)
    # the pooled per-query differences of the windows taken (`add_window`): count, mean, M2
    pooled_count: int = 0
    pooled_mean: float = 0.0
    pooled_m2: float = 0.0
    pooled_m3: float = 0.0  # their third central moment's sum (0 in records of rankmon < 0.9)

    @property
    def pooled(self) -> UnitMoments:
        """The pooled per-query differences as moments (merged with Chan et al.'s rule)."""
        return UnitMoments(self.pooled_count, self.pooled_mean, self.pooled_m2)

    @property
    def pooled_variance(self) -> float:
        """The variance of one per-query difference, pooled (NaN under 2 differences)."""
        if self.pooled_count < 2:
            return math.nan
        return self.pooled_m2 / (self.pooled_count - 1)

    @property
    def pooled_skewness(self) -> float:
        """The skewness of one per-query difference, pooled (0 without a spread)."""
        if self.pooled_count < 2 or self.pooled_m2 <= 0:
            return 0.0
        n = self.pooled_count
        return math.sqrt(n) * self.pooled_m3 / math.pow(self.pooled_m2, 1.5)

    @property
    def ready_after(self) -> int:
        """The pooled differences a verdict waits for, beyond `burn_in`: enough for their
        sum's skewness to be at most `MAX_SUM_SKEW`."""
        return math.ceil((self.pooled_skewness / MAX_SUM_SKEW) ** 2)

    @property
    def estimate(self) -> float:
        """The precision-weighted mean of the window estimates (NaN before any)."""
        return self.weighted_sum / self.precision if self.precision > 0 else math.nan


@dataclass(frozen=True)
class MixtureSequence:
    """The normal-mixture confidence sequence at level `alpha` with mixture scale `tau`."""

    alpha: float
    tau: float = DEFAULT_TAU

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not self.tau > 0.0:
            raise ValueError(f"tau must be > 0, got {self.tau}")

    def add(
        self, state: SequenceState, estimate: float, stderr: float, *, start_ms: int, end_ms: int
    ) -> SequenceState:
        """The state after one more window; a window overlapping the last one taken, or
        without a finite estimate and a positive standard error, leaves it as it was."""
        if start_ms < state.last_end_ms:
            return state
        if not (math.isfinite(estimate) and math.isfinite(stderr) and stderr > 0.0):
            return state
        weight = 1.0 / (stderr * stderr)
        after = replace(
            state,
            windows=state.windows + 1,
            precision=state.precision + weight,
            weighted_sum=state.weighted_sum + estimate * weight,
            last_end_ms=end_ms,
        )
        return replace(after, p_value=min(state.p_value, self.p_value(after)))

    def add_window(
        self,
        state: SequenceState,
        differences: npt.ArrayLike,
        *,
        start_ms: int,
        end_ms: int,
        burn_in: int = DEFAULT_BURN_IN,
    ) -> SequenceState:
        """The state after one more window of per-query differences (live traffic): weighted
        by the variance pooled over the windows before it, after `burn_in` differences."""
        if start_ms < state.last_end_ms:
            return state
        d = np.asarray(differences, dtype=np.float64)
        d = d[np.isfinite(d)]
        if d.size == 0:
            return state
        mean = float(d.mean())
        after = state
        variance = state.pooled_variance
        ready = state.pooled_count >= max(burn_in, state.ready_after)
        if ready and variance > 0.0:
            weight = d.size / variance
            after = replace(
                state,
                windows=state.windows + 1,
                precision=state.precision + weight,
                weighted_sum=state.weighted_sum + mean * weight,
            )
            after = replace(after, p_value=min(state.p_value, self.p_value(after)))
        flat = d.min() == d.max()
        m2 = 0.0 if flat else float(((d - mean) ** 2).sum())
        m3 = 0.0 if flat else float(((d - mean) ** 3).sum())
        pooled = state.pooled.merge(UnitMoments(int(d.size), mean, m2))
        return replace(
            after,
            last_end_ms=end_ms,
            pooled_count=pooled.count,
            pooled_mean=pooled.mean,
            pooled_m2=pooled.m2,
            pooled_m3=_merged_m3(state, int(d.size), mean, m2, m3),
        )

    def log_likelihood_ratio(self, state: SequenceState, theta: float) -> float:
        """log L(theta) of the state (0 before any window)."""
        return float(self.log_likelihood_ratios(state.precision, state.weighted_sum, theta))

    def log_likelihood_ratios(
        self, precision: npt.ArrayLike, weighted_sum: npt.ArrayLike, theta: float = 0.0
    ) -> npt.NDArray[np.float64]:
        """log L(theta) for arrays of (P, S): many sequences at once (bench/gate.py)."""
        p = np.asarray(precision, dtype=np.float64)
        v = self.tau * self.tau * p
        deviation = np.asarray(weighted_sum, dtype=np.float64) - theta * p
        result: npt.NDArray[np.float64] = -0.5 * np.log1p(v) + self.tau * self.tau * deviation * (
            deviation / (2 * (1 + v))
        )
        return result

    def p_value(self, state: SequenceState) -> float:
        """1 / L(0) at this look, capped at 1 (the state's `p_value` is the running minimum)."""
        return min(1.0, math.exp(-self.log_likelihood_ratio(state, 0.0)))

    def interval(self, state: SequenceState) -> tuple[float, float]:
        """The confidence sequence's interval after the state's windows (infinite before)."""
        if state.precision <= 0.0:
            return -math.inf, math.inf
        tau2, p = self.tau * self.tau, state.precision
        v = tau2 * p
        radius = math.sqrt(
            2.0 * (1.0 + v) / (tau2 * p * p) * (0.5 * math.log1p(v) - math.log(self.alpha))
        )
        centre = state.weighted_sum / p
        return centre - radius, centre + radius


def _merged_m3(state: SequenceState, n: int, mean: float, m2: float, m3: float) -> float:
    """The pooled third central moment's sum with a window's (Pebay's pairwise rule)."""
    a = state.pooled_count
    if a == 0:
        return m3
    total = a + n
    delta = mean - state.pooled_mean
    return (
        state.pooled_m3
        + m3
        + delta**3 * a * n * (a - n) / (total * total)
        + 3.0 * delta * (a * m2 - n * state.pooled_m2) / total
    )
