"""Each condition on hand-made windows: the edges of below, drop, coverage and judged."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from monitor.alerting.conditions import (
    Below,
    Condition,
    Coverage,
    Drop,
    Judged,
    ReplayErrors,
    Stderr,
    WindowTrack,
    evaluate_window,
)
from monitor.alerting.rules import AlertRule
from monitor.alerting.state import Evidence
from monitor.windows.summary import WindowSummary

NDCG = "ndcg@10:linear"


def rule(condition: Condition, measure: str = NDCG) -> AlertRule:
    return AlertRule("r", 0, "warning", measure, condition, None, 1, 0, None)


def window(index: int, values: dict[str, float], *, judged: float = 1.0) -> WindowSummary:
    """A window whose queries score `values`; the headline is their mean."""
    mean = sum(values.values()) / len(values) if values else math.nan
    return WindowSummary(
        window="5m",
        start_ms=index * 300_000,
        end_ms=(index + 1) * 300_000,
        segment=(),
        evaluation_set_version="v1",
        events=len(values),
        queries=len(values),
        evaluation_set_queries=40,
        means={NDCG: mean, "judged@10": judged},
        sums={NDCG: sum(values.values())},
        event_means={NDCG: mean},
        query_means={q: {NDCG: v} for q, v in values.items()},
    )


def flat(value: float, queries: int = 30) -> dict[str, float]:
    return {f"q{i}": value for i in range(queries)}


def test_below_is_strict_at_the_threshold() -> None:
    below = rule(Below(0.5))
    track = WindowTrack.for_rule(below)
    assert evaluate_window(below, window(0, flat(0.5)), track).evidence is Evidence.GOOD
    assert evaluate_window(below, window(1, flat(0.49)), track).evidence is Evidence.BAD


def test_below_on_a_window_without_the_measure_is_unknown() -> None:
    below = rule(Below(0.5), measure="precision@5")
    verdict = evaluate_window(below, window(0, flat(0.1)), WindowTrack.for_rule(below))
    assert verdict.evidence is Evidence.UNKNOWN


def feed(drop: AlertRule, track: WindowTrack, windows: list[WindowSummary]) -> list[Evidence]:
    """Evaluate each window, then let it into the baseline as the engine does."""
    evidence = []
    for summary in windows:
        verdict = evaluate_window(drop, summary, track)
        track.remember(drop, summary)
        evidence.append(verdict.evidence)
    return evidence


def spread(center: float, queries: int = 30) -> dict[str, float]:
    """Per-query values around `center` (so the queries differ, as real ones do)."""
    return {f"q{i}": center + (i % 5 - 2) / 100 for i in range(queries)}


def test_drop_needs_three_baseline_windows() -> None:
    drop = rule(Drop(0.05, None, 12, 0.01, 10, None))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(0, spread(0.6)), window(1, spread(0.6))])
    verdict = evaluate_window(drop, window(2, spread(0.3)), track)
    assert verdict.evidence is Evidence.UNKNOWN
    assert "not enough baseline" in verdict.note


def test_drop_fires_on_a_large_significant_drop_with_its_worst_queries() -> None:
    drop = rule(Drop(0.05, None, 12, 0.01, 10, None))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, spread(0.6)) for i in range(3)])
    current = spread(0.5)
    current["q7"] = 0.1
    verdict = evaluate_window(drop, window(3, current), track)
    assert verdict.evidence is Evidence.BAD
    assert verdict.baseline == pytest.approx(0.6)
    assert verdict.p_value is not None and verdict.p_value < 0.01
    assert verdict.worst[0][0] == "q7"


def test_a_significant_drop_smaller_than_the_configured_size_does_not_fire() -> None:
    # Every query 2% lower: the paired test is sure, but 2% < relative 5%.
    drop = rule(Drop(0.05, None, 12, 0.01, 10, None))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, spread(0.6)) for i in range(3)])
    verdict = evaluate_window(drop, window(3, spread(0.588)), track)
    assert verdict.evidence is Evidence.GOOD
    assert verdict.p_value is not None and verdict.p_value < 0.01


def test_a_large_drop_of_a_few_queries_is_not_significant() -> None:
    # Headline down 6.7% because 2 of 30 queries collapsed; 28 are unchanged: p = 0.25.
    drop = rule(Drop(0.05, None, 12, 0.01, 10, None))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, flat(0.6)) for i in range(3)])
    current = flat(0.6)
    current["q0"] = current["q1"] = 0.0
    verdict = evaluate_window(drop, window(3, current), track)
    assert verdict.value < 0.95 * 0.6
    assert verdict.evidence is Evidence.GOOD
    assert verdict.p_value is not None and verdict.p_value > 0.01


def test_drop_with_too_few_common_queries_is_unknown() -> None:
    drop = rule(Drop(0.05, None, 12, 0.01, 30, None))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, spread(0.6, queries=20)) for i in range(3)])
    verdict = evaluate_window(drop, window(3, spread(0.3, queries=20)), track)
    assert verdict.evidence is Evidence.UNKNOWN
    assert "only 20 queries in common" in verdict.note


def test_a_pinned_baseline_replaces_the_trailing_median() -> None:
    drop = rule(Drop(None, 0.05, 12, 0.01, 10, pinned=0.7))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, spread(0.72)) for i in range(3)])
    # the floor is 0.7 - 0.05: 0.66 is above it (the trailing median 0.72 would make it
    # 0.67, and 0.66 bad), 0.64 under it with every query 0.08 below its own baseline
    above = evaluate_window(drop, window(3, spread(0.66)), track)
    assert above.baseline == 0.7 and above.evidence is Evidence.GOOD
    verdict = evaluate_window(drop, window(4, spread(0.64)), track)
    assert verdict.evidence is Evidence.BAD


def test_an_absolute_drop_is_measured_from_the_trailing_median() -> None:
    # Baseline windows at 0.6, 0.6 and 0.9: median 0.6 (the mean would be 0.7), floor 0.55.
    drop = rule(Drop(None, 0.05, 12, 0.01, 10, None))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(0, spread(0.6)), window(1, spread(0.6)), window(2, spread(0.9))])
    above = evaluate_window(drop, window(3, spread(0.56)), track)
    under = evaluate_window(drop, window(4, spread(0.54)), track)
    assert above.baseline == under.baseline == pytest.approx(0.6)
    # Both are significant drops from each query's mean; only 0.54 is more than 0.05 down.
    assert above.p_value is not None and above.p_value < 0.01
    assert above.evidence is Evidence.GOOD
    assert under.evidence is Evidence.BAD


def test_a_pinned_drop_rule_keeps_a_lasting_drop_out_of_its_baseline() -> None:
    # Every query 0.7 -> 0.6 for 20 windows: under the pinned level, so none of them enters;
    # each window is judged against the values from before the drop, so each stays bad.
    drop = rule(Drop(None, 0.05, 4, 0.01, 10, pinned=0.7))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, flat(0.7)) for i in range(3)])
    evidence = feed(drop, track, [window(i, flat(0.6)) for i in range(3, 23)])
    assert evidence == [Evidence.BAD] * 20
    assert track.history is not None and len(track.history) == 3
    assert track.history.query_means() == pytest.approx(flat(0.7))
    # Quality back: good, and windows enter again.
    assert feed(drop, track, [window(23, flat(0.7))]) == [Evidence.GOOD]
    assert len(track.history) == 4


def test_a_slow_slide_under_a_pin_stays_bad_because_the_reference_does_not_follow_it() -> None:
    # One more query of 30 loses 0.3 each window, for good: the windows above the pin enter, the
    # slide's windows do not, and once it is past the floor every window is bad.
    drop = rule(Drop(None, 0.05, 12, 0.05, 10, pinned=0.7))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, flat(0.7)) for i in range(3)])
    values = flat(0.7)
    evidence = []
    for i in range(3, 25):
        values = dict(values)
        values[f"q{i - 3}"] = 0.4
        evidence += feed(drop, track, [window(i, values)])
    past_floor = [e for i, e in enumerate(evidence) if (i + 1) * 0.01 > 0.05 + 1e-9]
    assert past_floor and set(past_floor) == {Evidence.BAD}
    assert track.history is not None and len(track.history) == 3


def test_a_trailing_drop_rule_takes_a_lasting_drop_in_as_the_new_normal() -> None:
    # The same drop against the trailing median of 4 windows: bad windows enter, the median
    # follows after 2 of them, and the drop is no longer one.
    drop = rule(Drop(None, 0.05, 4, 0.01, 10, None))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, flat(0.7)) for i in range(3)])
    evidence = feed(drop, track, [window(i, flat(0.6)) for i in range(3, 8)])
    assert evidence == [Evidence.BAD] * 2 + [Evidence.GOOD] * 3


def test_a_window_under_the_pinned_level_never_enters_its_baseline() -> None:
    drop = rule(Drop(None, 0.05, 12, 0.01, 10, pinned=0.7))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, spread(0.7)) for i in range(3)])
    assert feed(drop, track, [window(3, spread(0.6))]) == [Evidence.BAD]
    assert feed(drop, track, [window(4, spread(0.69))]) == [Evidence.GOOD]
    assert track.history is not None and len(track.history) == 3  # neither entered
    assert feed(drop, track, [window(5, spread(0.71))]) == [Evidence.GOOD]
    assert len(track.history) == 4


def test_a_pinned_rule_without_a_window_at_its_level_says_so() -> None:
    drop = rule(Drop(None, 0.05, 12, 0.01, 10, pinned=0.8))
    track = WindowTrack.for_rule(drop)
    feed(drop, track, [window(i, flat(0.7)) for i in range(5)])
    verdict = evaluate_window(drop, window(5, flat(0.7)), track)
    assert verdict.evidence is Evidence.UNKNOWN
    assert "at or above the pinned level 0.8" in verdict.note


def test_coverage_counts_queries_seen_against_the_evaluation_set() -> None:
    coverage = rule(Coverage(0.5), measure="coverage")
    track = WindowTrack.for_rule(coverage)
    low = evaluate_window(coverage, window(0, flat(0.9, queries=19)), track)
    enough = evaluate_window(coverage, window(1, flat(0.9, queries=20)), track)
    assert (low.evidence, low.value) == (Evidence.BAD, 19 / 40)
    assert "untrustworthy" in low.note
    assert enough.evidence is Evidence.GOOD


def test_replay_errors_is_bad_past_its_share_of_the_queries_asked_and_good_on_live_traffic() -> (
    None
):
    errors = rule(ReplayErrors(0.05), measure="replay_errors")
    track = WindowTrack.for_rule(errors)
    failing = replace(window(0, flat(0.9, queries=36)), failed_queries=4)  # 4 of 40 asked
    tolerated = replace(window(1, flat(0.9, queries=38)), failed_queries=2)  # exactly 5 %
    bad = evaluate_window(errors, failing, track)
    assert (bad.evidence, bad.value, bad.baseline) == (Evidence.BAD, 0.1, 0.05)
    assert "failed 4 of the 40 queries" in bad.note
    assert evaluate_window(errors, tolerated, track).evidence is Evidence.GOOD
    live = evaluate_window(errors, window(2, flat(0.9, queries=5)), track)
    assert (live.evidence, live.value) == (Evidence.GOOD, 0.0)


def test_judged_share_under_the_minimum_is_bad() -> None:
    judged = rule(Judged(10, 0.8), measure="judged@10")
    track = WindowTrack.for_rule(judged)
    assert evaluate_window(judged, window(0, flat(0.9), judged=0.75), track).evidence is (
        Evidence.BAD
    )
    assert evaluate_window(judged, window(1, flat(0.9), judged=0.8), track).evidence is (
        Evidence.GOOD
    )


def test_stderr_is_bad_when_the_windows_mean_is_more_uncertain_than_its_max() -> None:
    uncertain = rule(Stderr(0.05))
    track = WindowTrack.for_rule(uncertain)
    # 20 queries at 0 and 20 at 1: standard error sqrt(0.25 * 40 / 39 / 40) = 0.0801
    wild = {f"q{i}": float(i % 2) for i in range(40)}
    calm = {f"q{i}": 0.4 + 0.2 * (i % 2) for i in range(40)}  # 0.0160
    bad = evaluate_window(uncertain, window(0, wild), track)
    good = evaluate_window(uncertain, window(1, calm), track)
    assert (bad.evidence, good.evidence) == (Evidence.BAD, Evidence.GOOD)
    assert bad.value == pytest.approx(math.sqrt(0.25 * 40 / 39 / 40))
    assert bad.baseline == 0.05
    assert "standard error of 0.0801 over 40 queries (about +-0.1569 at 95 %)" in bad.note


def test_stderr_of_a_window_with_one_query_is_unknown() -> None:
    uncertain = rule(Stderr(0.05))
    verdict = evaluate_window(uncertain, window(0, flat(0.5, queries=1)), WindowTrack())
    assert verdict.evidence is Evidence.UNKNOWN
    assert "fewer than 2 queries" in verdict.note
