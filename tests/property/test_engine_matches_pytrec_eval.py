"""The batch engine agrees with pytrec_eval (trec_eval 9.0.x inside) on random qrels and runs.

Scores are multiples of 1/8 below 64: exactly representable in float32, so pytrec_eval, which
stores scores as C floats, orders the run on the very numbers we do. Equal scores are real ties,
broken by docno descending in byte order on both sides (we order with `runfile.trec_order`).
Doc ids mix lengths and cases ("d9" vs "d10", "B" vs "a") so that byte order matters.

Every generated query has at least one grade >= 0: for a query whose judgments are ALL
negative, trec_eval's form_res_rels sizes its relevance levels as max grade + 1 = 0, and
pytrec_eval reports num_ret = 0 with every measure 0 (and once hung here), so there is no
reference value to compare with. rankmon scores such a query like one without relevant
documents (docs/metrics.md).
"""

from __future__ import annotations

import pytest
import pytrec_eval  # a pinned dev dependency: missing, this test fails rather than skips
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.trec.runfile import trec_order
from monitor.trec.selection import select_measures


def trec_keys(names: list[str]) -> list[MeasureKey]:
    """The batch engine's keys of trec_eval `-m` names (`rankmon eval`'s one parser)."""
    return list(select_measures(names).keys.values())


TREC_NAMES = [
    "ndcg_cut.1,3,5,10", "ndcg", "P.1,3,5,10", "recall.1,3,5,10", "recip_rank", "map",
    "num_ret", "num_rel", "num_rel_ret",
]  # fmt: skip
KEYS = trec_keys(TREC_NAMES)
DOCS = ["d1", "d2", "d9", "d10", "d11", "a", "B", "b", "x", "X", "zz", "z"]
QUERIES = ["1", "2", "3", "10", "q"]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

scores = st.integers(min_value=0, max_value=511).map(lambda n: n / 8)
qrels_strategy = st.dictionaries(
    st.sampled_from(QUERIES),
    # Grades -1..3: negative is judged-unjudged; a query may have no grade > 0 at all.
    st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8).filter(
        lambda docs: max(docs.values()) >= 0
    ),
    min_size=1,
)
# Small score ranges make ties frequent; short runs (1 doc) are below every cutoff but 1.
run_strategy = st.dictionaries(
    st.sampled_from(QUERIES),
    st.dictionaries(st.sampled_from(DOCS), scores | st.sampled_from([1.0, 2.0]), min_size=1),
    min_size=1,
)


def pytrec_eval_values(qrels: Qrels, run: Run, level: int) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES), relevance_level=level)
    values: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return values


def rankmon_values(qrels: Qrels, run: Run, level: int) -> dict[str, dict[str, float]]:
    evaluation_set = EvaluationSet.from_judgments(qrels)
    query_ids = [qid for qid in run if qid in evaluation_set]
    rankings = [
        list(trec_order(list(run[qid]), list(run[qid].values()), "float32")) for qid in query_ids
    ]
    matrix = Scorer(evaluation_set, KEYS, relevance_level=level).score(query_ids, rankings)
    return {
        qid: {str(key.trec_name): float(value) for key, value in zip(KEYS, row, strict=True)}
        for qid, row in zip(query_ids, matrix, strict=True)
    }


@settings(max_examples=150, deadline=None)
@given(qrels=qrels_strategy, run=run_strategy, level=st.integers(1, 2))
def test_every_measure_equals_pytrec_eval_within_1e9(qrels: Qrels, run: Run, level: int) -> None:
    expected = pytrec_eval_values(qrels, run, level)
    got = rankmon_values(qrels, run, level)
    assert set(got) == set(expected)  # both score qrels ∩ run (trec_eval 9 without -c)
    for qid, measures in expected.items():
        for name, value in measures.items():
            assert got[qid][name] == pytest.approx(value, abs=1e-9), (qid, name)


def test_ties_unjudged_and_negative_grades_on_a_hand_built_query() -> None:
    qrels = {"q": {"d9": 2, "d10": 0, "B": -1, "a": 3, "unretrieved": 1}}
    run = {"q": {"d10": 1.0, "d9": 1.0, "a": 0.5, "B": 0.5, "x": 2.0}}
    expected = pytrec_eval_values(qrels, run, 1)
    got = rankmon_values(qrels, run, 1)
    # Order: x (2.0), then d9 before d10 (tie, docno descending), then a before B (byte order).
    assert got["q"]["recip_rank"] == 0.5 == expected["q"]["recip_rank"]
    for name, value in expected["q"].items():
        assert got["q"][name] == pytest.approx(value, abs=1e-9), name
