"""The C judgment index (monitor._speedups.JudgmentIndex) scores exactly like the Python lookups.

`Scorer(..., speedups=True)` looks grade codes up in C, `speedups=False` with one dict
probe per document; both must give the same matrix bit for bit, and `score_coded` (what the
C event decoder feeds) must give the same rows as `score`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import native
from monitor.scoring import plan
from monitor.scoring.catalog import KIND_TABLE, MeasureKey, monitor_keys
from monitor.scoring.columns import CHUNK_ROWS
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.gain import EXP, LINEAR, Gain
from monitor.scoring.scorer import Scorer
from monitor.trec.selection import select_measures
from tests.support.native_guard import require_speedups, speedups_switched_on  # noqa: F401


def trec_keys(names: list[str]) -> list[MeasureKey]:
    """The batch engine's keys of trec_eval `-m` names (`rankmon eval`'s one parser)."""
    return list(select_measures(names).keys.values())


if TYPE_CHECKING:
    from monitor._speedups import JudgmentIndex

require_speedups()


CUSTOM = Gain.parse({0: 0.5, 1: 1, 2: 10, 3: 5})
KEY_SETS: dict[str, list[MeasureKey]] = {
    "monitor keys (full ranking: mrr, map)": monitor_keys([1, 3, 5, 20], ["linear", "exp"]),
    "monitor keys, custom gain": monitor_keys([10], [CUSTOM]),
    "trec full-ranking keys": trec_keys(["ndcg", "map", "recip_rank", "num_rel_ret", "Rprec"]),
    "trec cutoffs only": trec_keys(
        ["ndcg_cut.3,30", "P.2,5", "recall.4", "success.1,3", "map_cut.2,30"]
    ),
    "trec counts only": trec_keys(["num_rel", "num_ret"]),
    "condensed lists, with and without a cutoff": [
        MeasureKey("ndcg_condensed", k, gain)
        for gain in (LINEAR, EXP, CUSTOM)
        for k in (None, 1, 4, 30)
    ],
}

# Doc ids the C table must tell apart: non-ASCII, longer than one 8-byte hash step, sharing an
# 8-byte prefix (and differing only in the last byte or in length), NUL inside.
JUDGED_DOCS = [
    *(f"d{i}" for i in range(8)),
    "doc-é",
    "文書",
    "文書2",
    "prefix12",
    "prefix12X",
    "prefix12Y",
    "a-very-long-document-id-0001",
    "a-very-long-document-id-0002",
    "a-very-long-document-id-00010",
    "nul\x00byte",
    "",
]
UNJUDGED_DOCS = [f"u{i}" for i in range(24)] + ["prefix13", "doc-e", "文", "a-very-long-document"]
ALL_DOCS = JUDGED_DOCS + UNJUDGED_DOCS
QUERIES = ["q1", "q2", "質問", "query-é", "a-long-query-id-1", "a-long-query-id-2"]

grades = st.integers(-3, 6) | st.sampled_from([60, -1000, -(2**31)])
judgments = st.dictionaries(
    st.sampled_from(QUERIES),
    st.dictionaries(st.sampled_from(JUDGED_DOCS), grades, min_size=1, max_size=12),
    min_size=1,
)


@st.composite
def rankings_for(
    draw: st.DrawFn, evaluation_set: EvaluationSet, most: int = 12
) -> tuple[list[str], list[list[str]]]:
    """Query ids of the set and unique-doc rankings: empty, short, and past every cutoff."""
    n = draw(st.integers(0, most))
    query_ids = [draw(st.sampled_from(evaluation_set.query_ids)) for _ in range(n)]
    lengths = st.sampled_from([0, 1, 2, 4, 19, 20, 21, 31, len(ALL_DOCS)]) | st.integers(0, 45)
    rng = draw(st.randoms(use_true_random=False))
    rankings = [rng.sample(ALL_DOCS, min(draw(lengths), len(ALL_DOCS))) for _ in range(n)]
    return query_ids, rankings


def scorers(
    evaluation_set: EvaluationSet, keys: Sequence[MeasureKey], level: int, idcg_zero: str
) -> tuple[Scorer, Scorer]:
    fast = Scorer(evaluation_set, keys, level, idcg_zero, speedups=True)  # type: ignore[arg-type]
    slow = Scorer(evaluation_set, keys, level, idcg_zero, speedups=False)  # type: ignore[arg-type]
    assert slow.judgment_index is None
    return fast, slow


def coded_scores(
    scorer: Scorer, query_ids: Sequence[str], rankings: Sequence[Sequence[str]]
) -> np.ndarray:
    """`score_coded` fed the way the C decoder feeds it: rows by `row_of`, codes by `codes`."""
    index = scorer.judgment_index
    assert index is not None
    rows = [index.row_of(q) for q in query_ids]
    depth = -1 if scorer.lookup_depth is None else scorer.lookup_depth
    codes, lengths = index.codes(rows, rankings, depth)
    assert lengths == [len(r) for r in rankings]
    return scorer.score_coded(rows, codes, lengths)


def index_of(query_ids: Sequence[str], grade_codes: Sequence[dict[str, int]]) -> JudgmentIndex:
    index = native.judgment_index(query_ids, grade_codes)
    assert index is not None
    return index


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    grade_map=judgments,
    key_set=st.sampled_from(sorted(KEY_SETS)),
    level=st.integers(0, 3),
    idcg_zero=st.sampled_from(["zero", "exclude"]),
)
def test_the_c_judgment_index_gives_the_same_scores_as_the_python_lookups(
    data: st.DataObject,
    grade_map: dict[str, dict[str, int]],
    key_set: str,
    level: int,
    idcg_zero: str,
) -> None:
    evaluation_set = EvaluationSet.from_judgments(grade_map)
    keys = KEY_SETS[key_set]
    fast, slow = scorers(evaluation_set, keys, level, idcg_zero)
    assert fast.judgment_index is not None
    assert len(fast.judgment_index) == len(evaluation_set)
    query_ids, rankings = data.draw(rankings_for(evaluation_set))
    expected = slow.score(query_ids, rankings)
    got = fast.score(query_ids, rankings)
    assert got.shape == (len(rankings), len(keys))
    assert np.array_equal(got, expected, equal_nan=True)
    assert np.array_equal(coded_scores(fast, query_ids, rankings), expected, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), grade_map=judgments)
def test_the_index_gives_every_judged_document_its_own_code_and_every_other_document_zero(
    data: st.DataObject, grade_map: dict[str, dict[str, int]]
) -> None:
    query_ids = list(grade_map)
    code_maps = [{doc: data.draw(st.integers(1, 255)) for doc in grade_map[q]} for q in query_ids]
    index = index_of(query_ids, code_maps)
    for row, query_id in enumerate(query_ids):
        assert index.row_of(query_id) == row
        ranking = data.draw(st.permutations(ALL_DOCS))
        codes, lengths = index.codes([row], [ranking], -1)
        assert list(codes) == [code_maps[row].get(doc, 0) for doc in ranking]
        assert lengths == [len(ranking)]


def test_score_coded_equals_score_across_many_chunks_of_rankings() -> None:
    rng = random.Random(20261130)
    grade_map = {
        q: {doc: rng.randint(-1, 4) for doc in rng.sample(JUDGED_DOCS, 9)} for q in QUERIES
    }
    evaluation_set = EvaluationSet.from_judgments(grade_map)
    n = 2 * CHUNK_ROWS + 517
    query_ids = [rng.choice(QUERIES) for _ in range(n)]
    rankings = [rng.sample(ALL_DOCS, rng.choice([0, 1, 3, 7, 25, 45])) for _ in range(n)]
    for keys in KEY_SETS.values():
        fast, slow = scorers(evaluation_set, keys, 1, "exclude")
        expected = slow.score(query_ids, rankings)
        assert np.array_equal(fast.score(query_ids, rankings), expected, equal_nan=True)
        assert np.array_equal(coded_scores(fast, query_ids, rankings), expected, equal_nan=True)


def test_a_kind_without_a_c_case_is_computed_by_its_numpy_function_on_the_c_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """How a new kind works before (or without) a C case: the plan gives its columns to the
    numpy engine, the other columns stay the kernel's, and every value is the same."""
    rng = random.Random(20261202)
    grade_map = {q: {d: rng.randint(-1, 4) for d in rng.sample(JUDGED_DOCS, 9)} for q in QUERIES}
    evaluation_set = EvaluationSet.from_judgments(grade_map)
    query_ids = [rng.choice(QUERIES) for _ in range(700)]
    rankings = [rng.sample(ALL_DOCS, rng.choice([0, 1, 3, 7, 25, 45])) for _ in range(700)]
    keys = monitor_keys([1, 5, 20], ["linear", "exp"])
    expected = Scorer(evaluation_set, keys).score(query_ids, rankings)
    # Every third kind of the table with a C case computed by numpy alone.
    numpy_only = {kind.name for kind in KIND_TABLE if kind.code is not None}
    numpy_only = set(sorted(numpy_only)[::3])
    monkeypatch.setattr(plan, "in_c", lambda key: key.kind not in numpy_only)
    mixed = Scorer(evaluation_set, keys)
    assert mixed._plan is not None
    assert len(mixed._plan.in_numpy) == sum(key.kind in numpy_only for key in keys) > 0
    assert np.array_equal(mixed.score(query_ids, rankings), expected)
    assert np.array_equal(coded_scores(mixed, query_ids, rankings), expected)


