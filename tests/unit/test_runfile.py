"""TREC run files: trec_eval's document order and every way a run file can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import example, given, settings
from hypothesis import strategies as st

from monitor.errors import InputError
from monitor.scoring.evalset import EvaluationSet
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import parse_run, read_run, trec_order
from monitor.trec.selection import select_measures


def run_text(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_higher_score_ranks_first_whatever_the_file_order_and_rank_column() -> None:
    run = parse_run(
        run_text("q1 Q0 low 1 0.1 t", "q1 Q0 high 3 2.5 t", "q1 Q0 mid 2 1e-1 t"), "run"
    )
    # 0.1 and 1e-1 are the same double: "mid" > "low" in byte order breaks the tie.
    assert run.rankings["q1"] == ("high", "mid", "low")


def test_ties_are_broken_by_docno_descending_in_byte_order() -> None:
    docnos = ["a", "B", "d10", "b", "d9"]
    # Byte order: 'd'(0x64) > 'b'(0x62) > 'a'(0x61) > 'B'(0x42); "d9" > "d10" at the 2nd byte.
    assert trec_order(docnos, [1.0] * 5) == ("d9", "d10", "b", "a", "B")


def test_non_ascii_docnos_tie_in_utf8_byte_order() -> None:
    # "é" is C3 A9 in UTF-8, above "z" (7A) byte-wise; "Z" (5A) is below both.
    assert trec_order(["z", "é", "Z"], [0.5, 0.5, 0.5]) == ("é", "z", "Z")


def test_float64_keeps_scores_that_differ_in_the_last_bits_apart() -> None:
    order = trec_order(["doc-a", "doc-b"], [0.30000000000000004, 0.3])
    assert order == ("doc-a", "doc-b")


def test_float32_makes_scores_equal_as_c_floats_tie_like_trec_eval_9() -> None:
    order = trec_order(["doc-a", "doc-b"], [0.30000000000000004, 0.3], "float32")
    assert order == ("doc-b", "doc-a")


def test_float32_precision_applies_when_loading_a_run() -> None:
    text = run_text("q Q0 doc-a 1 0.30000000000000004 t", "q Q0 doc-b 2 0.3 t")
    assert parse_run(text, "run").rankings["q"] == ("doc-a", "doc-b")
    assert parse_run(text, "run", score_precision="float32").rankings["q"] == ("doc-b", "doc-a")


def test_unknown_score_precision_is_rejected() -> None:
    with pytest.raises(ValueError, match="score_precision"):
        trec_order(["a"], [1.0], "float16")  # type: ignore[arg-type]


def test_queries_keep_their_own_documents_and_the_first_tag_is_the_run_id() -> None:
    run = parse_run(
        run_text("q2 Q0 d1 1 3 first", "q1 Q0 d1 1 2 second", "q2 Q0 d2 2 4 first"), "run"
    )
    assert run.tag == "first"
    assert run.rankings == {"q2": ("d2", "d1"), "q1": ("d1",)}
    assert run.query_ids == {"q1", "q2"}


def test_fields_after_the_tag_tabs_crlf_and_blank_lines_are_accepted() -> None:
    text = b"301\tQ0\tFBIS3-1\t99\t  2.1\tSTANDARD more junk at\r\n\n301 Q0 FBIS3-2 98 2.2 x\r\n"
    assert parse_run(text, "run").rankings["301"] == ("FBIS3-2", "FBIS3-1")


def test_max_retrieved_keeps_the_best_documents_after_ordering() -> None:
    text = run_text(*(f"q Q0 d{i} {i} {i} t" for i in range(5)))
    assert parse_run(text, "run", max_retrieved=2).rankings["q"] == ("d4", "d3")


def test_negative_max_retrieved_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_retrieved"):
        parse_run(run_text("q Q0 d 1 1 t"), "run", max_retrieved=-1)


def test_duplicate_document_in_a_query_names_the_query_the_document_and_both_lines() -> None:
    text = run_text("q1 Q0 d1 1 2 t", "q1 Q0 d2 2 1 t", "q2 Q0 d1 1 1 t", "q1 Q0 d1 3 0 t")
    with pytest.raises(InputError) as caught:
        parse_run(text, "run.txt")
    assert str(caught.value) == "run.txt:4: query q1: duplicate document d1 (first on line 1)"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("q1 Q0 d1 1 0.5", "expected 'qid Q0 docno rank score tag', found 5 fields"),
        ("q1 d1 0.5", "expected 'qid Q0 docno rank score tag', found 3 fields"),
        ("q1 Q0 d1 1 high t", "score 'high' is not a number"),
        ("q1 Q0 d1 1 nan t", "score 'nan' is not a number"),
        ("q1 Q0 d1 1 1_000 t", "score '1_000' is not a number"),
    ],
)
def test_a_malformed_line_is_an_input_error_naming_file_line_and_problem(
    line: str, problem: str
) -> None:
    with pytest.raises(InputError) as caught:
        parse_run(run_text("q1 Q0 d0 1 1.0 t", "", line), "runs/bad.txt")
    assert (caught.value.path, caught.value.line, caught.value.problem) == (
        "runs/bad.txt",
        3,
        problem,
    )


def test_a_docno_that_is_not_utf8_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"^run:2: not valid UTF-8"):
        parse_run(b"q1 Q0 d 1 1.0 t\nq1 Q0 d\xff 1 1.0 t\n", "run")


def test_only_ascii_whitespace_separates_fields_as_in_c() -> None:
    # A no-break space is part of the docno for trec_eval (C isspace); str.split() would split.
    run = parse_run("q Q0 a\u00a0b 1 2 t\nq Q0 c 2 1 t\n".encode(), "run")
    assert run.rankings["q"] == ("a\u00a0b", "c")


def test_a_score_in_non_ascii_digits_is_not_a_number() -> None:
    with pytest.raises(InputError, match="is not a number"):
        parse_run("q Q0 a 1 \u0661\u0662 t\n".encode(), "run")


def test_infinite_scores_order_like_any_other() -> None:
    run = parse_run(run_text("q Q0 a 1 -inf t", "q Q0 b 2 1e308 t", "q Q0 c 3 +Infinity t"), "r")
    assert run.rankings["q"] == ("c", "b", "a")


def test_read_run_reads_a_file_and_names_a_missing_one(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(run_text("q Q0 a 1 1 t", "q Q0 b 2 2 t"))
    assert read_run(path).rankings["q"] == ("b", "a")
    missing = tmp_path / "absent.txt"
    with pytest.raises(InputError) as caught:
        read_run(missing)
    assert str(caught.value) == f"{missing}: cannot read the run: No such file or directory"


# Scores chosen so that float32 rounding creates ties that float64 keeps apart.
NEAR_TIES = [0.3, 0.30000000000000004, 0.1, 0.1 + 1e-12, 1.0, 1.0 + 1e-9, 2.5, -0.5]
DOCNOS = st.text(alphabet="aAbB019", min_size=1, max_size=3)


@st.composite
def judged_runs(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Random qrels and a run over one doc space: near ties, unjudged docs, negative grades."""
    queries = draw(st.lists(st.sampled_from("pqrs"), min_size=1, max_size=3, unique=True))
    qrels = {q: draw(st.dictionaries(DOCNOS, st.integers(-1, 3))) for q in queries}
    # Each query gets a document relevant at both levels: pytrec_eval 0.5.11 misreports
    # (num_ret 0) and can hang on queries without one, which are not what this test is about.
    for judged in qrels.values():
        judged[draw(DOCNOS)] = draw(st.integers(2, 3))
    scores = st.sampled_from(NEAR_TIES) | st.floats(-3, 3, allow_nan=False)
    run = {q: draw(st.dictionaries(DOCNOS, scores, min_size=1, max_size=12)) for q in queries}
    return qrels, run


@settings(max_examples=150, deadline=None)
@given(judged_runs(), st.integers(1, 2))
@example(({"q": {"a": 1, "b": 0}}, {"q": {"a": 0.3, "b": 0.30000000000000004}}), 1)
def test_float32_order_gives_pytrec_eval_values_on_random_runs_with_ties(
    case: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]], level: int
) -> None:
    qrels, run_scores = case
    text = "".join(
        f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run_scores.items() for d, s in docs.items()
    )
    run = parse_run(text.encode(), "run", score_precision="float32")
    selection = select_measures(["all_rankmon"])
    report = evaluate_run(
        EvaluationSet.from_judgments(qrels), run, selection, relevance_level=level
    )
    names = {"P.5,10", "recall.5,10", "ndcg", "ndcg_cut.5,10", "recip_rank", "map", "num_ret"}
    names |= {"num_rel", "num_rel_ret"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level=level).evaluate(
        run_scores
    )
    for qid, values in expected.items():
        for name, value in values.items():
            assert report.per_query[qid][name] == pytest.approx(value, abs=1e-9), (qid, name)
