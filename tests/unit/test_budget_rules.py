"""One false-page budget for every paging rule: each budgeted rule-segment gets an even share
of `alerts.false_pages_per_day`, and each kind of condition spends it its own way (a level a
window, a run length, a sequence's level, a judge's looks)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from monitor.alerting import AlertEngine
from monitor.alerting.conditions import Comparison, Judge, Stderr
from monitor.alerting.state import Evidence
from monitor.comparisons.record import MeasureComparison
from monitor.config.alerts import parse_alerting_config
from monitor.stats.judges import JudgeReading
from monitor.stats.paired import PairedResult
from monitor.stats.query_units import UnitMoments
from monitor.stats.spread import SpreadMoments
from monitor.windows.summary import Segment, WindowSummary

NDCG = "ndcg@10:linear"
T0 = 1_700_000_000_000
WINDOW_MS = 300_000


def config(*rules: dict[str, Any], budget: float | None = 0.5, judging: bool = False) -> Any:
    raw: dict[str, Any] = {"rules": list(rules), "log": False}
    if budget is not None:
        raw["false_pages_per_day"] = budget
    return parse_alerting_config(
        raw, cutoffs=[10], gains=["linear"], segment_keys=["model"], window="5m", judging=judging
    )


def window(index: int, values: list[float], segment: Segment = (("model", "v1"),)) -> WindowSummary:
    mean = sum(values) / len(values)
    return WindowSummary(
        window="5m",
        start_ms=T0 + index * WINDOW_MS,
        end_ms=T0 + (index + 1) * WINDOW_MS,
        segment=segment,
        evaluation_set_version="v1",
        events=len(values),
        queries=len(values),
        evaluation_set_queries=len(values),
        means={NDCG: mean},
        sums={NDCG: sum(values)},
        event_means={NDCG: mean},
        query_means={f"q{i}": {NDCG: v} for i, v in enumerate(values)},
    )


def spread(mean: float, sd: float, n: int = 100) -> list[float]:
    """`n` values of exactly this mean and (population) standard deviation."""
    return [mean + sd * (-1) ** i for i in range(n)]


def note(engine: AlertEngine, rule: str, segment: Segment = (("model", "v1"),)) -> tuple[str, str]:
    alert = engine.find(rule, segment)
    assert alert is not None and alert.verdict is not None
    return alert.verdict.evidence.value, alert.verdict.note


BELOW = {"name": "floor", "measure": "ndcg@10", "severity": "critical", "below": 0.6}


def test_every_paging_rule_on_every_segment_shares_the_budget_and_notifications_do_not() -> None:
    drop = {"name": "drop", "measure": "ndcg@10", "drop": {"relative": 0.05}}
    info = {**BELOW, "name": "note", "severity": "info"}
    engine = AlertEngine(config(BELOW, drop, info), start_ms=T0)
    v2 = (("model", "v2"),)
    for segment in ((("model", "v1"),), v2):
        engine.observe([window(0, spread(0.5, 0.3), segment)], T0 + WINDOW_MS)
    # 2 paging rules x 2 segments: each 0.5 / 4 false pages a day, over 288 windows
    level = 0.5 / 4 / 288
    assert f"level {level:.2g} a window" in note(engine, "floor", v2)[1]
    assert engine.config.window_level(4) == pytest.approx(level)
    # the info rule is not in the budget: the plain floor
    assert note(engine, "note", v2) == ("bad", "")


def test_under_the_budget_a_floor_pages_only_past_its_noise() -> None:
    engine = AlertEngine(config(BELOW), start_ms=T0)
    level = 0.5 / 288
    # 100 queries of sd 0.3: standard error 0.03; the t quantile at level 0.0017 is ~3.0
    engine.observe([window(0, spread(0.55, 0.3))], T0 + WINDOW_MS)
    evidence, said = note(engine, "floor")
    assert evidence == "good" and "under 0.6 by 1.7 standard errors" in said
    engine.observe([window(1, spread(0.45, 0.3))], T0 + 2 * WINDOW_MS)
    assert note(engine, "floor")[0] == "bad"
    assert f"level {level:.2g}" in note(engine, "floor")[1]
    # without a budget the floor is the value alone
    plain = AlertEngine(config(BELOW, budget=None), start_ms=T0)
    plain.observe([window(0, spread(0.55, 0.3))], T0 + WINDOW_MS)
    assert note(plain, "floor")[0] == "bad"


def test_under_the_budget_a_standard_error_rule_pages_only_when_the_spread_is_surely_over() -> None:
    rule = {"name": "noisy", "measure": "ndcg@10", "stderr": {"max": 0.02}}
    engine = AlertEngine(config(rule), start_ms=T0)
    rng = np.random.default_rng(1)
    slightly = np.clip(rng.normal(0.5, 0.21, 100), 0, 1).tolist()  # se ~0.021: noise
    engine.observe([window(0, slightly)], T0 + WINDOW_MS)
    assert note(engine, "noisy")[0] == "good"
    surely = np.clip(rng.normal(0.5, 0.3, 30), 0, 1).tolist()  # se ~0.055 over 30 queries
    engine.observe([window(1, surely)], T0 + 2 * WINDOW_MS)
    evidence, said = note(engine, "noisy")
    assert evidence == "bad" and "over 0.02 at level" in said


@pytest.mark.parametrize("lumps", [0.0, 0.4])
def test_the_variance_test_holds_its_level_at_the_boundary_once_the_kurtosis_is_pooled(
    lumps: float,
) -> None:
    # Normal values, and nDCG-like ones (40 % exactly 0), whose standard error over 30
    # queries is exactly `max`: over 20,000 windows of one segment (the kurtosis pooled
    # over them) the test calls at most its level over (plus two standard errors).
    rng = np.random.default_rng(2)
    population = np.where(rng.random(200_000) < lumps, 0.0, rng.normal(0.5, 0.2, 200_000))
    n, level, trials = 30, 0.01, 20_000
    condition = Stderr(maximum=float(population.std()) / math.sqrt(n))
    spread = SpreadMoments()
    samples = population[rng.integers(0, population.size, (trials, n))]
    bad = 0
    for values in samples.tolist():
        spread.add(values)
        error = float(np.std(values, ddof=1)) / math.sqrt(n)
        if error > condition.maximum:
            verdict = condition.test(n, error, spread.kurtosis, level, "")
            bad += verdict.evidence is Evidence.BAD
    rate = bad / trials
    assert rate <= level + 2 * math.sqrt(level * (1 - level) / trials)


def comparison_measure(differences: list[float]) -> MeasureComparison:
    units = {f"q{i}": UnitMoments(6, d, 0.0) for i, d in enumerate(differences)}
    return MeasureComparison(
        measure=NDCG,
        result=PairedResult.undefined(len(differences)),
        baseline_mean=0.5,
        candidate_mean=0.5 + sum(differences) / len(differences),
        version="v1",
        design="replay",
        units=units,
        alpha=0.05,
    )


def test_a_comparison_rule_decides_at_its_share_where_that_is_stricter_than_its_alpha() -> None:
    condition = Comparison(comparison="v2-vs-v1", direction="worse", margin=0.0, scope="population")
    rng = np.random.default_rng(3)
    measure = comparison_measure((rng.normal(-0.03, 0.1, 80)).tolist())
    lower, upper = measure.decision("population")
    strict_lower, strict_upper = measure.decision("population", 1e-6)
    assert strict_lower < lower and upper < strict_upper  # wider at the stricter level
    assert measure.decision("population", 0.5) == (lower, upper)  # never looser than alpha
    assert condition.judge(measure).evidence is Evidence.BAD
    shared = condition.judge(measure, 1e-6)
    assert shared.evidence is Evidence.GOOD
    assert "its share of the false-page budget" in shared.note


def test_a_judge_rule_spends_its_share_over_the_days_looks() -> None:
    rule = {"name": "judge-drift", "judge": {"min_pairs": 50, "significance": 0.01}}
    engine = AlertEngine(config(rule, budget=0.12, judging=True), start_ms=T0)
    judge = engine.config.rules[0]
    levels = [engine._judge_level(judge, T0 + i) for i in range(3)]
    share = 0.12  # the only budgeted rule
    assert levels == pytest.approx([share * 6 / (math.pi**2 * j**2) for j in (1, 2, 3)])
    assert engine._judge_level(judge, T0 + 86_400_000) == pytest.approx(levels[0])  # a new day
    # the level reaches the condition: one source, two tests, each at level / 2
    condition = judge.condition
    assert isinstance(condition, Judge)
    # kappa 0.2 +- 0.05 against min_kappa 0.4: under it at level 0.01 (z 2.3) and at 5e-5
    # (z 3.9), not at 5e-9 (z 5.7)
    reading = JudgeReading("llm:m@p", 100, 100, 0.2, 0.1, 0, math.nan, math.nan, ((),),
                           kappa_stderr=0.05)  # fmt: skip
    assert condition.on_judges([reading]).evidence is Evidence.BAD
    shared = condition.on_judges([reading], level=1e-4)
    assert shared.evidence is Evidence.BAD and "at level 5e-05" in shared.note
    assert condition.on_judges([reading], level=1e-8).evidence is Evidence.GOOD
    assert condition.on_judges([reading], level=1.0) == condition.on_judges([reading])
