"""How much a query's ranking churned between two windows (RBO, Jaccard), judgment-free, and
what an explanation says moved when a query lost (the cause)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.explain.rankings import RBO_PERSISTENCE, jaccard, ranking_change, rbo
from monitor.scoring.gain import LINEAR

DOCS = [f"d{n}" for n in range(12)]


def rbo_by_definition(a: list[str], b: list[str], p: float = RBO_PERSISTENCE) -> float:
    """Webber, Moffat and Zobel (2010), equation 32, with X_d = |A[:d] & B[:d]|."""
    k = len(a)
    overlaps = [len(set(a[:d]) & set(b[:d])) for d in range(1, k + 1)]
    tail = sum(x / d * p**d for d, x in enumerate(overlaps, start=1))
    return overlaps[-1] / k * p**k + (1 - p) / p * tail


@given(st.permutations(DOCS), st.permutations(DOCS), st.integers(1, 12))
def test_rbo_is_the_papers_extrapolation_and_jaccard_the_set_overlap(
    first: list[str], second: list[str], k: int
) -> None:
    a, b = first[:k], second[:k]
    assert rbo(a, b) == pytest.approx(rbo_by_definition(a, b), abs=1e-12)
    assert rbo(a, b) == pytest.approx(rbo(b, a), abs=1e-12)
    assert 0.0 <= rbo(a, b) <= 1.0 + 1e-12
    assert jaccard(a, b) == len(set(a) & set(b)) / len(set(a) | set(b))


def test_the_same_ranking_has_no_churn_and_disjoint_ones_all_of_it() -> None:
    assert rbo(DOCS, DOCS) == pytest.approx(1.0)
    assert jaccard(DOCS, DOCS) == 1.0
    assert rbo(DOCS[:6], DOCS[6:]) == 0.0
    assert jaccard(DOCS[:6], DOCS[6:]) == 0.0
    # A swap at the top weighs more than the same swap at the bottom.
    top = ["d1", "d0", *DOCS[2:10]]
    bottom = [*DOCS[:8], "d9", "d8"]
    assert rbo(DOCS[:10], top) < rbo(DOCS[:10], bottom) < 1.0
    assert rbo([], []) == 1.0 and jaccard([], []) == 1.0


GRADES = {"d0": 3, "d1": 2, "d2": 1, "d3": 0}


@pytest.mark.parametrize(
    ("before", "after", "cause"),
    [
        (["d0", "d1", "d2"], [], "empty_answer"),
        (["d0", "d1", "d2"], ["d1", "d2", "d3"], "judged_left"),  # d0 (grade 3) left
        (["d0", "d1", "d3"], ["d0", "d1", "new"], "unjudged_entered"),
        (["d0", "d1", "d2"], ["d2", "d1", "d0"], "reorder_only"),
        (["d0", "d1", "d2"], ["d0", "d1", "d2"], "unchanged"),
        (["d0", "d1", "d3"], ["d0", "d1", "d2"], "judged_changed"),  # d3 (grade 0) out
    ],
)
def test_a_losing_querys_cause_says_what_moved(
    before: list[str], after: list[str], cause: str
) -> None:
    change = ranking_change(before, after, GRADES, LINEAR, 3)
    assert change.cause == cause
    assert change.rbo == pytest.approx(rbo(before, after))
    assert change.jaccard == jaccard(before, after)
