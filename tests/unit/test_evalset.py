"""Loading evaluation sets: TREC qrels and JSON Lines, versions, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.errors import InputError
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set

QRELS = """\
# a comment, then a blank line

q1 0 d1 2
q1 0 d2 0
q1 0 d3 -1
q2 Q0 d1 3
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_trec_qrels_load_with_comments_blank_lines_and_negative_grades(tmp_path: Path) -> None:
    evaluation_set = load_evaluation_set(write(tmp_path, "qrels.txt", QRELS))
    assert len(evaluation_set) == 2
    assert dict(evaluation_set.grades("q1")) == {"d1": 2, "d2": 0, "d3": -1}
    assert evaluation_set.ideal_grades("q1") == (2, 0)
    assert evaluation_set.num_rel("q1") == 1
    assert evaluation_set.num_rel("q1", level=0) == 2
    assert evaluation_set.num_rel("q2", level=3) == 1
    assert evaluation_set.path == str(tmp_path / "qrels.txt")
    assert "q2" in evaluation_set and "q3" not in evaluation_set


def test_json_lines_load_the_same_judgments_as_trec_qrels(tmp_path: Path) -> None:
    lines = [
        '{"query_id": "q2", "doc_id": "d1", "grade": 3}',
        "",
        '{"query_id": "q1", "doc_id": "d3", "grade": -1}',
        '{"query_id": "q1", "doc_id": "d1", "grade": 2}',
        '{"query_id": "q1", "doc_id": "d2", "grade": 0}',
    ]
    from_json = load_evaluation_set(write(tmp_path, "qrels.jsonl", "\n".join(lines)))
    from_trec = load_evaluation_set(write(tmp_path, "qrels.txt", QRELS))
    assert from_json.version == from_trec.version
    assert dict(from_json.grades("q1")) == dict(from_trec.grades("q1"))


def test_version_is_stable_under_reordering_and_changes_with_a_grade(tmp_path: Path) -> None:
    original = load_evaluation_set(write(tmp_path, "a.txt", QRELS))
    reordered_lines = list(reversed(QRELS.splitlines()))
    reordered = load_evaluation_set(write(tmp_path, "b.txt", "\n".join(reordered_lines)))
    regraded = load_evaluation_set(write(tmp_path, "c.txt", QRELS.replace("d2 0", "d2 1")))
    assert reordered.version == original.version
    assert regraded.version != original.version
    assert len(original.version) == 12
    assert int(original.version, 16) >= 0


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 fields"),
        ("q1 0 d1 1\n\nq1 0 d2 1.5\n", 3, "grade '1.5' is not an integer"),
        ("q1 0 d1 x\n", 1, "grade 'x' is not an integer"),
        ("q1 0 d1 4294967296\n", 1, "grade 4294967296 is out of range"),
        ("q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 2\n", 3, "duplicate judgment for query 'q1' doc 'd1'"),
    ],
)
def test_bad_trec_line_names_file_line_and_problem(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = write(tmp_path, "qrels.txt", text)
    with pytest.raises(InputError) as caught:
        load_evaluation_set(path)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}:{line}: {problem}")


def test_duplicate_judgment_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 2\n")
    with pytest.raises(InputError, match=r"qrels.txt:3: .*\(first at line 1\)"):
        load_evaluation_set(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"query_id": "q1", "doc_id": "d1", "grade": 1', "invalid JSON"),
        ('["q1", "d1", 1]', "expected a JSON object"),
        ('{"query_id": "q1", "grade": 1}', "missing field 'doc_id'"),
        ('{"query_id": 7, "doc_id": "d1", "grade": 1}', "must be non-empty strings"),
        ('{"query_id": "q1", "doc_id": "d1", "grade": 1.0}', "grade 1.0 is not an integer"),
        ('{"query_id": "q1", "doc_id": "d1", "grade": true}', "grade True is not an integer"),
    ],
)
def test_bad_json_line_names_file_line_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    good = '{"query_id": "q0", "doc_id": "d0", "grade": 1}\n'
    path = write(tmp_path, "qrels.jsonl", good + text + "\n")
    with pytest.raises(InputError) as caught:
        load_evaluation_set(path)
    assert caught.value.line == 2
    assert problem in caught.value.problem


def test_missing_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.txt"
    with pytest.raises(InputError, match=r"nowhere\.txt: cannot read the judgments: No such file"):
        load_evaluation_set(path)


def test_file_without_judgments_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no judgments"):
        load_evaluation_set(write(tmp_path, "qrels.txt", "# only a comment\n\n"))


def test_from_judgments_drops_queries_without_judgments_and_checks_grades() -> None:
    evaluation_set = EvaluationSet.from_judgments({"q1": {"d1": 1}, "q2": {}})
    assert evaluation_set.query_ids == ["q1"]
    assert evaluation_set.num_judgments == 1
    with pytest.raises(ValueError, match="is not a 32-bit integer"):
        EvaluationSet.from_judgments({"q1": {"d1": 1.5}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="is not a 32-bit integer"):
        EvaluationSet.from_judgments({"q1": {"d1": 2**31}})


def test_file_that_is_not_utf8_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q1 0 d\xff 1\n")
    with pytest.raises(InputError, match="cannot read"):
        load_evaluation_set(path)


def test_grades_may_carry_a_sign_but_not_underscores(tmp_path: Path) -> None:
    evaluation_set = load_evaluation_set(write(tmp_path, "q.txt", "q 0 a +2\nq 0 b -1\n"))
    assert dict(evaluation_set.grades("q")) == {"a": 2, "b": -1}
    with pytest.raises(InputError, match="grade '1_0' is not an integer"):
        load_evaluation_set(write(tmp_path, "r.txt", "q 0 a 1_0\n"))
