"""Evaluating a TREC run against an evaluation set the way trec_eval does (`rankmon eval`).

Which queries are evaluated (docs/metric-conventions.md Q1-Q3, trec_eval.c):

- a query in the run but not in the evaluation set is ignored everywhere;
- without `complete` (trec_eval 9's default) only queries in both are evaluated, and means
  are over them;
- with `complete` (trec_eval's `-c`) every query of the evaluation set is evaluated, a query
  the run misses as trec_eval ranks it (one document outside the pool): 0 for every measure
  but `num_rel` and the judgment counts, and the means divide by the number of evaluation-set
  queries (trec_eval 10.0 prints these queries with `-q` too);
- a query without relevant documents is evaluated and scores 0;
- with `judged_only` (`-J`) documents the qrels do not judge are dropped from each ranking
  (after `-M`), as if never retrieved.

Two engines compute the values. The measures the streaming monitor computes too (nDCG, P,
recall, MAP, MRR and the counts) come from its scorer (`monitor.scoring.scorer`), so the
trec_eval conformance tests vouch for the numbers the monitor exports; the others from
`monitor.scoring.families`. Queries are reported in `strcmp` order of their ids, as trec_eval sorts
them; measures in trec_eval's table order (`monitor.trec.table`), whatever order `-m` named them.

When the scorer computes every value asked for, `evaluate_coded` scores a run read
straight into grade codes (`monitor.trec.runfile.read_run` given the evaluation set's
judgment index) instead: the same report, with no Python string per retrieved document.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress

import numpy as np
import numpy.typing as npt

from monitor.errors import MeasureError
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.families import Settings, compute, reset_missing
from monitor.scoring.relevance import RankedRelevance
from monitor.scoring.scorer import Scorer
from monitor.trec.report import NUM_Q, EvaluationReport, Value, summarize
from monitor.trec.runfile import CodedRun, Run
from monitor.trec.selection import MeasureSelection

__all__ = ["evaluate_coded", "evaluate_run"]


def evaluate_run(
    evaluation_set: EvaluationSet,
    run: Run,
    selection: MeasureSelection,
    *,
    complete: bool = False,
    relevance_level: int = 1,
    judged_only: bool = False,
    num_docs: int = 0,
) -> EvaluationReport:
    """Every evaluated query's values and the `all` summary, in trec_eval's print order.

    `num_docs` is the collection size (`-N`), which only utility's fourth coefficient uses.
    """
    if relevance_level < 0:
        raise MeasureError(f"relevance level must be >= 0, got {relevance_level}")
    if complete:
        queries = sorted(evaluation_set)
    else:
        queries = sorted(qid for qid in run.rankings if qid in evaluation_set)
    rankings = [run.rankings.get(qid) for qid in queries]
    if judged_only:
        rankings = [_judged(evaluation_set, q, r) for q, r in zip(queries, rankings, strict=True)]
    values = _monitor_values(evaluation_set, queries, rankings, selection, relevance_level)
    values.update(
        _trec_values(
            evaluation_set,
            queries,
            rankings,
            selection,
            relevance_level=relevance_level,
            judged_only=judged_only,
            num_docs=num_docs,
        )
    )
    return _report(queries, values, selection, run.tag)


def evaluate_coded(
    evaluation_set: EvaluationSet,
    run: CodedRun,
    selection: MeasureSelection,
    *,
    complete: bool = False,
    relevance_level: int = 1,
) -> EvaluationReport:
    """`evaluate_run` on a run read straight into grade codes against the evaluation set's
    judgment index (`read_run` given the index), when the scorer computes every value asked for
    (`selection.engine_only`); the run's codes must reach `selection.lookup_depth`. Same
    report."""
    if relevance_level < 0:
        raise MeasureError(f"relevance level must be >= 0, got {relevance_level}")
    if not selection.engine_only:
        raise ValueError("a coded run has no documents for the trec_eval families to read")
    keys = list(selection.keys.values())
    scorer = Scorer(evaluation_set, keys, relevance_level=relevance_level)
    if scorer.judgment_index is None:
        raise ValueError("coded runs need the evaluation set's judgment index")
    rows = np.asarray(run.rows, dtype=np.int64)
    known = rows >= 0
    scored = scorer.score_coded(
        rows[known].tolist(), run.codes, np.asarray(run.lengths, dtype=np.int64)[known].tolist()
    )
    at = {qid: i for i, qid in enumerate(compress(run.query_ids, known.tolist()))}
    queries = sorted(evaluation_set) if complete else sorted(at)
    missing = [qid for qid in queries if qid not in at]
    if missing:  # -c: a query the run misses is an empty ranking, as in `evaluate_run`
        empty = scorer.score_coded(scorer.query_rows(missing), b"", [0] * len(missing))
        at.update((qid, len(scored) + i) for i, qid in enumerate(missing))
        scored = np.concatenate([scored, empty])
    matrix = scored[[at[qid] for qid in queries]]
    values = _engine_columns(selection, matrix)
    return _report(queries, values, selection, run.tag)


def _report(
    queries: Sequence[str],
    values: dict[str, list[Value]],
    selection: MeasureSelection,
    tag: str,
) -> EvaluationReport:
    columns = selection.columns
    summary: dict[str, Value] = {NUM_Q: len(queries)} if selection.num_q else {}
    summary.update(summarize(columns, values, len(queries)))
    return EvaluationReport(
        columns=columns,
        queries=queries,
        values={column.name: values[column.name] for column in columns},
        summary=summary,
        run_id=tag if selection.run_id else None,
    )


def _judged(
    evaluation_set: EvaluationSet, qid: str, ranking: Sequence[str] | None
) -> tuple[str, ...] | None:
    """`-J`: the ranking without the documents the qrels do not judge (grade >= 0)."""
    if ranking is None:
        return None
    grades = evaluation_set.grades(qid)
    return tuple(doc for doc in ranking if grades.get(doc, -1) >= 0)


def _monitor_values(
    evaluation_set: EvaluationSet,
    queries: Sequence[str],
    rankings: Sequence[Sequence[str] | None],
    selection: MeasureSelection,
    relevance_level: int,
) -> dict[str, list[Value]]:
    # A query the run misses is scored as an empty ranking: 0 everywhere but num_rel (-c).
    if not selection.keys:
        return {}
    keys = list(selection.keys.values())
    scorer = Scorer(evaluation_set, keys, relevance_level=relevance_level)
    matrix = scorer.score(queries, [ranking or () for ranking in rankings])
    return _engine_columns(selection, matrix)


def _engine_columns(
    selection: MeasureSelection, matrix: npt.NDArray[np.float64]
) -> dict[str, list[Value]]:
    """The scorer's (queries x keys) matrix as one list of values per name."""
    names, keys = list(selection.keys), list(selection.keys.values())
    return {
        name: [int(v) for v in column] if key.is_count else column
        for name, key, column in zip(names, keys, matrix.T.tolist(), strict=True)
    }


def _trec_values(
    evaluation_set: EvaluationSet,
    queries: Sequence[str],
    rankings: Sequence[Sequence[str] | None],
    selection: MeasureSelection,
    *,
    relevance_level: int,
    judged_only: bool,
    num_docs: int,
) -> dict[str, list[Value]]:
    wanted = selection.family_requests
    if not wanted:
        return {}
    ranked = RankedRelevance.of(
        evaluation_set, queries, rankings, relevance_level, judged_only=judged_only
    )
    settings = Settings(num_docs=num_docs)
    out: dict[str, list[Value]] = {}
    for requested in wanted:
        values = compute(requested.name, requested.params, ranked, settings)
        values = reset_missing(requested.name, ranked, values)
        if isinstance(values, list):
            out[requested.value_names[0]] = list(values)
            continue
        shape = (len(queries), len(requested.value_names))
        matrix = np.asarray(values, dtype=np.float64).reshape(shape)
        for name, column in zip(requested.value_names, matrix.T.tolist(), strict=True):
            shown: list[Value] = [int(v) for v in column] if requested.measure.count else [*column]
            out[name] = shown
    return out
