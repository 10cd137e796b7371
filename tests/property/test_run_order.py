"""The C run parser (monitor/trec/run_order.c) gives the Python path's run, or leaves it the file.

Every generated run file, tidy or not (blank lines, extra columns, tabs and carriage returns,
ties, scores as doubles or C floats, odd score tokens, a document twice, a short line, a
non-ASCII docno), must give the same `Run` with the accelerators as without, or the same error.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import native
from monitor.errors import InputError
from monitor.trec.runfile import Run, ScorePrecision, parse_run
from tests.support.native_guard import require_speedups, speedups_switched_on  # noqa: F401

require_speedups()

SCORES = st.one_of(
    st.integers(-3, 3).map(str),
    st.sampled_from(["0.3", "0.30000000000000004", "1e3", "-0.0", "+.5", "5.", "1e-400"]),
    # 15 digits take the C parser's exact fast path, 16 and more strtod.
    st.sampled_from(["0.123456789012345", "123456789012345", "1234567890123456", "9.9999e2"]),
    st.from_regex(r"-?[0-9]{1,18}\.[0-9]{0,18}", fullmatch=True),
    st.sampled_from(["nan", "inf", "1_0", "0x10", "1e", "two", ".", "--1", "\u0661"]),
)
DOCS = st.sampled_from(["a", "b", "B", "d9", "d10", "d1", "ab", "é"])
SPACE = st.sampled_from([" ", "\t", "  ", " \r", "\f"])


@st.composite
def run_texts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 20))
        if kind == 0:
            lines.append("")
            continue
        fields = [
            draw(st.sampled_from(["q1", "q2", "q10"])),
            "Q0",
            draw(DOCS),
            str(draw(st.integers(0, 9))),
            draw(SCORES),
            draw(st.sampled_from(["tagA", "tagB"])),
        ]
        if kind == 1:
            fields = fields[: draw(st.integers(1, 5))]
        if kind == 2:
            fields.append("junk")
        gap = draw(SPACE)
        lines.append(gap.join(fields))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


def outcome(text: str, precision: ScorePrecision, depth: int | None) -> Run | str:
    try:
        run = parse_run(text.encode(), "run.txt", score_precision=precision, max_retrieved=depth)
    except InputError as error:
        return str(error)
    return Run(run.path, run.tag, dict(run.rankings))


@settings(max_examples=200, deadline=None)
@given(run_texts(), st.sampled_from(["float64", "float32"]), st.sampled_from([None, 0, 2]))
def test_the_c_parser_gives_the_python_parser_s_run_or_error(
    text: str, precision: ScorePrecision, depth: int | None
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RANKMON_SPEEDUPS", "off")
        expected = outcome(text, precision, depth)
    assert outcome(text, precision, depth) == expected


def test_a_tidy_run_is_ordered_in_c_and_an_untidy_one_is_left_to_python() -> None:
    tidy = b"q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.5 t\nq2 Q0 c 1 2 t\nq1 Q0 c 3 0.7 t\n"
    assert native.speedups.order_run(tidy, False, -1) == (
        "t",
        {"q1": ("c", "b", "a"), "q2": ("c",)},
    )
    assert native.speedups.order_run(tidy, False, 1) == ("t", {"q1": ("c",), "q2": ("c",)})
    for untidy in (b"q1 Q0 a 1 nan t\n", b"q1 Q0 a 1\n", b"q1 Q0 a 1 1 t\nq1 Q0 a 2 0 t\n"):
        assert native.speedups.order_run(untidy, False, -1) is None
    assert native.speedups.order_run("q1 Q0 \u00e9 1 1 t\n".encode(), False, -1) is None
