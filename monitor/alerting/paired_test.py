"""The paired sign-flip permutation test of a drop, on per-query differences.

The evaluation set is fixed, so each window scores (mostly) the same queries: for the common
queries, d_i = current_i - baseline_i. Under "nothing changed" each d_i is as likely to be
positive as negative with the same size, so flipping the signs at random gives the null
distribution of the statistic T = mean(d). One-sided p-value for a drop (Phipson & Smyth's +1
keeps it a valid p-value with Monte Carlo draws):

    p = (1 + #{r : T*_r <= T}) / (1 + R),   T*_r = mean(s_r * d),  s_r uniform in {-1, +1}^n

Why this test and not the others:

- it tests the **mean** of the differences, which is what the headline nDCG reports; Wilcoxon
  signed-rank tests a pseudo-median and has to drop or patch the many exact zeros and ties
  that per-query nDCG differences have (queries whose ranking did not change);
- it makes no normality assumption (per-query nDCG is bounded and lumpy) and, unlike the
  bootstrap of the mean, does not run anti-conservative with few queries;
- with up to `EXACT_LIMIT` queries every sign pattern is enumerated (exact p-value); above,
  up to `draws` random patterns from a fixed seed (the same window always gets the same
  p-value), stopping early once 20 flipped means reach the observed one (Besag & Clifford
  1991: still a valid p-value).

Random draws cannot show a p-value under 1 / (draws + 1) (2.5e-4 with 4,000), and a
false-page budget spread over many rules, segments and windows a day asks for levels far
under it (`alerts.false_pages_per_day`). Under `BOUND_BELOW` the test uses Hoeffding's
bound on the same sign-flip distribution instead: each s_i d_i is symmetric in
[-|d_i|, |d_i|], so P(sum s_i d_i <= -a) <= exp(-a^2 / (2 sum d_i^2)), a valid p-value at
any level (conservative: at 1e-5 it needs z = 4.8 where a normal tail needs 4.3). Which
test runs depends on the level only, never on the data, so each keeps its level.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from monitor.stats.sign_flips import (
    EXACT_LIMIT,
    all_flipped_means,
    random_flipped_means,
    tie_tolerance,
)

__all__ = ["BOUND_BELOW", "EXACT_LIMIT", "PairedDrop", "hoeffding_p_value", "paired_drop_test"]

DEFAULT_DRAWS = 4000
BOUND_BELOW = 1e-3  # levels under this use the Hoeffding bound, not random draws
_SEED = 20_260_401
_CHUNK = 256
STOP_AFTER = 20


@dataclass(frozen=True)
class PairedDrop:
    """The outcome of one test: common queries, the mean difference and its p-value.

    `worst` lists the queries with the largest drops, worst first, as (query, difference).
    """

    queries: int
    mean_difference: float
    p_value: float
    worst: tuple[tuple[str, float], ...]


def paired_drop_test(
    current: Mapping[str, float],
    baseline: Mapping[str, float],
    *,
    draws: int = DEFAULT_DRAWS,
    worst: int = 5,
    level: float | None = None,
) -> PairedDrop:
    """One-sided test that `current` is lower than `baseline` on their common queries;
    `level`: the level the p-value will be held to (under `BOUND_BELOW`: Hoeffding)."""
    common = sorted(set(current) & set(baseline))
    differences = np.array([current[q] - baseline[q] for q in common], dtype=np.float64)
    differences = differences[np.isfinite(differences)]
    if differences.size == 0:
        return PairedDrop(0, float("nan"), 1.0, ())
    observed = float(differences.mean())
    if differences.size <= EXACT_LIMIT:
        p_value = _exact_p_value(differences, observed)
    elif level is not None and level < BOUND_BELOW:
        p_value = hoeffding_p_value(differences)
    else:
        p_value = _sequential_p_value(differences, observed, draws)
    ranked = sorted(
        ((q, current[q] - baseline[q]) for q in common if np.isfinite(current[q] - baseline[q])),
        key=lambda item: (item[1], item[0]),
    )
    return PairedDrop(
        queries=int(differences.size),
        mean_difference=observed,
        p_value=min(1.0, p_value),
        worst=tuple((q, d) for q, d in ranked[:worst] if d < 0),
    )


def hoeffding_p_value(differences: np.ndarray) -> float:
    """Hoeffding's bound on P(mean of sign-flipped differences <= the observed mean)."""
    total = float(differences.sum())
    squares = float((differences * differences).sum())
    if total >= 0.0 or squares == 0.0:
        return 1.0
    return float(np.exp(-total * total / (2.0 * squares)))


def _exact_p_value(differences: np.ndarray, observed: float) -> float:
    means = all_flipped_means(differences)
    return int(np.count_nonzero(means <= observed + tie_tolerance(differences))) / means.size


def _sequential_p_value(differences: np.ndarray, observed: float, draws: int) -> float:
    """Monte Carlo p-value with Besag & Clifford's sequential early stop.

    Draws come in chunks; once `STOP_AFTER` flipped means at or below the observed one have
    been seen, the p-value is (that count) / (draws so far). That is Besag & Clifford's
    sequential p-value, valid like the full one, so the level holds wherever it stops. It is
    at least 20 / 4000 = 0.005 with the default draws, so a stop late in the draws can fall
    under a level of 0.01. A window without a drop usually stops after its first chunk, with
    p >= 20 / 256 = 0.08, and costs one chunk instead of all draws.
    """
    limit = observed + tie_tolerance(differences)
    generator = np.random.default_rng(_SEED)
    at_most = drawn = 0
    while drawn < draws:
        rows = min(_CHUNK, draws - drawn)
        means = random_flipped_means(differences, rows, generator)
        at_most += int(np.count_nonzero(means <= limit))
        drawn += rows
        if at_most >= STOP_AFTER:
            return at_most / drawn
    return (1 + at_most) / (1 + drawn)
