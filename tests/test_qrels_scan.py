"""The C qrels reader (monitor/scoring/qrels_scan.c) gives the Python path's judgments, or
leaves it the file.

Every generated qrels file, tidy or not (comments, blank lines, tabs, CRLF and other line
breaks, signed grades, a short line, a bad or huge grade, a judgment twice, a non-ASCII id),
must load to the same evaluation set with the accelerators as without, or fail the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor import native
from monitor.errors import InputError
from monitor.scoring.evalset import load_evaluation_set
from tests.native_guard import require_speedups, speedups_switched_on  # noqa: F401

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


def outcome(path: Path) -> tuple[dict[str, dict[str, int]], str] | str:
    try:
        loaded = load_evaluation_set(path)
    except InputError as error:
        return str(error)
    return {q: dict(loaded.grades(q)) for q in loaded}, loaded.version


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
    tidy = b"# judged by hand\nq1 0 d1 2\nq1 0 d2 0\n\nq2 0 d1 -1\n"
    assert native.parse_qrels(tidy) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": -1}}
    for untidy in (b"q1 0 d1\n", b"q1 0 d1 high\n", b"q1 0 d1 1\nq1 0 d1 2\n", b"", b"# only\n"):
        assert native.parse_qrels(untidy) is None
