"""The C qrels reader (monitor/scoring/qrels_scan.c) gives the Python path's judgments, or
leaves it the file.

Every generated qrels file, tidy or not (comments, blank lines, tabs, CRLF and other line
breaks, signed grades, a short line, a bad or huge grade, a judgment twice, a non-ASCII id),
must load to the same evaluation set with the accelerators as without, or fail the same way:
the same queries in the same order, the same grades, version and grade codes, and the same
scores (the C reader's index computes the ideals in C, the Python path's with numpy).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor import native
from monitor.errors import InputError
from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import load_evaluation_set
from monitor.scoring.scorer import Scorer
from monitor.trec.selection import select_measures
from tests.support.native_guard import require_speedups, speedups_switched_on  # noqa: F401


def trec_keys(names: list[str]) -> list[MeasureKey]:
    """The batch engine's keys of trec_eval `-m` names (`rankmon eval`'s one parser)."""
    return list(select_measures(names).keys.values())


require_speedups()

GRADES = st.one_of(
    st.integers(-2, 4).map(str),
    st.sampled_from(["+3", "007", "-0", "2147483647", "2147483648", "1_0", "x", "1.5", "\u0661"]),
)


@st.composite
def qrels_texts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.integers(0, 14))
        if kind == 0:
            lines.append(draw(st.sampled_from(["", "   ", "# a comment", "#q1 0 d1 1"])))
            continue
        fields = [
            draw(st.sampled_from(["q1", "q2", "q\u00e9"])),
            "0",
            draw(st.sampled_from(["d1", "d2", "d3", "D1"])),
            draw(GRADES),
        ]
        if kind == 1:
            fields = fields[: draw(st.integers(1, 3))]
        if kind == 2:
            fields.append("extra")
        lines.append(draw(st.sampled_from([" ", "\t", " \t"])).join(fields))
    end = draw(st.sampled_from(["\n", "\r\n", "\r", "\x0c"]))
    return end.join(lines) + draw(st.sampled_from(["", end]))


KEYS = trec_keys(["ndcg", "ndcg_cut.1,3", "map", "recall.2", "Rprec", "num_rel"])
DOCS = ["d1", "d2", "d3", "D1", "u1"]


Outcome = tuple[list[str], list[list[tuple[str, int]]], str, tuple[int, ...] | None, list[float]]


def outcome(path: Path) -> Outcome | str:
    """What a user of the evaluation set sees of it, or the error that refused the file."""
    try:
        loaded = load_evaluation_set(path)
    except InputError as error:
        return str(error)
    queries = loaded.query_ids
    scorer = Scorer(loaded, KEYS, relevance_level=1)
    scores = scorer.score(queries, [DOCS[: i % 6] for i in range(len(queries))])
    return (
        queries,
        [list(loaded.grades(q).items()) for q in queries],
        loaded.version,
        loaded.code_grades,
        scores.ravel().tolist(),
    )


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=qrels_texts())
def test_the_c_reader_gives_the_python_reader_s_judgments_or_error(
    text: str, tmp_path: Path
) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(text.encode())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RANKMON_SPEEDUPS", "off")
        expected = outcome(path)
    assert outcome(path) == expected


def test_tidy_qrels_are_read_in_c_and_untidy_ones_are_left_to_python() -> None:
    tidy = b"# judged by hand\nq1 0 d1 2\nq2 0 d1 -1\n\nq1 0 d2 0\nq1 0 d7 9\n"
    index = native.speedups.JudgmentIndex.from_qrels(tidy)
    assert index is not None
    assert index.query_ids == ("q1", "q2")
    assert index.judgments() == [{"d1": 2, "d2": 0, "d7": 9}, {"d1": -1}]
    assert index.code_grades == (-1, 0, 2, 9)
    # Codes rank the grades (1: the lowest); the ideal codes are those of grades >= 0.
    assert index.codes([0, 1], [["d7", "d1", "d2", "x"], ["d1"]], -1) == (
        bytes([4, 3, 2, 0, 1]),
        [4, 1],
    )
    offsets, codes = index.ideal_codes()
    assert np.frombuffer(offsets, dtype=np.int64).tolist() == [0, 3, 3]
    assert sorted(codes) == [2, 3, 4]
    for untidy in (b"q1 0 d1\n", b"q1 0 d1 high\n", b"q1 0 d1 1\nq1 0 d1 2\n", b"", b"# only\n"):
        assert native.speedups.JudgmentIndex.from_qrels(untidy) is None


def test_qrels_with_more_than_255_grades_are_indexed_without_codes_and_score_the_same(
    tmp_path: Path,
) -> None:
    lines = [f"q{i % 7} 0 d{i} {i - 150}" for i in range(300)]
    path = tmp_path / "qrels.txt"
    path.write_text("\n".join(lines) + "\n")
    index = native.speedups.JudgmentIndex.from_qrels(path.read_bytes())
    assert index is not None and index.code_grades is None
    assert index.judgments()[0]["d7"] == 7 - 150
    loaded = load_evaluation_set(path)
    assert loaded.code_grades is None and loaded.judgment_index() is None
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RANKMON_SPEEDUPS", "off")
        expected = outcome(path)
    assert outcome(path) == expected
