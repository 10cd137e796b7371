"""The demo's synthetic ranker: quality orders the rankings, and v1's drop is a known one."""

from __future__ import annotations

import statistics

import pytrec_eval

from monitor.demo.ranker import ModelVersion, SyntheticRanker
from monitor.demo.scenario import ALERT_FLOOR, Scenario
from monitor.demo.synthetic import SyntheticCorpus, generate_corpus

START_MS = 1_800_000_000_000
DEGRADE_MS = START_MS + 20_000


def _ndcg10(corpus: SyntheticCorpus, rankings: dict[str, list[str]]) -> float:
    """Mean nDCG@10 over the ranked queries, by trec_eval itself (pytrec_eval)."""
    qrels = {qid: dict(docs) for qid, docs in corpus.judgments.items() if qid in rankings}
    run = {qid: {doc: float(-i) for i, doc in enumerate(docs)} for qid, docs in rankings.items()}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return statistics.mean(m["ndcg_cut_10"] for m in per_query.values())


def test_higher_quality_ranks_relevant_documents_higher() -> None:
    corpus = generate_corpus(5)
    ranker = SyntheticRanker(corpus, seed=6)
    scores = [
        _ndcg10(corpus, {qid: ranker.rank(qid, quality) for qid in corpus.query_ids})
        for quality in (0.0, 0.3, 0.6, 0.8)
    ]
    assert scores == sorted(scores)
    assert scores[0] < 0.25  # a random order of ~50 candidates
    assert scores[-1] > 0.75


def test_v1_loses_a_third_of_its_ndcg_at_the_known_time_and_only_it_crosses_the_floor() -> None:
    corpus = generate_corpus(7)
    v1, v2 = Scenario(degrade_after_s=20).versions(START_MS)
    ranker = SyntheticRanker(corpus, seed=8)

    def ndcg(version: ModelVersion, now_ms: int) -> float:
        quality = version.quality_at(now_ms)
        return _ndcg10(corpus, {q: ranker.rank(q, quality) for q in corpus.query_ids})

    v1_before, v1_after = ndcg(v1, DEGRADE_MS - 1), ndcg(v1, DEGRADE_MS)
    v2_before, v2_after = ndcg(v2, DEGRADE_MS - 1), ndcg(v2, DEGRADE_MS)
    assert v1_before - v1_after > 0.25
    assert abs(v2_before - v2_after) < 0.03
    assert v1_after < ALERT_FLOOR - 0.1
    assert v2_after > ALERT_FLOOR + 0.1
    assert v1_before > ALERT_FLOOR + 0.1
