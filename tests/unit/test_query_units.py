"""The query as the unit: per-query moments, the fixed set's two intervals and the live
sequence's pooled variance, each held to its promise on a small seeded simulation.

The simulations are small versions of bench/validity.py's; their bounds are alpha plus two
standard errors over the simulated sets or days, as the bench prints them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from monitor.alerting.conditions import Comparison
from monitor.alerting.state import Evidence
from monitor.comparisons import ComparisonConfig, ComparisonEngine, MeasureComparison
from monitor.stats.query_units import UnitMoments, fixed_set_intervals
from monitor.stats.sequence import MixtureSequence, SequenceState
from monitor.windows.summary import Segment, WindowSummary

ALPHA = 0.05
KEY = "ndcg@10:linear"


def bound(rate_alpha: float, trials: int) -> float:
    return rate_alpha + 2.0 * math.sqrt(rate_alpha * (1.0 - rate_alpha) / trials)


def test_moments_merged_equal_moments_added_one_by_one() -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(0.1, 0.2, 40).tolist()
    one_by_one = UnitMoments()
    for value in values:
        one_by_one = one_by_one.add(value)
    left, right = UnitMoments(), UnitMoments()
    for value in values[:15]:
        left = left.add(value)
    for value in values[15:]:
        right = right.add(value)
    merged = left.merge(right)
    assert merged.count == 40
    assert merged.mean == pytest.approx(float(np.mean(values)), abs=1e-15)
    assert merged.m2 / 39 == pytest.approx(float(np.var(values, ddof=1)), rel=1e-12)
    assert one_by_one.m2 == pytest.approx(merged.m2, rel=1e-12)


def test_a_deterministic_replay_has_a_set_interval_of_width_zero_from_its_second_window() -> None:
    differences = {f"q{i}": (-1) ** i * 0.01 * (i % 7) for i in range(300)}
    units: dict[str, UnitMoments] = {}
    widths = []
    for _ in range(4):
        units = {q: units.get(q, UnitMoments()).add(d) for q, d in differences.items()}
        intervals = fixed_set_intervals(units, ALPHA)
        widths.append(intervals.set_upper - intervals.set_lower)
    assert widths[0] == math.inf  # one window: the replay noise is unknown
    assert widths[1:] == [0.0, 0.0, 0.0]
    assert intervals.replay_stderr == 0.0
    # the population interval is the fixed-sample t interval over the 300 queries
    assert intervals.population_upper - intervals.population_lower > 0.0
    assert intervals.population_lower < intervals.estimate < intervals.population_upper


def _replay_false_alarms(noise_ratio: float, sets: int, windows: int, seed: int) -> float:
    """Share of evaluation sets (300 of a 3,000-query universe with no mean difference)
    whose population interval excludes 0 at some window of the day."""
    rng = np.random.default_rng(seed)
    universe = rng.normal(0.0, 0.1, 3000) + rng.exponential(0.05, 3000)
    universe -= universe.mean()
    fired = 0
    for _ in range(sets):
        truth = universe[rng.choice(3000, 300, replace=False)]
        units = [UnitMoments() for _ in truth]
        for _ in range(windows):
            noise = rng.normal(0.0, 0.1 * noise_ratio, truth.size)
            units = [u.add(float(t + e)) for u, t, e in zip(units, truth, noise, strict=True)]
            intervals = fixed_set_intervals(units, ALPHA)
            if not intervals.population_lower <= 0.0 <= intervals.population_upper:
                fired += 1
                break
    return fired / sets


@pytest.mark.parametrize("noise_ratio", [0.0, 1.0])
def test_a_replayed_set_with_no_population_difference_rarely_alarms_over_a_day(
    noise_ratio: float,
) -> None:
    sets = 120
    rate = _replay_false_alarms(noise_ratio, sets=sets, windows=24, seed=7)
    assert rate <= bound(ALPHA, sets)


def test_live_windows_weighted_by_their_own_variance_drift_and_pooled_ones_hold() -> None:
    # 10 lumpy per-query differences a window, no population difference: most queries
    # unchanged, some gain a little, a few lose a lot (a window's spread follows its mean)
    rng = np.random.default_rng(11)
    universe = rng.choice([0.0, 0.1, -0.3], size=3000, p=[0.8, 0.15, 0.05])
    universe -= universe.mean()
    sequence = MixtureSequence(ALPHA)
    days, windows = 60, 288
    pooled_fired = per_window_fired = 0
    for _ in range(days):
        pooled, per_window = SequenceState(), SequenceState()
        for w in range(windows):
            d = universe[rng.integers(0, 3000, 10)]
            pooled = sequence.add_window(pooled, d, start_ms=w, end_ms=w + 1)
            stderr = float(d.std(ddof=1)) / math.sqrt(d.size)
            per_window = sequence.add(per_window, float(d.mean()), stderr, start_ms=w, end_ms=w + 1)
        pooled_fired += pooled.p_value < ALPHA
        per_window_fired += per_window.p_value < ALPHA
    assert pooled_fired / days <= bound(ALPHA, days)
    assert per_window_fired / days > 0.5  # what the pooled variance fixes


def _window(segment: Segment, values: dict[str, float], start_ms: int) -> WindowSummary:
    mean = sum(values.values()) / len(values)
    return WindowSummary(
        window="10s",
        start_ms=start_ms,
        end_ms=start_ms + 10_000,
        segment=segment,
        evaluation_set_version="e1",
        events=len(values),
        queries=len(values),
        evaluation_set_queries=len(values),
        means={KEY: mean},
        sums={KEY: sum(values.values())},
        event_means={KEY: mean},
        query_means={q: {KEY: v} for q, v in values.items()},
    )


V1: Segment = (("model", "v1"),)
V2: Segment = (("model", "v2"),)


def replayed(
    base: dict[str, float], candidate: dict[str, float], windows: int
) -> MeasureComparison:
    """Comparisons "a" (v2 against v1) and "b" (the reverse), a family of two, over the same
    queries replayed `windows` times: "a"'s measure after the last window."""
    engine = ComparisonEngine(
        [
            ComparisonConfig("a", baseline=V1, candidate=V2, measures=(KEY,)),
            ComparisonConfig("b", baseline=V2, candidate=V1, measures=(KEY,)),
        ]
    )
    for start in range(0, windows * 10_000, 10_000):
        records = engine.observe(
            [(_window(V1, base, start), None), (_window(V2, candidate, start), None)]
        )
    return records[0].measures[0]


