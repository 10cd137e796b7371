"""A window's headline nDCG@k corrected by the people's audit of its model judge (PPI++).

The evaluation set the monitor scores with takes a model's grade where no person graded a
pair; a biased judge biases the measure. Where people audited whole queries (graded every
document a model graded in them), the window's mean can be corrected, query as the unit, as
`rankmon eval --audit` does offline (docs/metrics.md, "Judges"). From each query's sampled
ranking in the window (`monitor.windows.samples`: the one the explanations show):

- a query none of whose top k documents a model graded has its value under the people's
  grades outright (group A);
- the others (group B) are audited when a person also graded every model-graded document of
  their top k: their value under the people's grades (Y) and under the model's (f) are both
  known; the rest have f alone.

The corrected mean is `(|A| mean(A) + |B| theta) / (|A| + |B|)`, where theta is PPI++'s
estimate of group B's mean under the people's grades (`monitor.stats.judges.ppi_mean`), and its
interval is theta's scaled by `|B| / (|A| + |B|)`. It needs `min_audited` audited queries
(`judging.min_audited_queries`, 40) and 2 others in group B: its 95 % interval covered the
truth on 47.2 % (+-5.0), 79.2 % (+-4.1) and 91.5 % (+-2.8) of 400 simulated windows of 400
queries with 2, 5 and 15 audited queries, and on 94.5 % (+-2.3) with 40 (95.8 % +-1.3 over
1,000 windows; `bench/judges.py --audited N`); below it there is no corrected headline, only
the count of audited queries. Its promise is PPI++'s: the audited
queries must be a random sample of group B's (audit whole queries, drawn at random); it is
about the window's queries as sampled, one ranking each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monitor.judging.judgments import JudgmentBook, is_person
from monitor.scoring.evalset import EvaluationSet
from monitor.stats.judges import MeanInterval, ppi_mean
from monitor.windows.summary import WindowSummary

__all__ = ["Correction", "JudgeViews", "correct_window"]


@dataclass(frozen=True)
class JudgeViews:
    """The merged set seen two ways: with every model grade (`model`, the model's where a
    person graded too) and with the people's grades alone (`people`); `model_graded`: the
    pairs a model graded; `audited`: those of them a person graded too."""

    model: EvaluationSet
    people: EvaluationSet
    model_graded: frozenset[tuple[str, str]]
    audited: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, book: JudgmentBook) -> JudgeViews:
        merged = book.merged()
        model = {query: dict(merged.grade_dict(query)) for query in merged}
        people = {query: dict(merged.grade_dict(query)) for query in merged}
        model_graded: set[tuple[str, str]] = set()
        for (query, doc), judgment in book.in_effect.items():
            if not is_person(judgment.source):
                model_graded.add((query, doc))
                del people[query][doc]
        for (query, doc), judgments in book.audit.items():
            model_graded.add((query, doc))
            model[query][doc] = judgments[-1].grade
        audited = frozenset(book.audit)
        return cls(
            EvaluationSet(model, merged.path, own=True),
            EvaluationSet(people, merged.path, own=True),
            frozenset(model_graded),
            audited,
        )


@dataclass(frozen=True)
class Correction:
    """A window's corrected mean with its interval (None: too few queries), and the queries
    behind it."""

    interval: MeanInterval | None
    outright: int  # group A
    audited: int  # group B, audited
    model_only: int  # group B, not audited


# The headline of each (query, ranking) under a set, in one call (one scorer pass).
Score = Callable[[EvaluationSet, Sequence[str], Sequence[Sequence[str]]], Sequence[float]]

OUTRIGHT, AUDITED, MODEL_ONLY = 0, 1, 2


def correct_window(
    summary: WindowSummary,
    ranking_of: Callable[[str], Sequence[str] | None],
    views: JudgeViews,
    score: Score,
    cutoff: int,
    *,
    min_audited: int = 2,
) -> Correction:
    """The window's corrected headline (module docstring); none below `min_audited`
    audited queries."""
    groups: tuple[list[tuple[str, Sequence[str]]], ...] = ([], [], [])
    for query in summary.query_means:
        ranking = ranking_of(query)
        if ranking is None or query not in views.model:
            continue
        graded = [doc for doc in ranking[:cutoff] if (query, doc) in views.model_graded]
        if not graded:
            group = OUTRIGHT
        elif all((query, doc) in views.audited for doc in graded):
            group = AUDITED
        else:
            group = MODEL_ONLY
        groups[group].append((query, ranking))

    def scored(
        evaluation_set: EvaluationSet, units: list[tuple[str, Sequence[str]]]
    ) -> list[float]:
        # a query only a model graded has no grade of the people's: IDCG 0, it scores 0
        known = [(q, r) for q, r in units if q in evaluation_set]
        values = iter(score(evaluation_set, [q for q, _ in known], [r for _, r in known]))
        return [next(values) if q in evaluation_set else 0.0 for q, _ in units]

    # NaN: a query left out of the means (metrics.idcg_zero: exclude)
    outright = [v for v in scored(views.people, groups[OUTRIGHT]) if not math.isnan(v)]
    both = [
        (h, m)
        for h, m in zip(
            scored(views.people, groups[AUDITED]),
            scored(views.model, groups[AUDITED]),
            strict=True,
        )
        if not (math.isnan(h) or math.isnan(m))
    ]
    human = [h for h, _ in both]
    model_audited = [m for _, m in both]
    model_only = [v for v in scored(views.model, groups[MODEL_ONLY]) if not math.isnan(v)]
    if len(human) < max(2, min_audited) or len(model_only) < 2:
        return Correction(None, len(outright), len(human), len(model_only))
    theta = ppi_mean(human, model_audited, model_only)
    group_b = len(human) + len(model_only)
    total = group_b + len(outright)
    share = group_b / total
    known = sum(outright) / total
    interval = MeanInterval(
        known + share * theta.estimate,
        known + share * theta.lower,
        known + share * theta.upper,
        share * theta.stderr,
        theta.confidence,
        theta.tuning,
    )
    return Correction(interval, len(outright), len(human), len(model_only))
