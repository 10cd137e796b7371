"""The comparison statistics agree with scipy.stats: exactly where the statistic is
deterministic, within Monte Carlo error where it resamples."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from monitor.stats import adjust_p_values, paired_comparison, t_cdf, t_ppf, t_sf
from monitor.stats.sequence import MixtureSequence, SequenceState

scores = st.floats(0.0, 1.0, allow_nan=False, width=64)


def pairs(min_size: int, max_size: int) -> st.SearchStrategy[tuple[list[float], list[float]]]:
    return st.integers(min_size, max_size).flatmap(
        lambda n: st.tuples(
            st.lists(scores, min_size=n, max_size=n), st.lists(scores, min_size=n, max_size=n)
        )
    )


def spread(d: np.ndarray) -> bool:
    return bool(np.std(d) > 1e-6)


@settings(max_examples=200, deadline=None)
@given(st.floats(-60, 60), st.floats(0.3, 5000))
def test_the_t_distribution_matches_scipy_to_1e_12(t: float, dof: float) -> None:
    assert t_cdf(t, dof) == pytest.approx(stats.t.cdf(t, dof), rel=1e-9, abs=1e-13)
    assert t_sf(t, dof) == pytest.approx(stats.t.sf(t, dof), rel=1e-9, abs=1e-13)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-6, 1 - 1e-6), st.floats(0.5, 5000))
def test_t_quantiles_match_scipy_within_1e_9(p: float, dof: float) -> None:
    assert t_ppf(p, dof) == pytest.approx(stats.t.ppf(p, dof), rel=1e-9, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(pairs(2, 400))
def test_the_t_interval_and_p_value_match_ttest_rel(data: tuple[list[float], list[float]]) -> None:
    baseline, candidate = (np.array(x) for x in data)
    d = candidate - baseline
    if not spread(d):
        return
    ours = paired_comparison(d, test="t", confidence=0.95)
    theirs = stats.ttest_rel(candidate, baseline)
    low, high = theirs.confidence_interval(0.95)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-12)
    assert ours.ci_lower == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert ours.ci_upper == pytest.approx(high, rel=1e-9, abs=1e-12)
    assert ours.delta == pytest.approx(float(np.mean(d)), abs=1e-12)
    assert ours.effect_size == pytest.approx(np.mean(d) / np.std(d, ddof=1), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(pairs(2, 12))
@example(([0.0, 0.0, 0.0], [0.0, 1.0, 1e-12]))  # a difference of 1e-12 is not a tie
@example(([1.0, 1e-15], [0.5, 0.0]))  # one of 1e-15 beside 0.25 is (100 ulps, as scipy's)
def test_the_exact_permutation_p_value_matches_scipy_enumeration(
    data: tuple[list[float], list[float]],
) -> None:
    baseline, candidate = (np.array(x) for x in data)
    d = candidate - baseline
    ours = paired_comparison(d, test="permutation")
    theirs = stats.permutation_test(
        (candidate, baseline),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=math.inf,
    )
    assert ours.p_value == pytest.approx(theirs.pvalue, abs=1e-9)


def test_an_exact_permutation_p_value_enumerated_by_hand() -> None:
    # 5 differences: 32 sign patterns. Observed mean 0.32 / 5 = 0.064.
    d = np.array([0.10, 0.08, 0.06, 0.12, -0.04])
    observed = d.mean()
    at_least = at_most = 0
    for signs in itertools.product((-1, 1), repeat=5):
        flipped = float(np.dot(signs, d)) / 5
        at_least += flipped >= observed - 1e-15
        at_most += flipped <= observed + 1e-15
    # patterns whose mean is >= 0.064: all + (0.064), and the one with only 0.04's sign
    # flipped to + ... counted by hand: {+,+,+,+,-}, {+,+,+,+,+}
    assert at_least == 2
    expected = min(1.0, 2 * min(at_least, at_most) / 32)
    assert expected == 0.125
    assert paired_comparison(d, test="permutation").p_value == expected


# Monte Carlo on both sides: the same examples every run, so a 3-error bound cannot flake.
@settings(max_examples=8, deadline=None, derandomize=True)
@given(pairs(20, 200))
def test_the_random_sign_flip_p_value_is_within_three_monte_carlo_errors_of_scipy(
    data: tuple[list[float], list[float]],
) -> None:
    baseline, candidate = (np.array(x) for x in data)
    d = candidate - baseline
    draws, reference = 9999, 99_999  # scipy with 10x the draws: close to the true p-value
    ours = paired_comparison(d, test="permutation", draws=draws)
    theirs = stats.permutation_test(
        (candidate, baseline),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=reference,
        vectorized=True,
        rng=np.random.default_rng(1),
    )
    p = max(theirs.pvalue, ours.p_value, 1 / draws)
    # each p is 2 x a binomial share q = p / 2: standard error 2 sqrt(q (1 - q) / draws)
    q = min(p / 2, 0.5)
    error = 2 * math.sqrt(q * (1 - q) * (1 / draws + 1 / reference))
    assert abs(ours.p_value - theirs.pvalue) <= 3 * error + 2 / draws


# Monte Carlo on both sides: the same examples every run, so a 3-error bound cannot flake.
@settings(max_examples=15, deadline=None, derandomize=True)
@given(pairs(20, 200))
def test_the_bootstrap_interval_is_within_three_monte_carlo_errors_of_scipy(
    data: tuple[list[float], list[float]],
) -> None:
    baseline, candidate = (np.array(x) for x in data)
    d = candidate - baseline
    if not spread(d):
        return
    draws = 9999
    ours = paired_comparison(d, test="bootstrap", draws=draws)
    theirs = stats.bootstrap(
        (d,), np.mean, n_resamples=draws, method="percentile", rng=np.random.default_rng(2)
    ).confidence_interval
    # A 2.5 % quantile of B draws has standard error sqrt(q (1 - q) / B) / f(x_q); for the
    # near-normal mean of >= 20 values, f(x_q) = phi(1.96) / se.
    se = float(np.std(d, ddof=1) / math.sqrt(d.size))
    quantile_error = math.sqrt(0.025 * 0.975 / draws) / stats.norm.pdf(1.96) * se
    for mine, scipys in ((ours.ci_lower, theirs.low), (ours.ci_upper, theirs.high)):
        assert abs(mine - scipys) <= 3 * math.sqrt(2) * quantile_error * 1.5


def test_holm_and_bonferroni_match_their_definitions() -> None:
    p = [0.01, 0.04, 0.03, 0.005, math.nan]
    assert adjust_p_values(p, "bonferroni")[:4] == pytest.approx([0.04, 0.16, 0.12, 0.02])
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, running max
    assert adjust_p_values(p, "holm")[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(adjust_p_values(p, "holm")[4])
    assert adjust_p_values(p, "none")[:4] == p[:4]


def test_the_confidence_sequence_holds_the_known_closed_form() -> None:
    sequence = MixtureSequence(alpha=0.05, tau=0.02)
    state = SequenceState()
    for start, (x, s) in enumerate([(0.01, 0.01), (0.03, 0.02), (0.02, 0.01)]):
        state = sequence.add(state, x, s, start_ms=start * 10, end_ms=start * 10 + 10)
    precision = 1 / 0.01**2 + 1 / 0.02**2 + 1 / 0.01**2
    centre = (0.01 / 0.01**2 + 0.03 / 0.02**2 + 0.02 / 0.01**2) / precision
    v = 0.02**2 * precision
    radius = math.sqrt(2 * (1 + v) / (0.02**2 * precision**2) * math.log(math.sqrt(1 + v) / 0.05))
    low, high = sequence.interval(state)
    assert (low, high) == pytest.approx((centre - radius, centre + radius), rel=1e-12)
    # zero lies outside exactly when the mixture likelihood ratio at 0 passes 1 / alpha
    assert (low > 0) == (sequence.p_value(state) <= 0.05)


def test_the_confidence_sequence_skips_windows_that_overlap_the_last_one() -> None:
    sequence = MixtureSequence(alpha=0.05)
    state = sequence.add(SequenceState(), 0.01, 0.01, start_ms=0, end_ms=100)
    assert sequence.add(state, 0.5, 0.01, start_ms=50, end_ms=150) == state
    assert sequence.add(state, 0.5, 0.01, start_ms=100, end_ms=200).windows == 2
