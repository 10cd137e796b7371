"""The paired sign-flip test: exact on hand-derived cases, calibrated on simulated streams."""

from __future__ import annotations

import pytest

from monitor.alerting.conditions import WindowTrack, evaluate_window
from monitor.alerting.paired_test import paired_drop_test
from monitor.alerting.rules import AlertRule, Drop
from monitor.alerting.simulation import StreamModel, simulate_windows
from monitor.alerting.state import Evidence


def test_three_equal_drops_give_the_exact_p_value_one_eighth() -> None:
    # 2^3 sign patterns; only all-negative reaches a mean of -0.1.
    result = paired_drop_test({"a": 0.4, "b": 0.5, "c": 0.6}, {"a": 0.5, "b": 0.6, "c": 0.7})
    assert result.queries == 3
    assert result.mean_difference == pytest.approx(-0.1)
    assert result.p_value == pytest.approx(1 / 8)


def test_mixed_differences_count_every_pattern_at_least_as_low() -> None:
    # d = (-0.2, -0.1, +0.05), sum -0.25. Sign patterns with sum <= -0.25:
    # (-,-,-) = -0.35 and (-,-,+) = -0.25: p = 2/8.
    current = {"a": 0.3, "b": 0.4, "c": 0.55}
    result = paired_drop_test(current, {"a": 0.5, "b": 0.5, "c": 0.5})
    assert result.p_value == pytest.approx(2 / 8)
    assert [query for query, _ in result.worst] == ["a", "b"]
    assert [difference for _, difference in result.worst] == pytest.approx([-0.2, -0.1])


def test_only_common_queries_are_paired() -> None:
    result = paired_drop_test({"a": 0.1, "new": 0.0}, {"a": 0.2, "gone": 1.0})
    assert result.queries == 1
    assert result.p_value == pytest.approx(1 / 2)


def test_no_change_is_not_significant() -> None:
    values = {f"q{i}": i / 100 for i in range(100)}
    assert paired_drop_test(values, values).p_value == 1.0


def test_a_rise_is_not_a_drop() -> None:
    base = {f"q{i}": 0.5 for i in range(50)}
    higher = {q: 0.6 for q in base}
    assert paired_drop_test(higher, base).p_value > 0.99


def test_many_queries_use_seeded_draws_so_a_window_always_gets_the_same_p_value() -> None:
    base = {f"q{i}": 0.5 + (i % 7) / 20 for i in range(200)}
    current = {q: v - (0.02 if i % 3 else -0.01) for i, (q, v) in enumerate(base.items())}
    assert paired_drop_test(current, base).p_value == paired_drop_test(current, base).p_value


def drop_rule(significance: float) -> AlertRule:
    condition = Drop(0.0, None, 12, significance, 20, None)
    return AlertRule("drop", 0, "warning", "ndcg@10:linear", condition, None, 1, 0, None)


def bad_windows(
    model: StreamModel,
    rule: AlertRule,
    windows: int,
    seed: int,
    *,
    drop_at: int | None = None,
    drop: float = 0.0,
) -> list[bool]:
    """The evidence of each evaluated window, as the engine would feed it."""
    track = WindowTrack.for_rule(rule)
    verdicts = []
    for summary in simulate_windows(model, windows, seed=seed, drop_at=drop_at, drop=drop):
        verdict = evaluate_window(rule, summary, track)
        track.remember(rule.measure, summary)
        if verdict.evidence is not Evidence.UNKNOWN:
            verdicts.append(verdict.evidence is Evidence.BAD)
    return verdicts


def test_false_alarm_rate_on_a_stable_stream_stays_near_the_level() -> None:
    # 4 streams x 50 windows at level 0.1: about 190 tests, expect <= 19 false alarms; the
    # loose bound 1.5x leaves room for chance in this small fixed-seed run
    # (bench/alerts.py measures the rate on thousands of windows).
    model = StreamModel(queries=60, events_per_query=1.5)
    rule = drop_rule(0.1)
    verdicts = [v for seed in range(4) for v in bad_windows(model, rule, 50, seed)]
    assert len(verdicts) > 150
    assert sum(verdicts) / len(verdicts) <= 0.15


def test_a_ten_percent_drop_of_every_query_is_detected_in_its_first_window() -> None:
    model = StreamModel(queries=60, events_per_query=1.5)
    verdicts = bad_windows(model, drop_rule(0.01), 20, seed=7, drop_at=15, drop=0.10)
    # Windows 0-2 build the baseline; evaluated windows start at 3, so index 15 is 12th.
    assert verdicts[15 - 3] is True


def test_a_clear_drop_over_many_queries_gets_the_smallest_monte_carlo_p_value() -> None:
    base = {f"q{i}": 0.5 + (i % 10) / 50 for i in range(100)}
    current = {q: v - 0.05 - (i % 3) / 100 for i, (q, v) in enumerate(base.items())}
    assert paired_drop_test(current, base, draws=1000).p_value == pytest.approx(1 / 1001)


def test_a_window_without_a_drop_stops_early_with_a_large_p_value() -> None:
    base = {f"q{i}": 0.5 for i in range(300)}
    current = {q: 0.5 + (0.01 if i % 2 else -0.01) for i, q in enumerate(base)}
    # Symmetric differences: about half the flips are at or below; the first chunk suffices.
    assert paired_drop_test(current, base).p_value > 0.3
