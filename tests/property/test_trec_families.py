"""trec_eval's other measures (`monitor.scoring.families`) against pytrec_eval, on random data.

pytrec_eval embeds trec_eval 9's measure code. The measures below kept their definitions in
trec_eval 10.0 (the interpolated ones, iprec_at_recall and 11pt_avg, changed their rounding
and are covered by trec_eval 10's own expected outputs in test_trec_eval_conformance.py), so
on every query rankmon must give pytrec_eval's values: graded and negative judgments,
unjudged documents, ties, relevance levels 1 and 2, with and without `-J`.
"""

from __future__ import annotations

import itertools
import math

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.scoring.evalset import EvaluationSet
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import Run, trec_order
from monitor.trec.selection import select_measures

MEASURES = (
    "gm_map", "Rprec", "bpref", "infAP", "gm_bpref", "Rprec_mult", "utility", "binG", "G",
    "ndcg_rel", "Rndcg", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
    "set_recall", "set_map", "set_F", "num_nonrel_judged_ret",
)  # fmt: skip
DOCS = [f"d{i}" for i in range(12)]
# trec_eval caches the last query's ranking by query id across calls (form_res_rels.c), which
# in one process makes pytrec_eval reuse a freed ranking: every example gets fresh ids.
EXAMPLES = itertools.count()


@st.composite
def collections(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Qrels with grades -1..3 and runs with integer scores (exact as floats, ties included)."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    example = next(EXAMPLES)
    for n in range(draw(st.integers(1, 4))):
        q = f"{example}-{n}"
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        qrels[q] = {doc: draw(st.integers(-1, 3)) for doc in judged}
        # trec_eval reads stale memory for a query whose judgments are all negative (its
        # num_rel_levels keeps the previous query's): one grade >= 0 keeps it defined.
        qrels[q][judged[0]] = draw(st.integers(0, 3))
        retrieved = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        run[q] = {doc: float(draw(st.integers(0, 5))) for doc in retrieved}
    return qrels, run


@settings(max_examples=200, deadline=None)
@given(collections(), st.sampled_from([1, 2]), st.booleans())
def test_every_query_s_values_are_pytrec_eval_s(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
    level: int,
    judged_only: bool,
) -> None:
    qrels, scores = data
    expected = pytrec_eval.RelevanceEvaluator(
        qrels, set(MEASURES), relevance_level=level, judged_docs_only_flag=judged_only
    ).evaluate(scores)
    rankings = {q: trec_order(list(docs), list(docs.values())) for q, docs in scores.items()}
    report = evaluate_run(
        EvaluationSet.from_judgments(qrels),
        Run("run", "tag", rankings),
        select_measures(MEASURES),
        relevance_level=level,
        judged_only=judged_only,
    )
    assert set(report.per_query) == set(expected)
    for qid, values in expected.items():
        got = report.per_query[qid]
        for name, value in values.items():
            assert math.isclose(float(got[name]), value, rel_tol=1e-13, abs_tol=1e-15), (
                qid,
                name,
                got[name],
                value,
            )


def test_judged_only_drops_unjudged_documents_before_the_measures_see_the_ranking() -> None:
    qrels = EvaluationSet.from_judgments({"q": {"a": 1, "b": 0, "c": -1}})
    ranked = Run("run", "tag", {"q": ("x", "a", "y", "b", "c")})
    selection = select_measures(["P.2", "num_ret", "relstring", "unj.2"])
    plain = evaluate_run(qrels, ranked, selection).per_query["q"]
    judged = evaluate_run(qrels, ranked, selection, judged_only=True).per_query["q"]
    assert (plain["num_ret"], plain["P_2"], plain["relstring"], plain["unj_2"]) == (
        5,
        0.5,
        "-1-0.",
        0.5,
    )
    assert (judged["num_ret"], judged["P_2"], judged["relstring"], judged["unj_2"]) == (
        2,
        0.5,
        "10",
        0.0,
    )


def test_collection_size_enters_utility_s_fourth_term_only() -> None:
    qrels = EvaluationSet.from_judgments({"q": {"a": 1, "b": 1, "c": 0}})
    ranked = Run("run", "tag", {"q": ("a", "c", "x")})
    selection = select_measures(["utility.0,0,0,1", "utility"])
    # 1 relevant and 2 nonrelevant retrieved, 1 relevant missed: d = N + 1 - 3 - 2.
    values = evaluate_run(qrels, ranked, selection, num_docs=100).per_query["q"]
    assert values == {"utility_0,0,0,1": 96.0}


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        (["P.5,7,3"], ["P_3", "P_5", "P_7"]),
        (["P_10", "P.5"], ["P_10"]),
        (["ndcg_cut.10,20,23.4"], ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]),
        (["iprec_at_recall..5,.1"], ["iprec_at_recall_0.10", "iprec_at_recall_0.50"]),
        (["11pt_avg..25,.5"], ["11pt_avg_.25,.5"]),
        (["ndcg.1=3,2=9", "ndcg"], ["ndcg_1=3,2=9"]),
        (["rbp.p=0.5", "success"], ["success_1", "success_5", "success_10", "rbp_p=0.5"]),
        (
            ["set"],
            [
                "num_ret",
                "num_rel",
                "num_rel_ret",
                "utility",
                "set_P",
                "set_relative_P",
                "set_recall",
                "set_map",
                "set_F",
            ],
        ),
    ],
)
def test_measure_parameters_name_the_values_as_trec_eval_does_in_its_table_order(
    arguments: list[str], names: list[str]
) -> None:
    assert list(select_measures(arguments).names) == names
