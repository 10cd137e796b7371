"""`rankmon compare`: candidate runs against a baseline run on one qrels, paired by query.

Every query of the qrels is scored in every run, a query a run misses as an empty ranking
(0, as trec_eval's `-c`), so all runs are paired on the same queries. Per candidate and
measure: the mean, the mean per-query difference from the baseline (delta), its interval,
a two-sided p-value (`--test`: the paired sign-flip permutation, Student's t, or the
bootstrap; `monitor.stats.paired`), the effect size and the number of queries; the p-values
of the whole family (candidates x measures) are corrected (`--correction`: Holm, the
default, Bonferroni or none). With alpha = 1 - confidence:

- verdict: `better` (corrected p < alpha, delta > 0), `worse` (corrected p < alpha, delta <
  0), else `no_difference`;
- gate `better` (default): a candidate passes when its verdict is better and delta >= margin;
- gate `non-inferior`: it passes when the interval's lower end is above -margin (at most
  `margin` worse, at the interval's confidence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from monitor.errors import MeasureError
from monitor.scoring.evalset import EvaluationSet
from monitor.stats.corrections import adjust_p_values
from monitor.stats.paired import PairedResult, paired_comparison
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import Run
from monitor.trec.selection import MeasureSelection

__all__ = ["GATES", "RunComparison", "compare_runs", "missing_queries"]

GATES = ("better", "non-inferior")


@dataclass(frozen=True)
class RunComparison:
    """One candidate run on one measure against the baseline."""

    run: str
    measure: str
    mean: float
    baseline_mean: float
    result: PairedResult
    p_value_corrected: float
    verdict: str
    passes: bool

    def to_json(self) -> dict[str, object]:
        r = self.result
        values: dict[str, object] = {
            "run": self.run,
            "measure": self.measure,
            "mean": self.mean,
            "baseline_mean": self.baseline_mean,
            "delta": r.delta,
            "ci_lower": r.ci_lower,
            "ci_upper": r.ci_upper,
            "p_value": r.p_value,
            "p_value_corrected": self.p_value_corrected,
            "effect_size": r.effect_size,
            "queries": r.queries,
            "verdict": self.verdict,
            "passes": self.passes,
        }
        return {
            k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in values.items()
        }


def missing_queries(evaluation_set: EvaluationSet, run: Run) -> int:
    """How many qrels queries the run has no ranking for (they score 0)."""
    return sum(1 for qid in evaluation_set if qid not in run.rankings)


def compare_runs(
    evaluation_set: EvaluationSet,
    baseline: tuple[str, Run],
    candidates: Sequence[tuple[str, Run]],
    selection: MeasureSelection,
    *,
    test: str = "permutation",
    confidence: float = 0.95,
    correction: str = "holm",
    gate: str = "better",
    margin: float = 0.0,
    relevance_level: int = 1,
) -> list[RunComparison]:
    """Every candidate on every measure, in the order given (module docstring)."""
    if gate not in GATES:
        raise MeasureError(f"unknown gate {gate!r}: one of {', '.join(GATES)}")
    counts = selection.not_averaged()
    if counts:
        raise MeasureError(
            f"{', '.join(counts)}: counts and summary-only values are not compared; name a "
            "measure such as ndcg_cut.10"
        )

    def values(run: Run) -> dict[str, np.ndarray]:
        report = evaluate_run(
            evaluation_set, run, selection, complete=True, relevance_level=relevance_level
        )
        # complete: every query of the qrels, in the same (strcmp) order for every run
        return {name: np.array(report.values[name], dtype=np.float64) for name in selection.names}

    before = values(baseline[1])
    rows: list[tuple[str, str, float, PairedResult]] = []
    for name, run in candidates:
        after = values(run)
        for measure in selection.names:
            result = paired_comparison(
                after[measure] - before[measure], test=test, confidence=confidence
            )
            rows.append((name, measure, float(after[measure].mean()), result))
    corrected = adjust_p_values([row[3].p_value for row in rows], correction)
    alpha = 1.0 - confidence
    out = []
    for (name, measure, mean, result), p in zip(rows, corrected, strict=True):
        verdict = _verdict(result.delta, p, alpha)
        if gate == "better":
            passes = verdict == "better" and result.delta >= margin
        else:
            passes = result.ci_lower > -margin
        out.append(
            RunComparison(
                name, measure, mean, float(before[measure].mean()), result, p, verdict, passes
            )
        )
    return out


def _verdict(delta: float, p: float, alpha: float) -> str:
    if math.isnan(p) or p >= alpha or delta == 0:
        return "no_difference"
    return "better" if delta > 0 else "worse"
