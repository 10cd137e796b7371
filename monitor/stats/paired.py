"""One paired comparison: the mean of per-query differences, its interval, p-value and size.

For the differences d_i = candidate_i - baseline_i of the n queries both sides have:

- `delta` is mean(d); `effect_size` is mean(d) / sd(d) (sd with n - 1; 0 when every d_i is
  0, NaN when every d_i is the same other value); `stderr` is sd(d) / sqrt(n).
- The interval: Student's t, delta -/+ t_{(1+c)/2, n-1} * stderr (scipy's `ttest_rel(...)
  .confidence_interval`), for the `t` and `permutation` tests; the percentile interval of
  `draws` bootstrap means (scipy's `bootstrap(method="percentile")`) for `bootstrap`.
- The two-sided p-value of "no difference":
  - `t`: the paired t-test, 2 * P(T_{n-1} > |t|) (scipy's `ttest_rel`);
  - `permutation` (the default): the paired sign-flip test, with scipy's two-sided
    definition p = min(1, 2 * min(P(T* <= T), P(T* >= T))): over every sign pattern for
    n <= 12 (exact), else over `draws` random ones, each side counted as (hits + 1) /
    (draws + 1) (`permutation_test(..., permutation_type="samples")`);
  - `bootstrap`: the bootstrap means moved onto the null, (#{|mean* - delta| >= |delta|}
    + 1) / (draws + 1).

The draws come from a fixed seed, so one input always gets one answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from monitor.stats.sign_flips import (
    EXACT_LIMIT,
    all_flipped_means,
    random_flipped_means,
    tie_tolerance,
)
from monitor.stats.student_t import t_ppf, t_sf

__all__ = ["DEFAULT_DRAWS", "TESTS", "PairedResult", "paired_comparison"]

TESTS = ("permutation", "t", "bootstrap")
DEFAULT_DRAWS = 9999  # scipy's default n_resamples
SEED = 20_261_201
_CHUNK = 1024

Vector = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PairedResult:
    """The statistics of one paired comparison (NaN where they are not defined)."""

    queries: int
    delta: float
    stderr: float
    ci_lower: float
    ci_upper: float
    p_value: float
    effect_size: float

    @classmethod
    def undefined(cls, queries: int = 0) -> PairedResult:
        """No verdict: every statistic NaN."""
        nan = math.nan
        return cls(queries, nan, nan, nan, nan, nan, nan)


def paired_comparison(
    differences: npt.ArrayLike,
    *,
    test: str = "permutation",
    confidence: float = 0.95,
    draws: int = DEFAULT_DRAWS,
    seed: int = SEED,
) -> PairedResult:
    """The statistics of the paired differences (module docstring); NaN ones are dropped."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}: one of {', '.join(TESTS)}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.isfinite(d)]
    n = int(d.size)
    if n < 2:
        return PairedResult.undefined(n)
    delta = float(d.mean())
    # Equal differences have no spread: exactly 0, not the rounding of their mean.
    sd = 0.0 if d.min() == d.max() else float(d.std(ddof=1))
    stderr = sd / math.sqrt(n)
    # identical runs: no difference at all, an effect of 0 (not 0 / 0)
    effect = delta / sd if sd > 0 else (0.0 if delta == 0.0 else math.nan)
    generator = np.random.default_rng(seed)
    if test == "bootstrap":
        means = _bootstrap_means(d, draws, generator)
        alpha = 1.0 - confidence
        lower, upper = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
        p_value = _bootstrap_p_value(means, delta, draws)
        return PairedResult(n, delta, stderr, float(lower), float(upper), p_value, effect)
    lower, upper = _t_interval(delta, stderr, n, confidence)
    if test == "t":
        p_value = _t_p_value(delta, stderr, n)
    else:
        p_value = _permutation_p_value(d, delta, draws, generator)
    return PairedResult(n, delta, stderr, lower, upper, p_value, effect)


def _t_interval(delta: float, stderr: float, n: int, confidence: float) -> tuple[float, float]:
    if stderr == 0.0:
        return delta, delta
    half = t_ppf(0.5 + confidence / 2.0, n - 1) * stderr
    return delta - half, delta + half


def _t_p_value(delta: float, stderr: float, n: int) -> float:
    if stderr == 0.0:
        return math.nan if delta == 0.0 else 0.0
    return min(1.0, 2.0 * t_sf(abs(delta / stderr), n - 1))


def _permutation_p_value(
    d: Vector, observed: float, draws: int, generator: np.random.Generator
) -> float:
    # Within scipy's own tolerance too (100 ulps of the observed mean): a flipped mean closer
    # than that is the observed one, whatever the summation order made of it.
    tolerance = max(tie_tolerance(d), 100.0 * float(np.finfo(np.float64).eps) * abs(observed))
    if d.size <= EXACT_LIMIT:
        means = all_flipped_means(d)
        exact_less = int(np.count_nonzero(means <= observed + tolerance)) / means.size
        exact_greater = int(np.count_nonzero(means >= observed - tolerance)) / means.size
        return min(1.0, 2.0 * min(exact_less, exact_greater))
    at_most = at_least = drawn = 0
    while drawn < draws:
        rows = min(_CHUNK, draws - drawn)
        means = random_flipped_means(d, rows, generator)
        at_most += int(np.count_nonzero(means <= observed + tolerance))
        at_least += int(np.count_nonzero(means >= observed - tolerance))
        drawn += rows
    less, greater = (at_most + 1) / (drawn + 1), (at_least + 1) / (drawn + 1)
    return float(min(1.0, 2.0 * min(less, greater)))


def _bootstrap_means(d: Vector, draws: int, generator: np.random.Generator) -> Vector:
    n = d.size
    parts = []
    for start in range(0, draws, _CHUNK):
        rows = min(_CHUNK, draws - start)
        picks = generator.integers(0, n, size=(rows, n))
        parts.append(d[picks].mean(axis=1))
    means: Vector = np.concatenate(parts)
    return means


def _bootstrap_p_value(means: Vector, delta: float, draws: int) -> float:
    centred = means - delta  # the bootstrap distribution moved onto "no difference"
    hits = np.count_nonzero(np.abs(centred) >= abs(delta) - tie_tolerance(means))
    return float(min(1.0, (hits + 1) / (draws + 1)))
