"""The bounds of nDCG@k where documents were never judged: `ndcg_lower@k` and `ndcg_upper@k`
are the least and the most nDCG@k over every grading of the unjudged documents of the top k
with the evaluation set's grades (and 0), each graded document entering the ideal DCG too
(docs/metrics.md, "Bounds"; monitor/scoring/bounds.py). Checked against every grading, on
both engines, which agree bit for bit; with nothing unjudged both are nDCG@k.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from monitor.cli import main
from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.gain import EXP, LINEAR, Gain
from monitor.scoring.scorer import Scorer
from monitor.trec.runfile import read_run
from tests.support import oracle

CONFORMANCE = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
CUTOFFS = (1, 3, 5, 10)
GAINS = (LINEAR, EXP, Gain.parse("0=0.5,1=1,2=10,3=5"))
Rankings = dict[str, tuple[str, ...]]


def trec_test_run() -> tuple[EvaluationSet, Rankings]:
    evaluation_set = load_evaluation_set(CONFORMANCE / "qrels.test")
    run = read_run(CONFORMANCE / "results.test")
    return evaluation_set, {q: r for q, r in run.rankings.items() if q in evaluation_set.query_ids}


def random_batch(
    seed: int, queries: int = 25, rankings: int = 120
) -> tuple[EvaluationSet, list[str], list[list[str]], list[dict[str, int | None]]]:
    """A small set (grades -1..3), rankings of judged and unjudged documents (at most five
    unjudged in any top 10), and inline grades (up to 5, beyond the set's scale) on some."""
    rng = random.Random(seed)
    judgments = {
        f"q{q}": {f"d{q}.{i}": rng.choice([-1, 0, 0, 1, 2, 3]) for i in range(rng.randint(1, 7))}
        for q in range(queries)
    }
    evaluation_set = EvaluationSet.from_judgments(judgments)
    picked = [f"q{rng.randrange(queries)}" for _ in range(rankings)]
    lists = []
    for query in picked:
        judged = list(judgments[query])
        unjudged = [f"u{i}" for i in range(rng.randint(0, 5))]
        ranking = rng.sample(judged, rng.randint(0, len(judged))) + unjudged
        rng.shuffle(ranking)
        lists.append(ranking)
    extras: list[dict[str, int | None]] = [
        {d: rng.randint(0, 5) for d in r if d.startswith("u") and rng.random() < 0.2} for r in lists
    ]
    return evaluation_set, picked, lists, extras


@pytest.mark.parametrize("seed", [1, 2])
def test_the_bounds_are_the_least_and_most_ndcg_of_every_grading_of_the_unjudged_documents(
    seed: int,
) -> None:
    evaluation_set, queries, rankings, extras = random_batch(seed)
    keys = [MeasureKey(kind, k, g) for kind in ("ndcg_lower", "ndcg_upper") for k in CUTOFFS
            for g in GAINS]  # fmt: skip
    bounds = Scorer(evaluation_set, keys, speedups=True).score(queries, rankings, extras)
    numpy_path = Scorer(evaluation_set, keys, speedups=False).score(queries, rankings, extras)
    assert np.array_equal(bounds, numpy_path, equal_nan=True)  # the two engines, bit for bit
    half = len(keys) // 2
    gradings = 0
    for row, (query, ranking) in enumerate(zip(queries, rankings, strict=True)):
        judged = {**{d: g for d, g in extras[row].items() if g is not None},
                  **evaluation_set.grades(query)}  # fmt: skip
        grades = [judged.get(doc) for doc in ranking]
        for column, key in enumerate(keys[:half]):
            assert key.k is not None and key.gain is not None
            least, most = oracle.ndcg_bounds(
                grades, judged.values(), evaluation_set.grade_scale, key.k, gain=key.gain,
                every_grading=True,
            )  # fmt: skip
            gradings += 1
            assert bounds[row, column] == pytest.approx(least, abs=1e-12), (row, key)
            assert bounds[row, half + column] == pytest.approx(most, abs=1e-12), (row, key)
    assert gradings == len(rankings) * half


def test_the_issues_example_lies_between_its_bounds_where_ndcg_itself_did_not() -> None:
    # qrels a=1, z1..z6=0; the ranking a z1 .. z6 new: nDCG@10 is 1, but judged, `new` enters
    # the ideal: 0.8066 at grade 1. The old "upper" (the query's best grade everywhere) said
    # 0.8066 and nDCG 1: the truth after judging was outside [ndcg, upper].
    judgments = {"q": {"a": 1, **{f"z{i}": 0 for i in range(1, 7)}}}
    ranking = ["a", *(f"z{i}" for i in range(1, 7)), "new"]
    keys = [MeasureKey(kind, 10) for kind in ("ndcg", "ndcg_lower", "ndcg_upper")]
    for speedups in (True, False):
        scorer = Scorer(EvaluationSet.from_judgments(judgments), keys, speedups=speedups)
        ndcg, lower, upper = scorer.score(["q"], [ranking])[0]
        assert (ndcg, upper) == (1.0, 1.0)  # judged 0, new changes nothing
        judged_one = Scorer(
            EvaluationSet.from_judgments({"q": {**judgments["q"], "new": 1}}), keys[:1]
        ).score(["q"], [ranking])[0, 0]
        assert judged_one == pytest.approx(1 / (1 + 1 / math.log2(3)) * (1 + 1 / math.log2(9)))
        assert lower <= judged_one <= upper
        assert lower == pytest.approx(judged_one)  # grade 1 is the worst it can do


def test_a_query_with_nothing_relevant_judged_can_still_reach_one() -> None:
    # The old upper gave such a query 0: its "best grade" was 0.
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 0, "b": 0}, "r": {"c": 2}})
    keys = [MeasureKey(kind, 3) for kind in ("ndcg", "ndcg_lower", "ndcg_upper")]
    for speedups in (True, False):
        ndcg, lower, upper = Scorer(evaluation_set, keys, speedups=speedups).score(
            ["q"], [["new", "a", "b"]]
        )[0]
        assert (ndcg, lower, upper) == (0.0, 0.0, 1.0)  # new judged 2 is the ideal ranking


