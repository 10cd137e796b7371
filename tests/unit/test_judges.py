"""A model judge held to human labels (`monitor.stats.judges`): PPI++'s corrected mean and
interval, against the human-only one, and the judge's agreement (quadratic weighted kappa).
Figures checked against scipy.stats and sklearn-free hand computations; coverage by
simulation is bench/judges.py's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from monitor.stats.judges import classical_mean, confusion, ppi_mean, weighted_kappa


def test_the_human_only_interval_is_the_normal_one_of_the_mean() -> None:
    values = [0.2, 0.4, 0.9, 0.1, 0.5, 0.7]
    interval = classical_mean(values, confidence=0.9)
    sem = stats.sem(values)
    assert interval.estimate == pytest.approx(np.mean(values))
    assert interval.stderr == pytest.approx(sem)
    assert interval.upper - interval.estimate == pytest.approx(stats.norm.ppf(0.95) * sem)


def test_ppi_corrects_a_biased_judge_and_narrows_the_interval_when_it_tracks_the_humans() -> None:
    rng = np.random.default_rng(11)
    truth_all = rng.normal(0.5, 0.2, 10_300)
    judged_all = truth_all + 0.3 + rng.normal(0, 0.05, truth_all.size)  # biased, but tracks
    human, audited, only = truth_all[:300], judged_all[:300], judged_all[300:]
    corrected = ppi_mean(human, audited, only)
    alone = classical_mean(human)
    assert abs(float(only.mean()) - 0.5) > 0.25  # the judge alone is far off
    assert corrected.covers(0.5) and abs(corrected.estimate - 0.5) < 0.02
    assert corrected.width < 0.5 * alone.width  # the model-only units carry the weight
    assert 0.9 < corrected.tuning <= 1.0


def test_ppi_with_a_judge_that_knows_nothing_is_the_human_only_mean() -> None:
    rng = np.random.default_rng(12)
    human = rng.normal(0.5, 0.2, 200)
    noise = rng.normal(0.0, 1.0, 200)  # the model's values have nothing to do with the humans'
    corrected = ppi_mean(human, noise, rng.normal(0.0, 1.0, 5_000))
    alone = classical_mean(human)
    assert corrected.tuning < 0.1
    assert corrected.estimate == pytest.approx(alone.estimate, abs=0.02)
    assert corrected.width == pytest.approx(alone.width, rel=0.05)


def test_plain_ppi_takes_lam_one_and_its_variance_adds_both_parts() -> None:
    human, audited, only = [1.0, 2.0, 4.0], [1.5, 2.0, 3.0], [2.0, 2.5, 3.5, 1.0]
    plain = ppi_mean(human, audited, only, tuned=False)
    residual = np.subtract(human, audited)
    assert plain.tuning == 1.0
    assert plain.estimate == pytest.approx(np.mean(only) + residual.mean())
    variance = np.var(only, ddof=1) / 4 + np.var(residual, ddof=1) / 3
    assert plain.stderr == pytest.approx(math.sqrt(variance))


def test_weighted_kappa_is_one_for_agreement_zero_for_chance_and_matches_the_formula() -> None:
    grades = (0, 1, 2, 3)
    assert weighted_kappa([0, 1, 2, 3, 3], [0, 1, 2, 3, 3], grades) == 1.0
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, 20_000).tolist(), rng.integers(0, 4, 20_000).tolist()
    assert abs(weighted_kappa(a, b, grades)) < 0.02
    human, model = [0, 0, 1, 2, 3, 3, 1, 2], [0, 1, 1, 3, 3, 2, 0, 2]
    table = confusion(human, model, grades).astype(float)
    weights = np.array([[(i - j) ** 2 / 9 for j in range(4)] for i in range(4)])
    expected = np.outer(table.sum(1), table.sum(0)) / table.sum()
    by_hand = 1 - (weights * table).sum() / (weights * expected).sum()
    assert weighted_kappa(human, model, grades) == pytest.approx(by_hand)
    assert table[0].tolist() == [1, 1, 0, 0]  # human 0: once 0, once 1


def test_a_grade_outside_the_scale_and_too_small_an_audit_are_refused() -> None:
    with pytest.raises(ValueError, match="grade 7 is not one of"):
        confusion([0, 7], [0, 1], (0, 1, 2, 3))
    with pytest.raises(ValueError, match="at least 2 audited"):
        ppi_mean([0.5], [0.4], [0.3, 0.2])
