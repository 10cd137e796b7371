"""The demo's evaluation set: deterministic per seed, realistic grades, a corpus beyond it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from monitor.demo.judges import DemoJudges
from monitor.demo.synthetic import GRADE_SHARES, generate_corpus
from monitor.judging.desk import audit_draw
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set


def test_same_seed_gives_the_same_evaluation_set() -> None:
    first = generate_corpus(11)
    second = generate_corpus(11)
    assert first.judgments == second.judgments
    assert first.unjudged == second.unjudged


def test_different_seeds_give_different_judgments() -> None:
    assert generate_corpus(1).judgments != generate_corpus(2).judgments


def test_a_few_hundred_queries_with_about_twenty_judged_documents_each() -> None:
    corpus = generate_corpus(3)
    sizes = [len(docs) for docs in corpus.judgments.values()]
    assert len(corpus.query_ids) == 300
    assert min(sizes) >= 15
    assert max(sizes) <= 25
    assert 19 <= sum(sizes) / len(sizes) <= 21


def test_grades_follow_the_stated_distribution() -> None:
    corpus = generate_corpus(5)
    counts = Counter(g for docs in corpus.judgments.values() for g in docs.values())
    total = sum(counts.values())
    for grade, share in enumerate(GRADE_SHARES):
        # The forced grade-2/3 document per query shifts the shares by well under 0.03.
        assert abs(counts[grade] / total - share) < 0.03
    assert set(counts) == {0, 1, 2, 3}


def test_every_query_has_a_highly_relevant_document() -> None:
    corpus = generate_corpus(9, queries=500)
    assert all(max(docs.values()) >= 2 for docs in corpus.judgments.values())


def test_unjudged_documents_are_outside_the_judgments_and_ids_never_repeat() -> None:
    corpus = generate_corpus(4)
    every_doc = [doc for qid in corpus.query_ids for doc in corpus.candidates(qid)]
    assert len(every_doc) == len(set(every_doc))
    for qid in corpus.query_ids:
        assert corpus.unjudged[qid]
        assert not set(corpus.unjudged[qid]) & set(corpus.judgments[qid])


def test_qrels_file_lists_every_judgment_in_trec_format(tmp_path: Path) -> None:
    corpus = generate_corpus(6, queries=20)
    path = corpus.write_qrels(tmp_path / "qrels.txt")
    read: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, iteration, doc, grade = line.split()
        assert iteration == "0"
        read.setdefault(qid, {})[doc] = int(grade)
    assert read == corpus.judgments


def test_the_monitor_loads_the_written_qrels_as_the_same_evaluation_set(tmp_path: Path) -> None:
    corpus = generate_corpus(8)
    loaded = load_evaluation_set(corpus.write_qrels(tmp_path / "qrels.txt"))
    assert loaded.version == EvaluationSet.from_judgments(corpus.judgments).version
    assert len(loaded) == 300


def test_a_demo_judge_grades_one_above_the_truth_and_people_audit_whole_queries() -> None:
    corpus = generate_corpus(7, queries=40)
    judges = DemoJudges(corpus, "127.0.0.1:1", tojudge_topic="t", judgments_topic="j")
    # the judging page's own draw, so a person at /judge gets the same audit work
    assert judges.audited == {q for q in corpus.query_ids if audit_draw(q) < 0.05}
    query = corpus.query_ids[0]
    for doc in corpus.candidates(query):
        truth = corpus.true_grade(query, doc)
        assert truth == corpus.true_grade(query, doc)  # the same every time
        assert judges.grade_of_llm(query, doc) == min(3, truth + 1)
        if doc in corpus.judgments[query]:
            assert truth == corpus.judgments[query][doc]
