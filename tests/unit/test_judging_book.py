"""The judging loop's parts without a monitor: which pairs are asked for first and how often,
and what a judgment read back does to the evaluation set."""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest

from monitor.alerting.baseline import BaselineWindow
from monitor.cli import main
from monitor.judging.judgments import JudgmentBook, Refusal, decode_judgment
from monitor.judging.pairs import HOUR_MS, PairQueue
from monitor.judging.rescore import JudgedRescore
from monitor.kafka.consumer import SourceRecord
from monitor.limits import RecordLimits
from monitor.scoring.catalog import monitor_keys
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.windows.samples import RankingSamples
from monitor.windows.summary import WindowSummary

LIMITS = RecordLimits(max_id_bytes=256)
NOW_MS = 1_767_225_600_000

BASE = EvaluationSet.from_judgments(
    {"q1": {"a": 3, "b": 1, "c": 0}, "q2": {"x": 2, "y": 0}}, "qrels.txt"
)


def summary(query_means: dict[str, dict[str, float]], start_ms: int = 0) -> WindowSummary:
    return WindowSummary(
        window="10s", start_ms=start_ms, end_ms=start_ms + 10_000, segment=(),
        evaluation_set_version=BASE.version, events=len(query_means),
        queries=len(query_means), evaluation_set_queries=2, means={}, sums={},
        event_means={}, query_means=query_means,
    )  # fmt: skip


def bounds(lower: float, upper: float) -> dict[str, float]:
    return {"ndcg@10:linear": lower, "ndcg_upper@10:linear": upper}


def queue(budget: int = 100, max_pending: int = 100) -> PairQueue:
    return PairQueue(10, "linear", budget, max_pending)


RANKINGS = {"q1": ["new1", "a", "new2", "b"], "q2": ["x", "y", "new3"]}


def note(pairs: PairQueue, window: WindowSummary) -> int:
    return pairs.note_window(window, RANKINGS.get, lambda q: BASE.grades(q) if q in BASE else None)


def test_each_unjudged_document_gets_its_share_of_its_querys_gap_by_rank_discount() -> None:
    pairs = queue()
    named = note(pairs, summary({"q1": bounds(0.5, 0.9), "q2": bounds(0.8, 0.9)}))
    assert named == 3
    w1, w3 = 1 / math.log2(2), 1 / math.log2(4)
    got = {key: pair.priority for key, pair in pairs.pending.items()}
    assert got[("q1", "new1")] == pytest.approx(0.4 * w1 / (w1 + w3) / 2)
    assert got[("q1", "new2")] == pytest.approx(0.4 * w3 / (w1 + w3) / 2)
    assert got[("q2", "new3")] == pytest.approx(0.1 / 2)
    assert [p.doc_id for p in pairs.due(0)] == ["new1", "new2", "new3"]  # highest first


def test_a_pair_is_asked_for_once_whatever_windows_name_it_again() -> None:
    pairs = queue()
    note(pairs, summary({"q1": bounds(0.5, 0.9)}))
    note(pairs, summary({"q1": bounds(0.5, 0.9)}, start_ms=10_000))
    pending = pairs.pending[("q1", "new1")]
    assert (pending.served, pending.first_seen_ms, pending.rank) == (2, 0, 1)
    assert len(pairs.due(0)) == 2
    note(pairs, summary({"q1": bounds(0.5, 0.9)}, start_ms=20_000))
    assert pairs.due(0) == []
    pairs.was_asked(("q2", "new3"), 0)  # another instance asked for it: read back
    note(pairs, summary({"q2": bounds(0.5, 0.9)}))
    assert pairs.pending == {}


def test_the_budget_counts_every_instances_pairs_of_the_trailing_hour() -> None:
    pairs = queue(budget=2)
    pairs.was_asked(("q9", "old"), 1000)  # asked by another instance a moment ago
    note(pairs, summary({"q1": bounds(0.5, 0.9), "q2": bounds(0.8, 0.9)}))
    assert [p.doc_id for p in pairs.due(2000)] == ["new1"]
    assert pairs.due(3000) == []
    assert [p.doc_id for p in pairs.due(1000 + HOUR_MS)] == ["new2"]
    assert [p.doc_id for p in pairs.due(2000 + HOUR_MS)] == ["new3"]


