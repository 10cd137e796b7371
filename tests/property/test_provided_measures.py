"""trec_eval's families as rows of the one measure table: what the stream computes for a kind a
family provides (bpref, infAP, set_F, relative_P, ...) is what `rankmon eval -m FAMILY.PARAMS`
prints for it, query by query and to the last bit, on both scoring engines, on trec_eval's own
test files and on random collections (graded and negative judgments, unjudged documents,
relevance levels 0 to 2, inline grades). `rankmon eval`'s values are held to trec_eval's by
test_trec_eval_conformance.py and test_trec_families.py; the kinds come from the table.
"""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.cli import main
from monitor.scoring.catalog import KIND_TABLE, MeasureKey, MeasureKind
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.scorer import Scorer
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import Run, read_run, trec_order
from monitor.trec.selection import select_measures

CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "trec_eval"
PROVIDED = tuple(kind for kind in KIND_TABLE if kind.family is not None)
DOCS = [f"d{i}" for i in range(14)]


def key_of(kind: MeasureKind, k: int, step: int) -> MeasureKey:
    """A key of `kind`: cutoff `k` where it takes one, each parameter `step` tenths of the
    way through its range (0: the default), in values `%g` writes exactly."""
    params = tuple(
        (
            param.name,
            param.default if step == 0 else param.low + (param.high - param.low) * step / 10,
        )
        for param in kind.params
    )
    return MeasureKey(kind.name, k if kind.cutoff else None, None, params)


def eval_values(
    evaluation_set: EvaluationSet, run: Run, key: MeasureKey, level: int
) -> list[float]:
    """`rankmon eval -m <trec_eval's argument>`'s per-query values, queries sorted."""
    argument = key.trec_argument
    assert argument is not None
    report = evaluate_run(evaluation_set, run, select_measures([argument]), relevance_level=level)
    (name,) = report.values
    return [float(value) for value in report.values[name]]


def assert_same(streamed: list[float], expected: list[float], key: MeasureKey) -> None:
    assert len(streamed) == len(expected)
    for got, want in zip(streamed, expected, strict=True):
        assert got == want or (math.isnan(got) and math.isnan(want)), (str(key), got, want)


def test_the_table_provides_every_trec_eval_family_whose_query_means_make_a_window() -> None:
    # Left out, each for a reason the catalog gives: a geometric mean over queries, text, and
    # the families a kind of the engine's own computes (ndcg, dcg, rbp, rbp_resid).
    families = {kind.family for kind in PROVIDED}
    assert {"bpref", "infAP", "set_F", "utility", "relative_P", "11pt_avg", "G"} <= families
    assert not families & {"gm_map", "gm_bpref", "relstring", "ndcg", "dcg", "rbp"}
    for kind in PROVIDED:
        name = f"{kind.name}@10" if kind.cutoff else kind.name
        assert MeasureKey.parse(name).kind == kind.name
        assert kind.gauge is not None


@pytest.mark.parametrize("speedups", [False, True])
@pytest.mark.parametrize("level", [1, 2])
def test_on_trec_eval_s_test_files_the_stream_gives_rankmon_eval_s_value_of_every_provided_kind(
    speedups: bool, level: int
) -> None:
    evaluation_set = load_evaluation_set(CONFORMANCE / "qrels.test")
    run = read_run(CONFORMANCE / "results.test")
    queries = sorted(q for q in run.rankings if q in evaluation_set)
    keys = [key_of(kind, k, step) for kind in PROVIDED for k, step in ((10, 0), (3, 3))]
    scorer = Scorer(evaluation_set, keys, relevance_level=level, speedups=speedups)
    values = scorer.score(queries, [run.rankings[q] for q in queries])
    for column, key in enumerate(keys):
        assert_same(list(values[:, column]), eval_values(evaluation_set, run, key, level), key)


@st.composite
def collections(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, tuple[str, ...]]]:
    qrels: dict[str, dict[str, int]] = {}
    rankings: dict[str, tuple[str, ...]] = {}
    for n in range(draw(st.integers(1, 5))):
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        qrels[f"q{n}"] = {doc: draw(st.integers(-1, 3)) for doc in judged}
        qrels[f"q{n}"][judged[0]] = draw(st.integers(0, 3))  # one grade >= 0 (trec_eval)
        retrieved = draw(st.lists(st.sampled_from(DOCS), max_size=12, unique=True))
        scores = [float(draw(st.integers(0, 4))) for _ in retrieved]
        rankings[f"q{n}"] = tuple(trec_order(retrieved, scores))
    return qrels, rankings