def test_score_coded_of_no_rankings_is_an_empty_matrix() -> None:
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 1}})
    keys = KEY_SETS["trec cutoffs only"]
    fast, _ = scorers(evaluation_set, keys, 1, "zero")
    assert fast.score_coded([], b"", []).shape == (0, len(keys))


def test_codes_of_an_empty_ranking_are_empty_with_length_zero() -> None:
    index = index_of(["q"], [{"a": 3}])
    assert index.codes([0], [[]], -1) == (b"", [0])
    assert index.codes([0], [[]], 5) == (b"", [0])
    assert index.codes([], [], 5) == (b"", [])


def test_codes_take_only_the_first_depth_documents_but_report_full_lengths() -> None:
    index = index_of(["q", "r"], [{"a": 3, "文書": 7, "b": 1}, {}])
    ranking = ["x", "文書", "a", "b"]
    assert index.codes([0], [ranking], 0) == (b"", [4])
    assert index.codes([0], [ranking], 2) == (bytes([0, 7]), [4])
    assert index.codes([0], [ranking], 4) == (bytes([0, 7, 3, 1]), [4])
    assert index.codes([0], [ranking], 100) == (bytes([0, 7, 3, 1]), [4])
    assert index.codes([0], [ranking], -1) == (bytes([0, 7, 3, 1]), [4])
    # A query with no judgments at all: every document is unjudged.
    assert index.codes([1, 0], [ranking, ("b",)], -1) == (bytes([0, 0, 0, 0, 1]), [4, 1])