def test_past_max_pending_the_least_useful_pairs_leave() -> None:
    pairs = queue(max_pending=2)
    note(pairs, summary({"q1": bounds(0.5, 0.9), "q2": bounds(0.8, 0.9)}))
    assert set(pairs.pending) == {("q1", "new1"), ("q1", "new2")}
    assert pairs.dropped == 1


def test_a_query_without_a_gap_still_names_its_unjudged_documents_last() -> None:
    # A query with nothing relevant judged has upper = lower = 0: its unjudged documents used
    # to be never asked for. The priority orders, it does not exclude.
    pairs = queue(budget=10)
    named = note(pairs, summary({"q1": bounds(0.5, 0.5), "q2": bounds(0.2, 0.9)}))
    assert named == 3
    assert {key: pair.priority for key, pair in pairs.pending.items()}[("q1", "new1")] == 0.0
    due = [(p.query_id, p.doc_id) for p in pairs.due(0)]
    assert due[0] == ("q2", "new3") and set(due[1:]) == {("q1", "new1"), ("q1", "new2")}
    assert note(queue(), summary({"q2": bounds(math.nan, math.nan)})) == 1  # no bounds at all


def record(value: object, offset: int = 0) -> SourceRecord:
    return SourceRecord("events.judgments", 0, offset, 1234, None, orjson.dumps(value))


def judgment(doc: str, grade: int, source: str = "human", query: str = "q1") -> SourceRecord:
    return record({"query_id": query, "doc_id": doc, "grade": grade, "source": source})


def add(book: JudgmentBook, value: SourceRecord) -> str:
    decoded = decode_judgment(value, LIMITS, NOW_MS)
    outcome = decoded if isinstance(decoded, Refusal) else book.add(decoded)
    return outcome.reason if isinstance(outcome, Refusal) else outcome


def test_accepted_judgments_make_a_new_version_with_the_files_judgments() -> None:
    book = JudgmentBook(BASE)
    assert book.merged() is BASE
    assert add(book, judgment("new1", 3)) == "accepted"
    merged = book.merged()
    assert merged.version != BASE.version
    assert dict(merged.grades("q1")) == {"a": 3, "b": 1, "c": 0, "new1": 3}
    assert merged.path == BASE.path
    assert add(book, judgment("new1", 3)) == "accepted"
    assert book.merged() is merged  # the same grade again changes nothing


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"{not json", "invalid_judgment"),
        ({"query_id": "q1", "doc_id": "d", "grade": 1}, "invalid_judgment"),
        ({"query_id": "q1", "doc_id": "d", "grade": 1.5, "source": "human"}, "invalid_judgment"),
        ({"query_id": "q1", "doc_id": "", "grade": 1, "source": "human"}, "invalid_judgment"),
        ({"query_id": "q7", "doc_id": "d", "grade": 1, "source": "human"}, "unknown_query"),
        ({"query_id": "q1", "doc_id": "d", "grade": 7, "source": "human"}, "unknown_grade"),
        ({"query_id": "q1", "doc_id": "a", "grade": 1, "source": "human"}, "conflicting_grade"),
    ],
)
def test_a_bad_judgment_is_refused_with_its_reason_and_changes_nothing(
    value: object, reason: str
) -> None:
    book = JudgmentBook(BASE)
    raw = SourceRecord("j", 0, 0, 0, None, value) if isinstance(value, bytes) else record(value)
    assert add(book, raw) == reason
    assert book.merged() is BASE


def test_the_grades_allowed_are_the_files_unless_the_config_names_them() -> None:
    assert add(JudgmentBook(BASE), judgment("new1", 4)) == "unknown_grade"
    assert add(JudgmentBook(BASE, (0, 1, 2, 3, 4)), judgment("new1", 4)) == "accepted"


