"""A false-page budget for the drop rules, a test that can reach its levels, and trust rules
that do not page on one stray old record."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

from monitor.alerting import AlertEngine
from monitor.alerting.conditions import Drop, WindowTrack, evaluate_window
from monitor.alerting.paired_test import hoeffding_p_value
from monitor.alerting.rules import AlertRule
from monitor.alerting.state import Evidence
from monitor.config.alerts import parse_alerting_config
from monitor.testing.alert_simulation import StreamModel, simulate_windows
from monitor.windows.summary import WindowSummary

NDCG = "ndcg@10:linear"


@pytest.mark.parametrize("seed", range(5))
def test_the_hoeffding_bound_is_never_under_the_exact_sign_flip_p_value(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = np.round(rng.normal(-0.05, 0.1, 10), 3)
    flips = np.array(list(product((-1.0, 1.0), repeat=d.size)))
    exact = float(np.mean(flips @ d <= d.sum() + 1e-12))
    assert hoeffding_p_value(d) >= exact


def test_a_budget_sets_each_rule_segments_level_from_the_windows_a_day() -> None:
    rule = {"name": "drop", "measure": "ndcg@10", "drop": {"relative": 0.05}}
    config = parse_alerting_config(
        {"rules": [rule, {**rule, "name": "drop2"}], "false_pages_per_day": 0.1, "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=["model"],
        window="5m",
    )
    assert config.windows_per_day == 288
    assert config.window_level(2 * 10) == pytest.approx(0.1 / (20 * 288))
    unbudgeted = parse_alerting_config(
        {"rules": [rule], "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=["model"],
        window="5m",
    )
    assert unbudgeted.window_level(20) is None


def _false_pages_per_day(level: float | None, days: int, streams: int) -> float:
    """Bad windows a day over `streams` stable hourly streams (the size gate out of play:
    relative 0, so the paired test alone decides), significance 0.01 unless `level`."""
    model = StreamModel(queries=60, events_per_query=1.5, window="1h", window_ms=3_600_000)
    rule = AlertRule(
        "drop", 0, "warning", NDCG, Drop(0.0, None, 12, 0.01, 20, None), None, 1, 0, None
    )
    bad = 0
    for seed in range(streams):
        track = WindowTrack.for_rule(rule)
        for summary in simulate_windows(model, 24 * days, seed=seed):
            verdict = evaluate_window(rule, summary, track, level=level)
            track.remember(rule, summary)
            bad += verdict.evidence is Evidence.BAD
    return bad / days


def test_a_budget_of_false_pages_a_day_holds_over_many_rule_segments() -> None:
    # 8 rule-segments of hourly windows share 0.15 false pages a day: level 0.15 / 192,
    # under what 4,000 random sign flips can show, so the bound decides
    days, streams, budget = 12, 8, 0.15
    level = budget / (streams * 24)
    assert level < 1e-3
    pages = _false_pages_per_day(level, days, streams)
    print(f"budget {budget}: {pages:.3f} false pages a day")
    assert pages <= budget + 2 * math.sqrt(budget / days)
    # each rule at its own significance (0.01) pages every day
    unbudgeted = _false_pages_per_day(None, days, streams)
    print(f"significance 0.01 each: {unbudgeted:.3f} false pages a day")
    assert unbudgeted > 1.0


def _window(start_ms: int, queries: int) -> WindowSummary:
    return WindowSummary(
        window="5m",
        start_ms=start_ms,
        end_ms=start_ms + 300_000,
        segment=(),
        evaluation_set_version="v1",
        events=queries,
        queries=queries,
        evaluation_set_queries=300,
        means={NDCG: 0.7},
        sums={NDCG: 0.7 * queries},
        event_means={NDCG: 0.7},
        query_means={f"q{i}": {NDCG: 0.7} for i in range(queries)},
    )


def test_a_stray_old_record_does_not_fire_coverage_but_a_live_thin_window_does() -> None:
    config = parse_alerting_config(
        {"rules": [{"name": "search-coverage", "coverage": {"min": 0.5}}], "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=[],
        window="5m",
    )
    started = 1_700_000_000_000
    engine = AlertEngine(config, start_ms=started)
    # a 10-minute-old event: a 1-query window that ended before rankmon started
    engine.observe([_window(started - 600_000, 1)], started)
    assert evidence(engine) == (Evidence.UNKNOWN, True)
    # a thin window rankmon watched live is an outage it pages for
    engine.observe([_window(started, 1)], started + 300_000)
    assert evidence(engine) == (Evidence.BAD, False)


def evidence(engine: AlertEngine) -> tuple[Evidence, bool]:
    """The coverage alert's evidence, and whether its note blames a stray old record."""
    alert = engine.find("search-coverage", ())
    assert alert is not None and alert.verdict is not None
    return alert.verdict.evidence, "stray old record" in alert.verdict.note