def test_row_of_finds_known_queries_and_says_minus_one_for_unknown_ones() -> None:
    query_ids = ["q1", "質問", "a-long-query-id-1", "a-long-query-id-2", "empty"]
    index = index_of(query_ids, [{"a": 1}, {"b": 2}, {}, {"c": 255}, {}])
    assert len(index) == 5
    assert [index.row_of(q) for q in query_ids] == [0, 1, 2, 3, 4]
    for unknown in ["q2", "", "質", "a-long-query-id-", "a-long-query-id-10", "Q1"]:
        assert index.row_of(unknown) == -1
    with pytest.raises(TypeError):
        index.row_of(1)  # type: ignore[arg-type]


@pytest.mark.parametrize("code", [0, 256, -1, 2**40])
def test_a_grade_code_outside_one_to_255_is_a_value_error(code: int) -> None:
    with pytest.raises((ValueError, OverflowError)):
        index_of(["q"], [{"a": 1, "b": code}])


def test_malformed_index_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        index_of(["q", "r"], [{"a": 1}])
    with pytest.raises(ValueError, match="differ in length"):
        index_of(["q"], [{"a": 1}, {"b": 1}])
    with pytest.raises(ValueError, match="listed twice"):
        index_of(["q", "q"], [{"a": 1}, {"b": 1}])
    with pytest.raises(TypeError):
        index_of(["q"], [[("a", 1)]])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        index_of(["q"], [{1: 1}])  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        index_of([7], [{"a": 1}])  # type: ignore[list-item]