@settings(max_examples=60, deadline=None)
@given(collections(), st.integers(0, 2), st.integers(1, 12), st.integers(0, 10), st.booleans())
def test_on_random_collections_the_stream_gives_rankmon_eval_s_value_of_every_provided_kind(
    data: tuple[dict[str, dict[str, int]], dict[str, tuple[str, ...]]],
    level: int,
    k: int,
    step: int,
    speedups: bool,
) -> None:
    qrels, rankings = data
    evaluation_set = EvaluationSet.from_judgments(qrels)
    run = Run("run", "tag", rankings)
    queries = sorted(rankings)
    keys = [key_of(kind, k, step) for kind in PROVIDED]
    scorer = Scorer(evaluation_set, keys, relevance_level=level, speedups=speedups)
    values = scorer.score(queries, [rankings[q] for q in queries])
    for column, key in enumerate(keys):
        assert_same(list(values[:, column]), eval_values(evaluation_set, run, key, level), key)


@settings(max_examples=40, deadline=None)
@given(collections(), st.integers(0, 3), st.booleans())
def test_an_event_s_inline_grades_count_for_a_provided_kind_as_judgments_of_the_set_would(
    data: tuple[dict[str, dict[str, int]], dict[str, tuple[str, ...]]],
    grade: int,
    speedups: bool,
) -> None:
    # Inline grades of a ranking's unjudged documents change its query's grade counts (R,
    # the nonrelevant, the ideal ranking) on every path: the same values as a set that
    # judged them.
    qrels, rankings = data
    queries = sorted(rankings)
    extra = [{doc: grade for doc in rankings[q] if doc not in qrels[q]} for q in queries]
    merged = {q: {**qrels[q], **added} for q, added in zip(queries, extra, strict=True)}
    keys = [key_of(kind, 5, 0) for kind in PROVIDED]
    inline = Scorer(EvaluationSet.from_judgments(qrels), keys, speedups=speedups)
    judged = Scorer(EvaluationSet.from_judgments(merged), keys, speedups=speedups)
    ordered = [rankings[q] for q in queries]
    got = inline.score(queries, ordered, [dict(e) for e in extra])
    want = judged.score(queries, ordered)
    for column, key in enumerate(keys):
        assert_same(list(got[:, column]), list(want[:, column]), key)


def test_rankmon_eval_computes_a_provided_key_as_trec_eval_s_measure_with_its_every_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `-m utility:rel_missed=1` is `-m utility.1,-1,1,0`: with -c, a query the run misses is
    # trec_eval's stand-in, reset to 0, not an empty ranking; -J drops what is not judged.
    qrels, run = CONFORMANCE / "qrels.test", CONFORMANCE / "results.test"
    shown = tmp_path / "less.run"  # every query but the first two: -c has some to fill in
    lines = run.read_text().splitlines(keepends=True)
    first = sorted({line.split()[0] for line in lines})[:2]
    shown.write_text("".join(line for line in lines if line.split()[0] not in first))

    def evaluated(*arguments: str) -> dict[str, dict[str, float]]:
        assert main(["eval", "--format", "json", "-q", "-c", "-J", *arguments]) == 0
        return dict(orjson.loads(capsys.readouterr().out)["per_query"])

    keyed = evaluated("-m", "utility:rel_missed=1", "-m", "relative_P@5", str(qrels), str(shown))
    trec = evaluated("-m", "utility.1,-1,1,0", "-m", "relative_P.5", str(qrels), str(shown))
    assert keyed == trec
    assert all(keyed[q]["utility_1,-1,1,0"] == 0 for q in first)


@pytest.mark.parametrize("speedups", [False, True])
def test_a_poll_with_no_ranking_scores_to_no_rows_with_provided_kinds(speedups: bool) -> None:
    # The C path hands the numpy columns what the decoder coded: nothing, for an empty poll.
    evaluation_set = EvaluationSet.from_judgments({"q": {"a": 1, "b": 0}})
    keys = [key_of(kind, 5, 0) for kind in PROVIDED]
    scorer = Scorer(evaluation_set, keys, speedups=speedups)
    assert scorer.score([], []).shape == (0, len(keys))
    if speedups:
        assert scorer.score_coded([], b"", []).shape == (0, len(keys))
