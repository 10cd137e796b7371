"""The demo's synthetic ranker: valid events, a known share of bad ones, a known drop."""

from __future__ import annotations

import statistics
import threading
from collections import Counter

import orjson
import pytrec_eval

from monitor.demo.ranker import ModelVersion, SyntheticRanker, serve
from monitor.demo.scenario import ALERT_FLOOR, Scenario
from monitor.demo.synthetic import SyntheticCorpus, generate_corpus
from monitor.ingest.events import RankingEvent, Rejection, decode_event
from monitor.testing.clock import FakeClock

START_MS = 1_800_000_000_000
DEGRADE_MS = START_MS + 20_000


def _ndcg10(corpus: SyntheticCorpus, rankings: dict[str, list[str]]) -> float:
    """Mean nDCG@10 over the ranked queries, by trec_eval itself (pytrec_eval)."""
    qrels = {qid: dict(docs) for qid, docs in corpus.judgments.items() if qid in rankings}
    run = {qid: {doc: float(-i) for i, doc in enumerate(docs)} for qid, docs in rankings.items()}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return statistics.mean(m["ndcg_cut_10"] for m in per_query.values())


def _events(ranker: SyntheticRanker, count: int, now_ms: int) -> list[tuple[bytes, bytes]]:
    return [ranker.next_event(now_ms) for _ in range(count)]


def test_valid_events_pass_the_monitors_decoder_and_are_keyed_by_query() -> None:
    corpus = generate_corpus(1)
    ranker = SyntheticRanker(
        corpus, [ModelVersion("v1", 0.8)], seed=2, bad_share=0, duplicate_share=0
    )
    for key, value in _events(ranker, 200, START_MS):
        event = decode_event(value, record_timestamp_ms=0, now_ms=START_MS, max_depth=20)
        assert isinstance(event, RankingEvent)
        assert key == event.query_id.encode()
        assert event.query_id in corpus.judgments
        assert set(event.ranking) <= set(corpus.candidates(event.query_id))
        assert event.event_time_ms == START_MS
        assert event.segment == {"model": "v1"}


def test_event_ids_are_unique_and_popular_queries_repeat() -> None:
    ranker = SyntheticRanker(
        generate_corpus(1), [ModelVersion("v1", 0.8)], seed=3, duplicate_share=0
    )
    events = [orjson.loads(v) for _, v in _events(ranker, 2000, START_MS) if v.endswith(b"}")]
    assert len({e["event_id"] for e in events}) == len(events)
    busiest = Counter(e["query_id"] for e in events).most_common(1)[0][1]
    assert busiest > 50  # Zipf head: far above the 2000 / 300 of a uniform draw


def test_bad_and_duplicate_events_come_in_their_stated_shares() -> None:
    corpus = generate_corpus(1)
    ranker = SyntheticRanker(
        corpus, [ModelVersion("v1", 0.8)], seed=4, bad_share=0.05, duplicate_share=0.05
    )
    records = _events(ranker, 4000, START_MS)
    duplicates = len(records) - len(set(records))
    outcomes: Counter[str] = Counter()
    for _, value in set(records):
        event = decode_event(value, record_timestamp_ms=0, now_ms=START_MS)
        if isinstance(event, Rejection):
            outcomes[event.reason.value] += 1
        elif event.query_id not in corpus.judgments:
            outcomes["unknown_query"] += 1
    assert 150 <= duplicates <= 250
    assert 150 <= outcomes.total() <= 250
    assert set(outcomes) == {"invalid_json", "empty_ranking", "unknown_query"}
    assert min(outcomes.values()) > 30


def test_higher_quality_ranks_relevant_documents_higher() -> None:
    corpus = generate_corpus(5)
    ranker = SyntheticRanker(corpus, [ModelVersion("v", 0.0)], seed=6)
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
    ranker = SyntheticRanker(corpus, [v1, v2], seed=8, bad_share=0, duplicate_share=0)
    by_phase: dict[tuple[str, bool], dict[str, list[str]]] = {}
    for now_ms in (DEGRADE_MS - 1, DEGRADE_MS):
        for _, value in _events(ranker, 3000, now_ms):
            event = orjson.loads(value)
            phase = by_phase.setdefault((event["segment"]["model"], now_ms >= DEGRADE_MS), {})
            phase[event["query_id"]] = event["ranking"]
    v1_before = _ndcg10(corpus, by_phase["v1", False])
    v1_after = _ndcg10(corpus, by_phase["v1", True])
    v2_before = _ndcg10(corpus, by_phase["v2", False])
    v2_after = _ndcg10(corpus, by_phase["v2", True])
    assert v1_before - v1_after > 0.25
    assert abs(v2_before - v2_after) < 0.03
    assert v1_after < ALERT_FLOOR - 0.1
    assert v2_after > ALERT_FLOOR + 0.1
    assert v1_before > ALERT_FLOOR + 0.1


class _TickingClock(FakeClock):
    """A fake clock that moves 7 ms at every reading: time passes as the loop runs."""

    def now_ms(self) -> int:
        self.advance(7)
        return super().now_ms()


def test_serve_keeps_the_configured_rate_of_clock_time_until_stopped() -> None:
    clock = _TickingClock(START_MS)
    stop = threading.Event()
    sent: list[bytes] = []

    def send(key: bytes, value: bytes) -> None:
        sent.append(key)
        if clock.now_ms() >= START_MS + 10_000:
            stop.set()

    ranker = SyntheticRanker(generate_corpus(1, queries=10), [ModelVersion("v1", 0.8)])
    count = serve(ranker, send, stop, rate=100, clock=clock, tick_seconds=0)
    assert count == len(sent)
    # 100 events/s over 10 s of clock time, however the sends were bunched.
    assert 990 <= count <= 1010
