"""The bounds of nDCG@k where documents were never judged. nDCG@k itself (an unjudged document
gains 0) is the lower bound; `ndcg_upper@k` is the upper: what trec_eval's ndcg_cut_k gives on
qrels where every unjudged document of the ranking's top k is judged as the query's best
judged document (its grade with the highest gain), the ideal DCG recomputed with them
(docs/metrics.md, "Bounds"). Both engines, inline judgments included, bit for bit.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from monitor.cli import main
from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.gain import EXP, LINEAR, Gain
from monitor.scoring.scorer import Scorer
from monitor.trec.runfile import read_run

CONFORMANCE = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
CUTOFFS = (1, 5, 10, 20)
Rankings = dict[str, tuple[str, ...]]


def filled(
    evaluation_set: EvaluationSet, rankings: Rankings, k: int, gain: Gain
) -> dict[str, dict[str, int]]:
    """The qrels with each ranking's unjudged documents of the top k judged as the query's
    best judged document."""
    qrels = {}
    for query in evaluation_set.query_ids:
        grades = dict(evaluation_set.grades(query))
        best = max(grades.values(), key=gain.of)
        unjudged = [d for d in rankings.get(query, ())[:k] if d not in grades]
        qrels[query] = {**grades, **dict.fromkeys(unjudged, best)}
    return qrels


def trec_test_run() -> tuple[EvaluationSet, Rankings]:
    evaluation_set = load_evaluation_set(CONFORMANCE / "qrels.test")
    run = read_run(CONFORMANCE / "results.test")
    return evaluation_set, {q: r for q, r in run.rankings.items() if q in evaluation_set.query_ids}


@pytest.mark.parametrize("speedups", [True, False], ids=["c-path", "numpy-path"])
@pytest.mark.parametrize("gain", [LINEAR, EXP, Gain.parse("1=10,2=5")], ids=str)
def test_the_upper_bound_is_ndcg_of_trec_eval_s_test_run_on_qrels_filled_with_the_best_grade(
    speedups: bool, gain: Gain
) -> None:
    evaluation_set, rankings = trec_test_run()
    keys = [MeasureKey("ndcg_upper", k, gain) for k in CUTOFFS]
    upper = Scorer(evaluation_set, keys, speedups=speedups).score(
        list(rankings), list(rankings.values())
    )
    lower = Scorer(evaluation_set, [MeasureKey("ndcg", k, gain) for k in CUTOFFS]).score(
        list(rankings), list(rankings.values())
    )
    for column, k in enumerate(CUTOFFS):
        qrels = EvaluationSet.from_judgments(filled(evaluation_set, rankings, k, gain))
        expected = Scorer(qrels, [MeasureKey("ndcg", k, gain)], speedups=speedups).score(
            list(rankings), list(rankings.values())
        )
        assert np.array_equal(upper[:, column], expected[:, 0]), k  # bit for bit
    assert (upper >= lower).all() and (upper > lower).any()  # the run retrieves unjudged ones


def test_the_upper_bound_equals_trec_eval_itself_on_the_filled_qrels() -> None:
    """The bridge to trec_eval's own code (pytrec_eval): its ndcg_cut on the filled qrels."""
    evaluation_set, rankings = trec_test_run()
    run = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in rankings.items()}
    for k in (5, 10, 20):
        qrels = filled(evaluation_set, rankings, k, LINEAR)
        measure = f"ndcg_cut_{k}"
        trec = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{k}"}).evaluate(run)
        upper = Scorer(evaluation_set, [MeasureKey("ndcg_upper", k)]).score(
            list(rankings), list(rankings.values())
        )
        for row, query in enumerate(rankings):
            assert upper[row, 0] == pytest.approx(trec[query][measure], abs=1e-15), (query, k)


@pytest.mark.parametrize("speedups", [True, False], ids=["c-path", "numpy-path"])
def test_inline_judgments_count_as_judged_and_can_be_the_best_grade(speedups: bool) -> None:
    rng = random.Random(7)
    judgments = {f"q{q}": {f"d{q}.{i}": rng.randint(0, 2) for i in range(6)} for q in range(30)}
    evaluation_set = EvaluationSet.from_judgments(judgments)
    queries = [f"q{rng.randrange(30)}" for _ in range(200)]
    rankings = [
        rng.sample([*judgments[q], *(f"u{i}" for i in range(8))], rng.randint(0, 12))
        for q in queries
    ]
    extra = [{d: rng.randint(0, 4) for d in r if d.startswith("u") and rng.random() < 0.3}
             for r in rankings]  # fmt: skip
    keys = [MeasureKey("ndcg_upper", k, gain) for k in (3, 10) for gain in (LINEAR, EXP)]
    got = Scorer(evaluation_set, keys, speedups=speedups).score(queries, rankings, extra)
    for row, (query, ranking) in enumerate(zip(queries, rankings, strict=True)):
        merged = EvaluationSet.from_judgments({query: {**extra[row], **judgments[query]}})
        for column, key in enumerate(keys):
            assert key.k is not None and key.gain is not None
            qrels = filled(merged, {query: tuple(ranking)}, key.k, key.gain)
            expected = Scorer(
                EvaluationSet.from_judgments(qrels), [MeasureKey("ndcg", key.k, key.gain)]
            )
            assert got[row, column] == expected.score([query], [ranking])[0, 0], (row, key)


def test_the_bounds_of_one_ranking_by_hand() -> None:
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 2, "b": 1}})
    keys = [MeasureKey(kind, 3) for kind in ("ndcg", "ndcg_condensed", "ndcg_upper")]
    log3 = np.log2(3)
    for speedups in (True, False):
        lower, condensed, upper = Scorer(evaluation_set, keys, speedups=speedups).score(
            ["q"], [["x", "a", "y"]]
        )[0]
        assert lower == pytest.approx((2 / log3) / (2 + 1 / log3))  # x and y gain 0
        assert condensed == pytest.approx(2 / (2 + 1 / log3))  # a moves up to rank 1
        # x and y judged 2, as a: the ranking 2 2 2 is the ideal 2 2 2 (b's 1 drops out of it)
        assert upper == 1.0
        fully = Scorer(evaluation_set, keys, speedups=speedups).score(["q"], [["b", "a"]])[0]
        assert fully[0] == fully[2]  # nothing unjudged: the bounds meet


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
    arguments = ["-m", "ndcg_cut.10", "-m", "ndcg_upper@10", "-m", "ndcg_condensed.10"]
    assert main(["eval", "-q", *arguments, str(qrels), str(run)]) == 0
    printed = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    values = {(name.strip(), query): float(value) for name, query, value in printed}
    assert {name for name, _ in values} == {"ndcg_cut_10", "ndcg_upper_10", "ndcg_condensed_10"}
    keys = [MeasureKey(kind, 10) for kind in ("ndcg", "ndcg_upper", "ndcg_condensed")]
    scored = Scorer(evaluation_set, keys).score(list(rankings), list(rankings.values()))
    for row, query in enumerate(rankings):
        for column, name in enumerate(("ndcg_cut_10", "ndcg_upper_10", "ndcg_condensed_10")):
            assert values[(name, query)] == pytest.approx(scored[row, column], abs=5e-5)
    assert values[("ndcg_upper_10", "all")] > values[("ndcg_cut_10", "all")]
