"""`rankmon explain`: the explanation of the live service, offline on two TREC runs.

The per-query values come from `rankmon eval`'s engine (a query in either run and in the
qrels counts; one in a single run is a query seen on one side only), the contributions from
`monitor.explain.change`, and the rankings behind the queries that lost most from the runs
themselves, in trec_eval's order.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.explain.change import Change, explain_change
from monitor.explain.rankings import RankingChange, ranking_change
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.gain import Gain
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import Run
from monitor.trec.selection import MeasureSelection

__all__ = ["RunExplanation", "explain_runs"]

DEPTH = 10  # the rankings' depth for measures without a cutoff


@dataclass(frozen=True)
class RunExplanation:
    measure: str
    change: Change
    rankings: list[tuple[str, RankingChange]]


def explain_runs(
    evaluation_set: EvaluationSet,
    before: Run,
    after: Run,
    selection: MeasureSelection,
    *,
    gain: Gain,
    documents: int,
) -> RunExplanation:
    """The change of the (single) selected measure from `before` to `after`."""
    (name,) = selection.names
    key = selection.keys.get(name)
    values = []
    for run in (before, after):
        report = evaluate_run(evaluation_set, run, selection)
        values.append(dict(zip(report.queries, map(float, report.values[name]), strict=True)))
    change = explain_change(values[0], values[1])
    k = (key.k if key is not None else None) or DEPTH
    rankings = []
    for row in [r for r in change.rows if r.contribution < 0][:documents]:
        grades = evaluation_set.grades(row.query)
        ranked = ranking_change(
            before.rankings.get(row.query, ()), after.rankings.get(row.query, ()), grades, gain, k
        )
        rankings.append((row.query, ranked))
    return RunExplanation(name, change, rankings)