def test_a_persons_grade_outranks_a_models_and_the_models_is_kept_for_the_audit() -> None:
    book = JudgmentBook(BASE)
    assert add(book, judgment("new1", 3, "llm:m@p1")) == "accepted"
    assert add(book, judgment("new1", 1, "llm:m@p1")) == "accepted"  # its own correction
    assert book.merged().grades("q1")["new1"] == 1
    assert add(book, judgment("new1", 2, "llm:other@p1")) == "conflicting_grade"
    assert add(book, judgment("new1", 0, "human")) == "accepted"
    assert book.merged().grades("q1")["new1"] == 0
    assert add(book, judgment("new1", 3, "llm:m@p2")) == "audit"
    assert add(book, judgment("a", 1, "llm:m@p2")) == "audit"  # beside the file's grade
    assert add(book, judgment("new1", 2, "human:ann")) == "conflicting_grade"
    audit = [(row["doc_id"], row["grade"]) for row in book.provenance() if row.get("audit")]
    assert sorted(audit) == [("a", 1), ("new1", 1), ("new1", 3)]


def test_a_reloaded_file_that_grades_a_judged_pair_wins() -> None:
    book = JudgmentBook(BASE)
    add(book, judgment("new1", 3, "llm:m@p1"))
    add(book, judgment("new2", 2))
    reloaded = EvaluationSet.from_judgments(
        {"q1": {"a": 3, "b": 1, "c": 0, "new1": 0}, "q2": {"x": 2, "y": 0}}, "qrels.txt"
    )
    book.rebase(reloaded)
    assert dict(book.merged().grades("q1")) == {"a": 3, "b": 1, "c": 0, "new1": 0, "new2": 2}
    assert any(row.get("audit") and row["doc_id"] == "new1" for row in book.provenance())


def test_a_rescored_baseline_window_is_what_its_rankings_score_under_the_new_judgments() -> None:

    keys = monitor_keys((10,), ("linear",))
    samples = RankingSamples(10_000, 10, 100)
    for query, ranking in RANKINGS.items():
        key = samples.key((), query, 500)
        assert key is not None
        samples.keep(key, ranking)
    book = JudgmentBook(BASE)
    add(book, judgment("new1", 3))
    judged = book.merged()
    rescore = JudgedRescore(samples, lambda s: Scorer(s, keys), 10_000)
    rescore.made(BASE, BASE)
    rescore.made(judged, BASE)

    def scores(evaluation_set: EvaluationSet, measure: str) -> dict[str, float]:
        scorer = Scorer(evaluation_set, keys)
        column = [str(k) for k in keys].index(measure)
        rows = scorer.score(list(RANKINGS), list(RANKINGS.values()))
        return {q: float(rows[n, column]) for n, q in enumerate(RANKINGS)}

    for measure in ("ndcg@10:linear", "precision@10"):
        before = scores(BASE, measure)
        window = BaselineWindow(0, sum(before.values()) / 2, before)
        rescored = rescore(window, (), measure, BASE.version, judged.version)
        assert rescored is not None
        assert rescored.query_values == pytest.approx(scores(judged, measure))
        assert rescored.query_values["q2"] == before["q2"]  # its grades did not change
    window = BaselineWindow(0, 0.5, {"q1": 0.4, "q2": 0.6})
    without_cutoff = rescore(window, (), "map", BASE.version, judged.version)
    assert without_cutoff is not None and dict(without_cutoff.query_values) == {"q2": 0.6}
    reloaded = EvaluationSet.from_judgments({"q1": {"a": 1}, "q2": {"x": 1}}, "qrels.txt")
    rescore.made(reloaded, reloaded)  # a file reload: another lineage, starts afresh
    assert rescore(window, (), "ndcg@10:linear", judged.version, reloaded.version) is None


def test_judgments_export_without_a_broker_says_which_topic_it_could_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\n")
    (tmp_path / "c.yaml").write_text(
        'kafka: {bootstrap_servers: ["127.0.0.1:1"], topic: events}\n'
        "evaluation_set: {path: qrels.txt}\njudging: {enabled: true}\n"
    )
    output = tmp_path / "merged.qrels"
    argv = ["judgments", "export", "--config", str(tmp_path / "c.yaml"), "--output", str(output)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("rankmon judgments: events.judgments: cannot be read")
    assert not output.exists()
