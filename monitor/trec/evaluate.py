"""Evaluating a TREC run against an evaluation set the way trec_eval does (`rankmon eval`).

Which queries are evaluated (docs/metric-conventions.md Q1-Q3, trec_eval.c):

- a query in the run but not in the evaluation set is ignored everywhere;
- without `complete` (trec_eval 9's default) only queries in both are evaluated, and means
  are over them;
- with `complete` (trec_eval's `-c`) every query of the evaluation set is evaluated, a query
  the run misses as an empty ranking: 0 for every measure, but its `num_rel` still counts,
  and the means divide by the number of evaluation-set queries (trec_eval 10.0 prints these
  queries with `-q` too);
- a query without relevant documents is evaluated and scores 0.

The values come from the batch engine (`monitor.scoring.batch.BatchScorer`), the one the streaming
monitor uses, so the trec_eval conformance tests vouch for both.

Queries are reported in `strcmp` order of their ids, as trec_eval sorts them; measures in
trec_eval's table order (`num_ret num_rel num_rel_ret map recip_rank P recall ndcg ndcg_cut`),
cutoffs ascending within a family, whatever order `-m` named them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from monitor.errors import MeasureError
from monitor.scoring.batch import BatchScorer
from monitor.scoring.catalog import MeasureKey, parse_trec_names
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.gain import LINEAR, Gain
from monitor.trec.report import NUM_Q, RUN_ID, EvaluationReport, Value, summarize
from monitor.trec.runfile import Run

__all__ = [
    "ALL_RANKMON",
    "MeasureSelection",
    "evaluate_run",
    "select_measures",
]

# The group `-m all_rankmon` (the default): every trec_eval measure rankmon implements.
ALL_RANKMON = "all_rankmon"
_ALL_RANKMON_NAMES = (
    RUN_ID,
    NUM_Q,
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "recip_rank",
    "P",
    "recall",
    "ndcg",
    "ndcg_cut",
)
# trec_eval's own groups: rankmon cannot print all of their measures.
_TREC_EVAL_GROUPS = frozenset({"all_trec", "official", "set", "qrels_jg", "prefs"})
# trec_eval prints measures in the order of its measure table (measures.c), not of -m.
_TABLE_ORDER = {
    "num_ret": 0,
    "num_rel": 1,
    "num_rel_ret": 2,
    "map": 3,
    "mrr": 4,
    "precision": 5,
    "recall": 6,
    "ndcg": 7,  # `ndcg` (no cutoff) comes before the ndcg_cut family
}


@dataclass(frozen=True)
class MeasureSelection:
    """What `-m` asked for: the run id and `num_q` lines, and the measures in print order."""

    keys: tuple[MeasureKey, ...]
    run_id: bool = False
    num_q: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """trec_eval's names of the keys (`ndcg_cut_10`, `P_5`, ...)."""
        return tuple(_trec_name(key) for key in self.keys)


def select_measures(names: Sequence[str], gain: Gain = LINEAR) -> MeasureSelection:
    """Parse trec_eval `-m` names (and the group `all_rankmon`); unknown ones raise MeasureError.

    `gain` applies to `ndcg` and `ndcg_cut` (trec_eval itself only knows linear gain).
    """
    expanded = [part for name in names for part in _expand_group(name)]
    measure_names = [name for name in expanded if name not in (RUN_ID, NUM_Q)]
    others = (NUM_Q, RUN_ID, ALL_RANKMON)
    keys = sorted(parse_trec_names(measure_names, gain, others), key=_print_position)
    return MeasureSelection(tuple(keys), run_id=RUN_ID in expanded, num_q=NUM_Q in expanded)


def evaluate_run(
    evaluation_set: EvaluationSet,
    run: Run,
    selection: MeasureSelection,
    *,
    complete: bool = False,
    relevance_level: int = 1,
) -> EvaluationReport:
    """Every evaluated query's values and the `all` summary, in trec_eval's print order."""
    if relevance_level < 0:
        raise MeasureError(f"relevance level must be >= 0, got {relevance_level}")
    if complete:
        queries = sorted(evaluation_set)
    else:
        queries = sorted(qid for qid in run.rankings if qid in evaluation_set)
    per_query = _score_queries(evaluation_set, run, queries, selection, relevance_level)
    summary = summarize(selection.names, per_query, len(queries))
    if not selection.num_q:
        del summary[NUM_Q]
    return EvaluationReport(
        names=selection.names,
        per_query=per_query,
        summary=summary,
        run_id=run.tag if selection.run_id else None,
    )


def _score_queries(
    evaluation_set: EvaluationSet,
    run: Run,
    queries: Sequence[str],
    selection: MeasureSelection,
    relevance_level: int,
) -> dict[str, dict[str, Value]]:
    # A query the run misses is scored as an empty ranking: 0 everywhere but num_rel (-c).
    scorer = BatchScorer(evaluation_set, selection.keys, relevance_level=relevance_level)
    matrix = scorer.score(queries, [run.rankings.get(qid, ()) for qid in queries])
    counts = [key.is_count for key in selection.keys]
    return {
        qid: {
            name: int(value) if is_count else value
            for name, value, is_count in zip(selection.names, row, counts, strict=True)
        }
        for qid, row in zip(queries, matrix.tolist(), strict=True)
    }


def _expand_group(name: str) -> Sequence[str]:
    if name.strip() in _TREC_EVAL_GROUPS:
        raise MeasureError(
            f"rankmon implements a subset of trec_eval's measures, not the group {name!r}: "
            f"use -m {ALL_RANKMON} for all of them"
        )
    return _ALL_RANKMON_NAMES if name.strip() == ALL_RANKMON else (name,)


def _print_position(key: MeasureKey) -> tuple[int, int]:
    family = 8 if key.kind == "ndcg" and key.k is not None else _TABLE_ORDER[key.kind]
    return family, key.k or 0


def _trec_name(key: MeasureKey) -> str:
    name = key.trec_name
    if name is None:  # parse_trec_names only makes keys trec_eval has names for
        raise MeasureError(f"measure {key} has no trec_eval name")
    return name
