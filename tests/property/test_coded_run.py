"""The evaluator's coded path (a run read straight into grade codes, streamed in chunks) gives
`evaluate_run`'s report on the Python-string path, or leaves the file to it.

Every generated run (the C parser's test cases: ties, blank lines, odd tokens, short lines, a
document twice, non-ASCII docnos; and queries split over several blocks of lines), read in
chunks of any size, by one thread or in two parts at once, with or without `-c`, `-M` and
C-float scores.
"""

from __future__ import annotations

import errno
import functools
import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import native
from monitor.errors import InputError
from monitor.scoring.evalset import EvaluationSet
from monitor.trec import runfile
from monitor.trec.evaluate import evaluate_coded, evaluate_run
from monitor.trec.runfile import CodedRun, Run, ScorePrecision, read_run
from monitor.trec.selection import select_measures
from tests.property.test_run_order import run_texts
from tests.support.native_guard import require_speedups, speedups_switched_on  # noqa: F401

require_speedups()

EVALUATION_SET = EvaluationSet.from_judgments(
    {
        "q1": {"a": 2, "b": 0, "d9": 1, "far": 3},
        "q2": {"B": 1, "d10": -1, "ab": 3},
        "q3": {"x": 1},
    }
)
ENGINE_MEASURES = ["ndcg_cut.1,3", "P.2", "recall.3", "recip_rank", "map", "num_ret", "num_rel"]


def both_paths(
    text: str,
    chunk: int,
    *,
    complete: bool,
    depth: int | None,
    precision: ScorePrecision,
    parts: int = 1,
) -> tuple[object, object]:
    selection = select_measures(ENGINE_MEASURES)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.txt"
        path.write_bytes(text.encode())
        try:
            run = read_run(path, score_precision=precision, max_retrieved=depth)
        except InputError as error:
            expected: object = f"error: {error}"
        else:
            expected = evaluate_run(EVALUATION_SET, run, selection, complete=complete)
        index = EVALUATION_SET.judgment_index()
        assert index is not None
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(runfile, "_CHUNK_BYTES", chunk)
            patch.setattr(runfile, "_parts", lambda: parts)
            try:
                coded = read_run(
                    path,
                    index=index,
                    depth=selection.lookup_depth,
                    score_precision=precision,
                    max_retrieved=depth,
                )
            except InputError as error:
                return expected, f"error: {error}"
    if not isinstance(coded, CodedRun):  # the fallback: the Python parser's Run
        return expected, evaluate_run(EVALUATION_SET, coded, selection, complete=complete)
    return expected, ("coded", evaluate_coded(EVALUATION_SET, coded, selection, complete=complete))


@st.composite
def block_texts(draw: st.DrawFn) -> str:
    """The C parser's run texts, now and then with a query's lines split into two blocks."""
    text = draw(run_texts())
    if draw(st.booleans()):
        text += "\nq1 Q0 later 1 0.25 tagA\n"
    return text


@settings(max_examples=120, deadline=None)
@given(
    text=block_texts(),
    reading=st.tuples(st.sampled_from([1, 2, 7, 64, 1 << 22]), st.sampled_from([1, 2])),
    complete=st.booleans(),
    depth=st.sampled_from([None, 0, 1, 3]),
    precision=st.sampled_from(["float64", "float32"]),
)
def test_the_one_run_reader_gives_the_same_report_coded_or_through_its_fallback(
    text: str,
    reading: tuple[int, int],
    complete: bool,
    depth: int | None,
    precision: ScorePrecision,
) -> None:
    chunk, parts = reading  # bytes a read; threads reading the file
    expected, coded = both_paths(
        text, chunk, complete=complete, depth=depth, precision=precision, parts=parts
    )
    if isinstance(expected, str):  # an error: the C reader gave up, the fallback names it
        assert coded == expected
    elif isinstance(coded, tuple):
        assert coded[1] == expected
    else:  # only a file the C parser leaves to Python (non-ASCII, an odd token) gets here
        assert coded == expected
        assert not text.isascii() or any(
            token in text for token in ("nan", "inf", "_", "0x", "1e", "two", ".", "--")
        )


def test_a_run_is_coded_the_same_in_any_chunk_size_and_split_queries_are_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"q{q} Q0 d{d} {d} {100 - d} tag" for q in (1, 2, 3) for d in range(40)]
    index = EVALUATION_SET.judgment_index()
    assert index is not None
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines))
    whole = read_run(path, index=index)
    for chunk, parts in itertools.product((1, 5, 33, 1 << 22), (1, 2)):
        monkeypatch.setattr(runfile, "_CHUNK_BYTES", chunk)
        monkeypatch.setattr(runfile, "_parts", functools.partial(int, parts))
        assert read_run(path, index=index) == whole
    assert isinstance(whole, CodedRun)
    assert whole.query_ids == ["q1", "q2", "q3"]
    assert whole.lengths == [40, 40, 40]
    # q2's lines in two blocks, one in each part when two threads read the file: the
    # streaming reader gives up, the whole-file reader decides.
    path.write_text("\n".join([*lines[40:60], *lines[:40], *lines[60:]]))
    monkeypatch.setattr(runfile, "_CHUNK_BYTES", 16)
    for parts in (1, 2):
        monkeypatch.setattr(runfile, "_parts", functools.partial(int, parts))
        split = read_run(path, index=index)
        assert isinstance(split, CodedRun)
        assert (split.query_ids, split.lengths) == (["q2", "q1", "q3"], [40, 40, 40])


def test_measures_that_need_the_documents_take_the_string_path(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 a 1 3 tag\n")
    index = EVALUATION_SET.judgment_index()
    assert index is not None
    coded = read_run(path, index=index)
    assert isinstance(coded, CodedRun)
    families = select_measures(["bpref", "map"])
    assert not families.engine_only
    with pytest.raises(ValueError, match="no documents"):
        evaluate_coded(EVALUATION_SET, coded, families)
    engine = select_measures(["map"])
    assert engine.engine_only
    # q1 ranks a (relevant) alone of its 3 relevant documents: AP = (1/1) / 3.
    assert evaluate_coded(EVALUATION_SET, coded, engine).summary == {"map": 1 / 3}
    path.write_text("q1 Q0 \u00e9 1 3 tag\n")  # non-ASCII: the C reader leaves it to Python
    assert read_run(path, index=index) == Run(str(path), "tag", {"q1": ("\u00e9",)})


def test_a_failed_read_is_an_os_error_and_an_unreadable_run_names_the_file(
    tmp_path: Path,
) -> None:
    index = EVALUATION_SET.judgment_index()
    assert index is not None
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 a 1 3 tag\n")
    with path.open("wb") as write_only, pytest.raises(OSError) as failed:
        native.speedups.run_coder(index, False, -1, -1).read(write_only.fileno(), 4096)
    assert failed.value.errno == errno.EBADF
    with pytest.raises(InputError, match="run"):
        read_run(tmp_path, index=index)  # a folder: open() fails, the file is named
