"""Every grade has a source: the file's (or its line's), the judging loop's judgments', the
events' inline ones; the measures can be restricted to sources, and judged@k is split by them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from monitor.config.loader import load_config
from monitor.declare import read_settings
from monitor.errors import InputError
from monitor.judging.judgments import JudgmentBook, decode_judgment
from monitor.kafka.consumer import SourceRecord
from monitor.kafka.settings import KafkaConfig
from monitor.limits import RecordLimits
from monitor.replay.replayer import Replayer
from monitor.replay.settings import ReplayConfig
from monitor.scoring.catalog import monitor_keys
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.scorer import Scorer
from monitor.scoring.sources import MAX_SOURCES, OTHER_SOURCE, judged_by_source
from monitor.sections import ConfigSection
from monitor.service.wiring import inline_fills

LIMITS = RecordLimits(max_id_bytes=256)
NOW_MS = 1_767_225_600_000

LINES = [
    {"query_id": "q1", "doc_id": "a", "grade": 3},
    {"query_id": "q1", "doc_id": "b", "grade": 1, "source": "llm:m@p1"},
    {"query_id": "q2", "doc_id": "x", "grade": 2, "source": "human:ann"},
    {"query_id": "q2", "doc_id": "y", "grade": 0},
]


def jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "qrels.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in LINES))
    return path


def test_a_grade_has_its_lines_source_or_else_the_files(tmp_path: Path) -> None:
    loaded = load_evaluation_set(jsonl(tmp_path), source="human:team")
    assert loaded.source_of("q1", "a") == "human:team"
    assert loaded.source_of("q1", "b") == "llm:m@p1"
    assert loaded.source_of("q2", "x") == "human:ann"
    assert loaded.source_of("q1", "zzz") is None
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 a 3\nq1 0 b 1\n")
    assert load_evaluation_set(trec).source_of("q1", "b") == "qrels"


def test_keeping_sources_restricts_the_grades_and_so_the_measures(tmp_path: Path) -> None:
    kept = load_evaluation_set(jsonl(tmp_path), keep=("qrels", "human:ann"))
    assert dict(kept.grades("q1")) == {"a": 3}
    assert dict(kept.grades("q2")) == {"x": 2, "y": 0}
    everything = load_evaluation_set(jsonl(tmp_path))
    assert kept.version != everything.version
    with pytest.raises(InputError, match="holds no judgments of the sources kept"):
        load_evaluation_set(jsonl(tmp_path), keep=("nobody",))
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 a 3\n")
    with pytest.raises(InputError, match="its grades are 'qrels'"):
        load_evaluation_set(trec, keep=("human",))


def judgment(doc: str, grade: int, source: str) -> SourceRecord:
    value = {"query_id": "q1", "doc_id": doc, "grade": grade, "source": source}
    return SourceRecord("j", 0, 0, 0, None, orjson.dumps(value))


def test_the_judging_loops_judgments_of_sources_not_kept_do_not_score(tmp_path: Path) -> None:
    base = load_evaluation_set(jsonl(tmp_path), keep=("qrels", "human", "human:ann"))
    book = JudgmentBook(base, (0, 1, 2, 3), keep=("qrels", "human", "human:ann"))
    for record in (judgment("new1", 3, "llm:m@p1"), judgment("new2", 2, "human")):
        decoded = decode_judgment(record, LIMITS, NOW_MS)
        assert not isinstance(decoded, tuple) and book.add(decoded) == "accepted"
    merged = book.merged()
    assert dict(merged.grades("q1")) == {"a": 3, "new2": 2}
    assert merged.source_of("q1", "new2") == "human"
    assert merged.source_of("q1", "a") == "qrels"


def test_judged_at_k_splits_by_source_and_adds_up_to_judged_at_k() -> None:
    grades = {"q1": {"a": 3, "b": 1, "c": 0}, "q2": {"x": 2}}
    sources = {("q1", "b"): "llm:m@p1", ("q2", "x"): "human"}
    evaluation_set = EvaluationSet(grades, None, sources=sources)
    rankings = [("q1", ["a", "new", "b", "c"]), ("q2", ["x", "n1"]), ("q9", ["z"])]
    split = judged_by_source(rankings, evaluation_set, 4)
    assert split == pytest.approx(
        {"qrels": (2 / 4 + 0) / 2, "llm:m@p1": 1 / 4 / 2, "human": 1 / 2 / 2}
    )
    keys = monitor_keys((4,), ("linear",))
    column = [str(k) for k in keys].index("judged@4")
    judged = Scorer(evaluation_set, keys).score(["q1", "q2"], [["a", "new", "b", "c"], ["x", "n1"]])
    assert sum(split.values()) == pytest.approx(judged[:, column].mean())


def test_past_the_cap_the_least_present_sources_are_other() -> None:
    docs = {f"d{i}": 1 for i in range(MAX_SOURCES + 5)}
    sources = {("q", f"d{i}"): f"llm:m{i:02d}@p" for i in range(MAX_SOURCES + 5)}
    evaluation_set = EvaluationSet({"q": docs}, None, sources=sources)
    split = judged_by_source([("q", list(docs))], evaluation_set, len(docs))
    assert len(split) == MAX_SOURCES and split[OTHER_SOURCE] == pytest.approx(6 / len(docs))


def test_inline_judgments_fill_only_while_their_source_scores(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\n")
    base = "kafka: {topic: events}\nevaluation_set: {path: qrels.txt, sources: SOURCES}\n"
    base += "judgments: {inline: fill}\n"
    for sources, fills in (("[]", True), ("[qrels, inline]", True), ("[qrels]", False)):
        (tmp_path / "c.yaml").write_text(base.replace("SOURCES", sources))
        assert inline_fills(load_config(tmp_path / "c.yaml", environ={})) is fills


class NoPublisher:
    """A replay's publisher that is never reached: the test only builds the replayer."""

    def send(self, key: bytes, value: bytes) -> None:
        raise AssertionError("nothing is replayed here")

    def begin(self, marker: tuple[bytes, bytes]) -> None:
        raise AssertionError("nothing is replayed here")

    def end(self, marker: Callable[[int], tuple[bytes, bytes]]) -> None:
        raise AssertionError("nothing is replayed here")


def test_a_replay_asks_only_the_queries_whose_grades_score(tmp_path: Path) -> None:
    qrels = jsonl(tmp_path)  # q1: the file's and a model's grades; q2: a person's and the file's
    lines = [{"query_id": "q3", "doc_id": "m", "grade": 1, "source": "llm:m@p1"}]
    with qrels.open("ab") as file:
        file.write(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tfirst\nq2\tsecond\nq3\tthird\n")
    section = {"topics": str(topics), "ranker": {"url": "http://127.0.0.1:1/search"}}
    settings = read_settings(ReplayConfig, ConfigSection(section, "replay", {}))

    def replayed(keep: tuple[str, ...]) -> list[str]:
        replayer = Replayer(
            settings, KafkaConfig(topic="t"), qrels, publisher=NoPublisher(), keep=keep
        )
        return [query.query_id for query in replayer.queries]

    assert replayed(()) == ["q1", "q2", "q3"]
    assert replayed(("qrels", "human:ann")) == ["q1", "q2"]  # q3 only a model graded