@pytest.mark.parametrize("speedups", [True, False], ids=["c-path", "numpy-path"])
def test_with_nothing_unjudged_in_the_top_k_both_bounds_are_ndcg_bit_for_bit(
    speedups: bool,
) -> None:
    evaluation_set, rankings = trec_test_run()
    judged = {q: tuple(d for d in r if d in dict(evaluation_set.grades(q))) for q, r in
              rankings.items()}  # fmt: skip
    for gain in GAINS:
        keys = [MeasureKey(kind, k, gain) for kind in ("ndcg", "ndcg_lower", "ndcg_upper")
                for k in (5, 10, 20)]  # fmt: skip
        got = Scorer(evaluation_set, keys, speedups=speedups).score(
            list(judged), list(judged.values())
        )
        assert np.array_equal(got[:, 0:3], got[:, 3:6]) and np.array_equal(got[:, 0:3], got[:, 6:9])
    # with a document nobody judged at rank 2 of every query, they part
    keys = [MeasureKey(kind, 10) for kind in ("ndcg_lower", "ndcg", "ndcg_upper")]
    unjudged = [[r[0], f"new-{q}", *r[1:]] for q, r in rankings.items()]
    got = Scorer(evaluation_set, keys, speedups=speedups).score(list(rankings), unjudged)
    assert (got[:, 0] <= got[:, 2]).all() and (got[:, 2] > got[:, 0]).any()


def test_the_bounds_of_one_ranking_by_hand() -> None:
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 2, "b": 1}})
    keys = [MeasureKey(kind, 3) for kind in ("ndcg_lower", "ndcg_condensed", "ndcg_upper")]
    log3 = np.log2(3)
    for speedups in (True, False):
        lower, condensed, upper = Scorer(evaluation_set, keys, speedups=speedups).score(
            ["q"], [["x", "a", "y"]]
        )[0]
        assert lower == pytest.approx((2 / log3) / (2 + 1 / log3))  # x and y judged 0
        assert condensed == pytest.approx(2 / (2 + 1 / log3))  # a moves up to rank 1
        # x and y judged 2, as a: the ranking 2 2 2 is the ideal 2 2 2 (b's 1 drops out of it)
        assert upper == 1.0


def test_rankmon_eval_prints_the_bounds_under_their_own_names_and_ndcg_cut_as_trec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = CONFORMANCE / "qrels.test"
    evaluation_set, rankings = trec_test_run()
    # trec_eval's test run with a document nobody judged at rank 2 of every query
    rankings = {q: (r[0], f"new-{q}", *r[1:]) for q, r in rankings.items()}
    lines = [
        f"{q} Q0 {d} {i} {100 - i} run\n" for q, r in rankings.items() for i, d in enumerate(r)
    ]
    run = tmp_path / "run"
    run.write_text("".join(lines))
    arguments = ["-m", "ndcg_cut.10", "-m", "ndcg_upper@10", "-m", "ndcg_condensed.10",
                 "-m", "ndcg_lower.10"]  # fmt: skip
    assert main(["eval", "-q", *arguments, str(qrels), str(run)]) == 0
    printed = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    values = {(name.strip(), query): float(value) for name, query, value in printed}
    names = ("ndcg_cut_10", "ndcg_upper_10", "ndcg_condensed_10", "ndcg_lower_10")
    assert {name for name, _ in values} == set(names)
    kinds = ("ndcg", "ndcg_upper", "ndcg_condensed", "ndcg_lower")
    keys = [MeasureKey(kind, 10) for kind in kinds]
    scored = Scorer(evaluation_set, keys).score(list(rankings), list(rankings.values()))
    for row, query in enumerate(rankings):
        for column, name in enumerate(names):
            assert values[(name, query)] == pytest.approx(scored[row, column], abs=5e-5)
    assert values[("ndcg_upper_10", "all")] > values[("ndcg_cut_10", "all")]
