"""`rankmon compare`: candidate runs against a baseline run on one qrels, paired by query.

Which queries: as `rankmon eval` and trec_eval, the qrels queries that both runs rank
(`complete=False`, the default); with `complete` (`-c`) every qrels query, one a run misses
scoring 0 (trec_eval's `-c`). Every mean (the candidate's, the baseline's, the delta) is over
those queries, and the output says how many. Per candidate and measure: the means, the mean
per-query difference from the baseline (delta), its interval, a two-sided p-value (`--test`:
the paired sign-flip permutation, Student's t, or the bootstrap; `monitor.stats.paired`), the
effect size and the number of queries; the p-values of the whole family (m = candidates x
measures) are corrected (`--correction`: Holm, the default, Bonferroni or none), and so are
the intervals the gates read: at confidence 1 - alpha / m (Bonferroni, simultaneous over the
family; `none`: 1 - alpha). With alpha = 1 - confidence:

- verdict: `better` (corrected p < alpha, delta > 0), `worse` (corrected p < alpha, delta <
  0), `inconclusive` when the queries could not give a corrected p under alpha whatever the
  differences (4 queries under the exact sign-flip test: p >= 2 / 2^4), else
  `no_difference`; `min_detectable` is the difference the queries detect with 80 % power
  at the family's level ((t + z_0.8) * sd / sqrt(n));
- gate `better` (default): a candidate passes when the corrected interval's lower end is
  above `margin` (the improvement is at least the margin, not just its point estimate);
- gate `non-inferior`: it passes when the corrected interval's lower end is above -margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from monitor.errors import MeasureError
from monitor.scoring.evalset import EvaluationSet
from monitor.stats.corrections import adjust_p_values
from monitor.stats.paired import PairedResult, paired_comparison
from monitor.stats.query_units import Z_POWER
from monitor.stats.sign_flips import EXACT_LIMIT
from monitor.stats.student_t import t_ppf
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
    ci_lower_corrected: float = math.nan
    ci_upper_corrected: float = math.nan
    min_detectable: float = math.nan

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
            "ci_lower_corrected": self.ci_lower_corrected,
            "ci_upper_corrected": self.ci_upper_corrected,
            "min_detectable": self.min_detectable,
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
    complete: bool = False,
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

    def values(run: Run) -> dict[str, dict[str, float]]:
        report = evaluate_run(
            evaluation_set, run, selection, complete=complete, relevance_level=relevance_level
        )
        return {
            name: dict(zip(report.queries, map(float, report.values[name]), strict=True))
            for name in selection.names
        }

    before = values(baseline[1])
    rows: list[tuple[str, str, float, float, npt.NDArray[np.float64]]] = []
    for name, run in candidates:
        after = values(run)
        for measure in selection.names:
            common = sorted(before[measure].keys() & after[measure].keys())
            b = np.array([before[measure][q] for q in common], dtype=np.float64)
            a = np.array([after[measure][q] for q in common], dtype=np.float64)
            mean_a = float(a.mean()) if a.size else math.nan
            mean_b = float(b.mean()) if b.size else math.nan
            rows.append((name, measure, mean_a, mean_b, a - b))
    results = [paired_comparison(row[4], test=test, confidence=confidence) for row in rows]
    corrected = adjust_p_values([r.p_value for r in results], correction)
    alpha = 1.0 - confidence
    family = len(rows) if correction != "none" else 1
    out = []
    for row, result, p in zip(rows, results, corrected, strict=True):
        name, measure, mean, baseline_mean, differences = row
        if family > 1:
            # the permutation test's interval is Student's t: no need to draw its signs again
            interval_test = "bootstrap" if test == "bootstrap" else "t"
            wide = paired_comparison(
                differences, test=interval_test, confidence=1.0 - alpha / family
            )
            lower, upper = wide.ci_lower, wide.ci_upper
        else:
            lower, upper = result.ci_lower, result.ci_upper
        decidable = _smallest_p(test, result.queries) * family < alpha
        verdict = _verdict(result.delta, p, alpha) if decidable else "inconclusive"
        passes = lower > margin if gate == "better" else lower > -margin
        out.append(
            RunComparison(
                run=name,
                measure=measure,
                mean=mean,
                baseline_mean=baseline_mean,
                result=result,
                p_value_corrected=p,
                verdict=verdict,
                passes=bool(passes) and verdict != "inconclusive",
                ci_lower_corrected=lower,
                ci_upper_corrected=upper,
                min_detectable=_min_detectable(result, alpha / family),
            )
        )
    return out


def _smallest_p(test: str, queries: int) -> float:
    """The smallest two-sided p-value `test` can give on this many queries."""
    if queries < 2:
        return 1.0
    if test == "permutation" and queries <= EXACT_LIMIT:
        return min(1.0, 2.0 / 2.0**queries)
    return 0.0


def _min_detectable(result: PairedResult, level: float) -> float:
    """The difference these queries detect with 80 % power at `level` (two-sided)."""
    n = result.queries
    if n < 2 or math.isnan(result.stderr):
        return math.nan
    return (t_ppf(1.0 - level / 2.0, n - 1) + Z_POWER) * result.stderr


def _verdict(delta: float, p: float, alpha: float) -> str:
    if math.isnan(p) or p >= alpha or delta == 0:
        return "no_difference"
    return "better" if delta > 0 else "worse"
