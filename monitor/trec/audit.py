"""`rankmon eval --audit HUMAN_QRELS`: a run's measures under model judgments, corrected by a
human audit.

QRELS holds a model's (an LLM judge's) grades; HUMAN_QRELS a human's for a random sample of the
same queries, each audited query judged in full. For every measure whose `all` line is a mean,
its per-query values under both judgments on the audited queries and under the model's on the
others give PPI++'s estimate of the mean under human judgments, with its 95 % interval and
the human-only one beside it (`monitor.stats.judges`; its coverage, measured by
bench/judges.py: docs/metrics.md "Judges"). The judge's agreement with the human is the
quadratic weighted kappa over the (query, document) pairs both graded.

`rankmon compare --audit` does the same for a candidate's per-query difference from the
baseline (`audited_difference`): the mean difference under human judgments.

The population the estimate is about: the queries the audit was drawn from at random, with
the model judging them all. An audit chosen otherwise (the hard queries) breaks it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from monitor.errors import InputError
from monitor.scoring.evalset import EvaluationSet
from monitor.stats.judges import MeanInterval, classical_mean, ppi_mean, weighted_kappa
from monitor.trec.report import ALL, EvaluationReport, trec_line

__all__ = ["Audit", "audit", "audited_difference"]


@dataclass(frozen=True)
class Audit:
    """The audit's figures: per measure, PPI++'s interval and the human-only one."""

    queries: int  # audited
    model_only: int  # the other queries of the run
    pairs: int  # (query, document) pairs both graded
    kappa: float
    corrected: dict[str, MeanInterval]
    human_only: dict[str, MeanInterval]

    def trec_lines(self) -> Iterator[str]:
        """Summary lines in trec_eval's format, after the report's."""
        yield trec_line("audit_queries", ALL, self.queries)
        yield trec_line("audit_judged_pairs", ALL, self.pairs)
        yield trec_line("audit_kappa", ALL, self.kappa)
        for name, interval in self.corrected.items():
            yield trec_line(f"{name}_ppi", ALL, interval.estimate)
            yield trec_line(f"{name}_ppi_lower", ALL, interval.lower)
            yield trec_line(f"{name}_ppi_upper", ALL, interval.upper)

    def to_dict(self) -> dict[str, object]:
        def interval(value: MeanInterval) -> dict[str, float]:
            return {"estimate": value.estimate, "lower": value.lower, "upper": value.upper}

        return {
            "queries": self.queries,
            "model_only_queries": self.model_only,
            "judged_pairs": self.pairs,
            "kappa": self.kappa,
            "measures": {
                name: {
                    **interval(value),
                    "tuning": value.tuning,
                    "human_only": interval(self.human_only[name]),
                }
                for name, value in self.corrected.items()
            },
        }


def audit(
    model: EvaluationReport,
    human: EvaluationReport,
    model_set: EvaluationSet,
    human_set: EvaluationSet,
    path: str,
) -> Audit:
    """The audit of `model` (the run under the model's judgments) by `human` (the same run
    under the human's, on the audited queries). `path` names the audit file in errors."""
    audited = [q for q in model.queries if q in human_set.query_ids]
    others = [q for q in model.queries if q not in human_set.query_ids]
    if len(audited) < 2 or len(others) < 2:
        raise InputError(
            path,
            f"the audit needs at least 2 of the run's queries judged by humans and 2 judged "
            f"by the model alone; it has {len(audited)} and {len(others)}",
        )
    means = [c.name for c in model.columns if c.summary == "mean" and c.per_query]
    corrected, human_only = {}, {}
    for name in means:
        human_values = [float(human.per_query[q][name]) for q in audited]
        corrected[name] = ppi_mean(
            human_values,
            [float(model.per_query[q][name]) for q in audited],
            [float(model.per_query[q][name]) for q in others],
        )
        human_only[name] = classical_mean(human_values)
    pairs_human, pairs_model = [], []
    for query in audited:
        model_grades = model_set.grades(query)
        for doc, grade in human_set.grades(query).items():
            if doc in model_grades:
                pairs_human.append(grade)
                pairs_model.append(model_grades[doc])
    scale = sorted({*pairs_human, *pairs_model})
    kappa = weighted_kappa(pairs_human, pairs_model, scale) if len(scale) > 1 else float("nan")
    return Audit(len(audited), len(others), len(pairs_human), kappa, corrected, human_only)


def audited_difference(
    model: tuple[EvaluationReport, EvaluationReport],
    human: tuple[EvaluationReport, EvaluationReport],
    name: str,
    *,
    audited_queries: frozenset[str],
    confidence: float,
    path: str,
) -> MeanInterval:
    """PPI++'s estimate of the candidate's mean difference from the baseline on measure
    `name` under human judgments: `model` and `human` are (baseline, candidate) reports under
    each; the queries are those both runs were scored on, audited when in `audited_queries`."""
    base, cand = (dict(zip(r.queries, r.values[name], strict=True)) for r in model)
    base_h, cand_h = (dict(zip(r.queries, r.values[name], strict=True)) for r in human)
    common = [q for q in base if q in cand]
    audited = [q for q in common if q in audited_queries and q in base_h and q in cand_h]
    others = [q for q in common if q not in audited_queries]
    if len(audited) < 2 or len(others) < 2:
        raise InputError(
            path,
            f"the audit needs at least 2 of the compared queries judged by humans and 2 "
            f"judged by the model alone; it has {len(audited)} and {len(others)}",
        )
    return ppi_mean(
        [float(cand_h[q]) - float(base_h[q]) for q in audited],
        [float(cand[q]) - float(base[q]) for q in audited],
        [float(cand[q]) - float(base[q]) for q in others],
        confidence,
    )
