"""Gain rules: linear (trec_eval), exp (2^g - 1) and explicit grade->gain maps."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.scoring.columns import gain_values
from monitor.scoring.gain import EXP, LINEAR, Gain


def test_linear_gain_is_the_grade_and_zero_for_negative_or_unjudged() -> None:
    assert [LINEAR.of(g) for g in (3, 2, 1, 0, -1, None)] == [3.0, 2.0, 1.0, 0.0, 0.0, 0.0]


def test_exp_gain_is_two_to_the_grade_minus_one() -> None:
    # 2^3-1 = 7, 2^2-1 = 3, 2^1-1 = 1, 2^0-1 = 0; negative grades gain 0, not 2^-1 - 1.
    assert [EXP.of(g) for g in (3, 2, 1, 0, -2, None)] == [7.0, 3.0, 1.0, 0.0, 0.0, 0.0]


def test_gain_map_overrides_named_grades_and_leaves_others_linear() -> None:
    gain = Gain.parse({2: 5, 3: 9.5})
    assert [gain.of(g) for g in (4, 3, 2, 1, 0, -1)] == [4.0, 9.5, 5.0, 1.0, 0.0, 0.0]


def test_array_gains_equal_scalar_gains() -> None:
    grades = np.array([-3, -1, 0, 1, 2, 3, 5])
    for gain in (LINEAR, EXP, Gain.parse("1=2,3=0.25")):
        assert gain_values(gain, grades).tolist() == [gain.of(int(g)) for g in grades]


def test_gain_names_parse_back_to_the_same_gain() -> None:
    custom = Gain.parse({3: 7, 1: 1, 2: 3.5})
    assert str(custom) == "1=1,2=3.5,3=7"
    assert Gain.parse(str(custom)) == custom
    assert Gain.parse("linear") is not None and Gain.parse("linear") == LINEAR
    assert Gain.parse("exp") == EXP


@pytest.mark.parametrize("spec", ["log", "1=", "a=1", "1=1,1=2", "-1=3", "2=-1", ""])
def test_unknown_or_invalid_gain_is_rejected(spec: str) -> None:
    with pytest.raises(ValueError):
        Gain.parse(spec)
