"""The `judge` condition: a model judge's agreement with the people's audit, and a move of its
bias (a judge upgrade or prompt change), read from `judge_reading` and judged per source."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from monitor.alerting.conditions import Judge
from monitor.alerting.state import Evidence
from monitor.config.alerts import parse_alerting_config
from monitor.errors import ConfigError
from monitor.stats.judges import JudgeReading, judge_reading, weighted_kappa

GRADES = (0, 1, 2, 3)


def audit(n: int, bias: float, noise: float, seed: int) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 4, n)
    model = np.clip(np.rint(human + bias + rng.normal(0, noise, n)), 0, 3).astype(int)
    return [int(h) for h in human], [int(m) for m in model]


def test_a_reading_is_the_newest_spans_kappa_and_bias_and_the_test_of_its_move_from_the_first() -> (
    None
):
    human_old, model_old = audit(200, 0.0, 0.5, 1)
    human_new, model_new = audit(150, 1.0, 0.5, 2)
    human, model = human_old + human_new, model_old + model_new
    reading = judge_reading("llm:m@p1", human, model, GRADES, 100)
    assert (reading.total, reading.pairs, reading.before) == (350, 100, 100)
    assert reading.kappa == weighted_kappa(human[-100:], model[-100:], GRADES)
    newest = np.subtract(model[-100:], human[-100:])
    older = np.subtract(model[:100], human[:100])  # the reference: the first pairs
    assert reading.bias == pytest.approx(newest.mean())
    assert reading.previous_bias == pytest.approx(older.mean())
    welch = scipy_stats.ttest_ind(newest, older, equal_var=False)  # its statistic, read normal
    assert reading.shift_p == pytest.approx(2 * scipy_stats.norm.sf(abs(welch.statistic)))
    assert sum(map(sum, reading.confusion)) == 100 and reading.grades == GRADES


def test_the_kappas_standard_error_is_the_jackknife_over_its_units() -> None:
    human, model = audit(120, 0.4, 0.7, 4)
    left_out = [
        weighted_kappa(human[:i] + human[i + 1 :], model[:i] + model[i + 1 :], GRADES)
        for i in range(len(human))
    ]
    n, mean = len(left_out), sum(left_out) / len(left_out)
    by_hand = math.sqrt((n - 1) / n * sum((k - mean) ** 2 for k in left_out))
    reading = judge_reading("llm:m@p1", human, model, GRADES, 200)
    assert reading.kappa_stderr == pytest.approx(by_hand, rel=1e-12)


def test_a_young_audit_has_no_shift_to_test() -> None:
    human, model = audit(80, 0.3, 0.5, 3)
    reading = judge_reading("llm:m@p1", human, model, GRADES, 100)
    assert (reading.pairs, reading.before) == (80, 0)
    assert math.isnan(reading.previous_bias) and math.isnan(reading.shift_p)


def reading(**values: Any) -> JudgeReading:
    base: dict[str, Any] = dict(
        source="llm:m@p1", total=400, pairs=200, kappa=0.7, bias=0.3, before=200,
        previous_bias=0.3, shift_p=0.5, confusion=(), grades=(), kappa_stderr=0.02,
    )  # fmt: skip
    return JudgeReading(**{**base, **values})


def test_the_judge_rule_is_bad_on_a_low_kappa_or_a_significant_large_move_only() -> None:
    rule = Judge(min_kappa=0.4, max_shift=0.25, significance=0.001, min_pairs=100)
    assert rule.on_judges([reading()]).evidence is Evidence.GOOD
    low = rule.on_judges([reading(), reading(source="llm:x@p", kappa=0.31)])
    assert low.evidence is Evidence.BAD
    assert "llm:x@p: kappa 0.310 (at most 0.372 at level 0.001) < 0.4" in low.note
    near = rule.on_judges([reading(kappa=0.38)])  # under the floor, not significantly
    assert near.evidence is Evidence.GOOD
    moved = rule.on_judges([reading(bias=0.9, shift_p=1e-9)])
    assert moved.evidence is Evidence.BAD and "bias moved +0.600 grades" in moved.note
    assert rule.on_judges([reading(bias=0.9, shift_p=0.01)]).evidence is Evidence.GOOD
    assert rule.on_judges([reading(bias=0.4, shift_p=1e-9)]).evidence is Evidence.GOOD
    young = rule.on_judges([reading(pairs=60, before=0, kappa=0.1)])
    assert young.evidence is Evidence.UNKNOWN and "most: 60" in young.note


def test_a_judge_rule_needs_the_judging_loop_and_takes_no_measure() -> None:
    rules = {"rules": [{"name": "judge-drift", "judge": {"min_kappa": 0.5}}]}
    config = parse_alerting_config(
        rules, cutoffs=(10,), gains=("linear",), segment_keys=(), window="5m", judging=True
    )
    assert config.rules[0].condition == Judge(min_kappa=0.5)
    with pytest.raises(ConfigError, match="needs the judging loop"):
        parse_alerting_config(rules, cutoffs=(10,), gains=("linear",), segment_keys=(), window="5m")
    measured = {"rules": [{"name": "j", "measure": "ndcg@10", "judge": {}}]}
    with pytest.raises(ConfigError, match="judge rules take no measure"):
        parse_alerting_config(
            measured, cutoffs=(10,), gains=("linear",), segment_keys=(), window="5m", judging=True
        )