def test_the_engine_judges_a_replay_by_query_and_names_its_design_and_family() -> None:
    rng = np.random.default_rng(3)
    base = {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0.2, 0.8, 100))}
    cand = {q: v + 0.02 * (i % 3 - 1) for i, (q, v) in enumerate(base.items())}
    measure = replayed(base, cand, windows=4)
    assert measure.design == "replay"  # the same 100 queries every window
    assert measure.family == 2
    assert measure.set_lower == measure.set_upper == pytest.approx(measure.result.delta)
    assert measure.population_lower < measure.result.delta < measure.population_upper
    # the alerts' interval is the family's: wider than the comparison's own
    lower, upper = measure.decision("population")
    assert lower < measure.population_lower and upper > measure.population_upper
    assert measure.min_detectable > 0.0


def test_the_comparison_alert_says_its_population_family_and_what_the_queries_can_show() -> None:
    rng = np.random.default_rng(9)
    base = {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0.2, 0.8, 300))}
    worse = {q: v - (0.3 if i < 30 else 0.0) for i, (q, v) in enumerate(base.items())}
    measure = replayed(base, worse, windows=2)
    verdict = Comparison("a", "worse", 0.0).judge(measure)
    assert verdict.evidence is Evidence.BAD
    assert "in the population of queries (replay design)" in verdict.note
    assert "level 0.05/2 (Bonferroni over 2 comparison measures)" in verdict.note
    assert "300 queries can show differences of 0.0" in verdict.note
    on_set = Comparison("a", "worse", 0.0, scope="set").judge(measure)
    assert "on the queries compared" in on_set.note


def test_the_live_sequence_pools_the_third_moment_of_its_differences_exactly() -> None:
    rng = np.random.default_rng(11)
    windows = [rng.exponential(0.1, int(n)) - 0.05 for n in rng.integers(1, 30, 40)]
    state = SequenceState()
    for index, window in enumerate(windows):
        state = MixtureSequence(0.05).add_window(state, window, start_ms=index, end_ms=index + 1)
    every = np.concatenate(windows)
    assert state.pooled_count == every.size
    assert state.pooled_m3 == pytest.approx(float(((every - every.mean()) ** 3).sum()), rel=1e-9)
    skew = float(((every - every.mean()) ** 3).mean() / every.var() ** 1.5)
    assert state.pooled_skewness == pytest.approx(skew, rel=1e-9)


def test_live_differences_from_a_skewed_population_wait_until_their_sum_is_near_normal() -> None:
    # Most queries gain a little, 6 % lose a lot: skewness about -3.5. A sum of n of them has
    # skewness -3.5 / sqrt(n); the sequence takes no window before it is 0.15 (~540).
    rng = np.random.default_rng(5)
    low = rng.random(3_000) < 0.06
    values = np.where(low, rng.uniform(-1.0, -0.6, 3_000), rng.normal(0.05, 0.03, 3_000))
    state, sequence, first = SequenceState(), MixtureSequence(0.05), None
    for index in range(200):
        d = values[rng.integers(0, 3_000, 10)]
        state = sequence.add_window(state, d, start_ms=index, end_ms=index + 1)
        if first is None and state.windows:
            first = state.pooled_count
    assert first is not None
    assert first >= (abs(state.pooled_skewness) / 0.15) ** 2 * 0.8  # its estimate moves
    assert first > 10 * 50  # far past the plain burn-in of 50