def test_malformed_codes_arguments_are_rejected() -> None:
    index = index_of(["q", "r"], [{"a": 1}, {"b": 2}])
    with pytest.raises(TypeError):
        index.codes([0], [["a", 5]], -1)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        index.codes([0], [["a", b"b"]], -1)  # type: ignore[list-item]
    with pytest.raises(IndexError, match="out of range"):
        index.codes([2], [["a"]], -1)
    with pytest.raises(IndexError, match="out of range"):
        index.codes([-1], [["a"]], -1)
    with pytest.raises(ValueError, match="differ in length"):
        index.codes([0, 1], [["a"]], -1)
    # A non-str past the depth is never looked at.
    assert index.codes([0], [["a", 5]], 1) == (b"\x01", [2])  # type: ignore[list-item]


def test_more_than_255_distinct_grades_take_the_python_path_with_the_same_numbers() -> None:
    rng = random.Random(7)
    many = {f"d{i}": i - 100 for i in range(300)}  # 300 distinct grades: no one-byte codes
    evaluation_set = EvaluationSet.from_judgments({"q": many, "r": {"d1": 2, "文書": 1}})
    query_ids = ["q", "r", "q", "r", "q"]
    docs = [*many, "文書", "x"]
    rankings = [rng.sample(docs, k) for k in (0, 5, 40, 302, 301)]
    for keys in KEY_SETS.values():
        fast, slow = scorers(evaluation_set, keys, 1, "zero")
        assert fast.judgment_index is None
        assert np.array_equal(fast.score(query_ids, rankings), slow.score(query_ids, rankings))
        with pytest.raises(ValueError, match="255"):
            fast.score_coded([0], b"\x01", [1])
    # And the numbers are right, not merely equal: precision@5 of d299..d295 (all relevant).
    keys = trec_keys(["P.5"])
    top = [f"d{i}" for i in range(299, 294, -1)]
    assert Scorer(evaluation_set, keys).score(["q"], [top]).tolist() == [[1.0]]


def test_exactly_255_distinct_grades_still_use_the_c_index() -> None:
    many = {f"d{i}": i for i in range(255)}
    evaluation_set = EvaluationSet.from_judgments({"q": many})
    keys = KEY_SETS["monitor keys (full ranking: mrr, map)"]
    fast, slow = scorers(evaluation_set, keys, 3, "zero")
    assert fast.judgment_index is not None
    rankings = [[f"d{i}" for i in range(254, -1, -2)], ["x", "d254", "d0"]]
    expected = slow.score(["q", "q"], rankings)
    assert np.array_equal(fast.score(["q", "q"], rankings), expected)
    assert np.array_equal(coded_scores(fast, ["q", "q"], rankings), expected)


def test_rankmon_speedups_off_turns_the_c_index_off(monkeypatch: pytest.MonkeyPatch) -> None:
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 1}})
    keys = KEY_SETS["trec cutoffs only"]
    for setting in ("off", "0", "false", " No "):
        monkeypatch.setenv("RANKMON_SPEEDUPS", setting)
        assert not native.speedups_active()
        assert Scorer(evaluation_set, keys, speedups=True).judgment_index is None
    monkeypatch.setenv("RANKMON_SPEEDUPS", "on")
    assert native.speedups_active()
    assert Scorer(evaluation_set, keys, speedups=True).judgment_index is not None


def test_a_ranking_with_a_lone_surrogate_doc_id_scores_like_the_python_path() -> None:
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 1}})
    keys = KEY_SETS["trec cutoffs only"]
    fast, slow = scorers(evaluation_set, keys, 1, "zero")
    rankings = [["\ud800", "a"]]
    assert np.array_equal(fast.score(["q"], rankings), slow.score(["q"], rankings))
