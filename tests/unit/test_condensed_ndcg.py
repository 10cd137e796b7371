"""Condensed-list nDCG (`ndcg_condensed@k`, Sakai's nDCG'@k): nDCG@k of the ranking without
its unjudged documents. It is what trec_eval's ndcg_cut gives on the run with those documents
removed, and the stream computes it on both engines (the C path has no case of its own: the
numpy function fills its columns there).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from monitor.cli import main
from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.gain import EXP, LINEAR
from monitor.scoring.scorer import Scorer
from monitor.trec.runfile import read_run

CONFORMANCE = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
CUTOFFS = (5, 10, 20, None)


def scores(
    evaluation_set: EvaluationSet,
    keys: list[MeasureKey],
    rankings: dict[str, tuple[str, ...]],
    *,
    speedups: bool,
) -> np.ndarray:
    scorer = Scorer(evaluation_set, keys, speedups=speedups)
    return scorer.score(list(rankings), list(rankings.values()))


def without_unjudged(
    evaluation_set: EvaluationSet, rankings: dict[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    return {
        qid: tuple(d for d in docs if d in evaluation_set.grades(qid))
        for qid, docs in rankings.items()
    }


@pytest.mark.parametrize("speedups", [True, False], ids=["c-path", "numpy-path"])
def test_condensed_ndcg_of_trec_eval_s_test_run_is_ndcg_of_the_run_without_unjudged_documents(
    speedups: bool,
) -> None:
    evaluation_set = load_evaluation_set(CONFORMANCE / "qrels.test")
    run = read_run(CONFORMANCE / "results.test")
    rankings = {q: r for q, r in run.rankings.items() if q in evaluation_set.query_ids}
    condensed = [MeasureKey("ndcg_condensed", k, g) for g in (LINEAR, EXP) for k in CUTOFFS]
    plain = [MeasureKey("ndcg", k, g) for g in (LINEAR, EXP) for k in CUTOFFS]
    got = scores(evaluation_set, condensed, rankings, speedups=speedups)
    removed = without_unjudged(evaluation_set, rankings)
    assert removed != rankings  # the run retrieves unjudged documents: the test can tell
    expected = scores(evaluation_set, plain, removed, speedups=speedups)
    assert np.array_equal(got, expected)  # bit for bit
    full = scores(evaluation_set, plain, rankings, speedups=speedups)
    assert (got >= full).all() and (got > full).any()  # removing misses only lifts nDCG


def test_rankmon_eval_on_the_run_without_unjudged_documents_prints_the_condensed_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bridge to trec_eval's own numbers: `rankmon eval` (trec_eval line for line, see
    test_trec_eval_conformance) on the filtered run file prints the condensed values."""
    qrels = CONFORMANCE / "qrels.test"
    evaluation_set = load_evaluation_set(qrels)
    judged = {(q, d) for q in evaluation_set.query_ids for d in evaluation_set.grades(q)}
    lines = (CONFORMANCE / "results.test").read_text().splitlines()
    kept = [line for line in lines if tuple(line.split()[0:3:2]) in judged]
    filtered = tmp_path / "results.judged"
    filtered.write_text("\n".join(kept) + "\n")
    assert main(["eval", "-q", "-m", "ndcg_cut.10", str(qrels), str(filtered)]) == 0
    printed = {
        fields[1]: float(fields[2])
        for fields in (line.split("\t") for line in capsys.readouterr().out.splitlines())
        if fields[1] != "all"
    }
    run = read_run(CONFORMANCE / "results.test")
    rankings = {q: r for q, r in run.rankings.items() if q in evaluation_set.query_ids}
    got = scores(evaluation_set, [MeasureKey("ndcg_condensed", 10)], rankings, speedups=True)
    assert set(printed) == set(rankings)
    for row, qid in enumerate(rankings):
        assert printed[qid] == pytest.approx(got[row, 0], abs=5e-5), qid


def test_unjudged_documents_do_not_count_as_misses_in_the_condensed_list() -> None:
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 2, "b": 0, "c": 1}})
    keys = [MeasureKey("ndcg", 2), MeasureKey("ndcg_condensed", 2)]
    for speedups in (True, False):
        # x and y were never judged: nDCG@2 counts them as misses, the condensed list skips
        # them, so a and c (the ideal order) are its top 2.
        values = Scorer(evaluation_set, keys, speedups=speedups).score(
            ["q"], [["x", "a", "y", "c", "b"]]
        )
        assert values[0, 0] == pytest.approx((2 / np.log2(3)) / (2 + 1 / np.log2(3)))
        assert values[0, 1] == 1.0
