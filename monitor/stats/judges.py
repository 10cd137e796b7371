"""A model judge held to human labels: how well it agrees, and a mean corrected by them.

Teams fill the holes of an evaluation set with an LLM judge, which is biased (its grades run
higher than human assessors' and follow document length). Where humans graded a sample of
what the judge graded (an audit), two numbers say how far to trust it:

- `weighted_kappa`: Cohen's kappa with quadratic weights between the human and the model
  grades of the audited units (1: same grades, 0: chance agreement), and `confusion`, the
  grade table behind it;
- `ppi_mean`: the mean of a measure over a population, estimated from `n` units with both a
  human value and a model value and `N` other units with a model value only, by
  prediction-powered inference with power tuning (PPI++, Angelopoulos, Duchi and Zrnic 2023):

      estimate = lam * mean(model over the N) + mean(human - lam * model over the n)
      variance = lam^2 Var(model) / N + Var(human - lam * model) / n
      lam      = Cov(human, model) / ((1 + n / N) Var(model)), clipped to [0, 1]
                 (both over the audit: the lam that minimises the estimated variance)

  and a normal interval at `confidence`. The estimate is unbiased for the human-label mean
  whatever the judge's bias (the audit measures it); lam = 0 is the human-only mean, and a
  judge that tracks the humans narrows the interval. The population is the one the audit
  and the model-labelled units are both drawn from, independently and at random: a
  non-random audit breaks it. `classical_mean` is the human-only interval, for comparison.

`judge_reading` is what the monitor watches of a judge as its audit grows: over its newest
`span` audit pairs, the kappa (with its jackknife standard error, `kappa_stderr`), the grade
table and the bias (mean model grade minus human grade), and whether that bias moved from its
reference, the source's first `span` audit pairs (a judge upgrade or a prompt change under the
same name moves it, and it stays moved): a two-sample normal test of the two spans' mean
differences, once they no longer overlap.

bench/judges.py checks the interval's coverage, its width against the human-only one and the
uncorrected bias by seeded simulation; its figures are in docs/metrics.md, "Judges".
numpy only (and the standard library's normal quantile).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

__all__ = [
    "JudgeReading",
    "MeanInterval",
    "classical_mean",
    "confusion",
    "judge_reading",
    "kappa_stderr",
    "ppi_mean",
    "weighted_kappa",
]

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class MeanInterval:
    """An estimate of a population mean with its interval at `confidence`; `tuning` is
    PPI++'s lam (0 for the human-only mean)."""

    estimate: float
    lower: float
    upper: float
    stderr: float
    confidence: float
    tuning: float = 0.0

    @property
    def width(self) -> float:
        return self.upper - self.lower

    def covers(self, value: float) -> bool:
        return self.lower <= value <= self.upper


def _interval(estimate: float, stderr: float, confidence: float, tuning: float) -> MeanInterval:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    half = z * stderr
    return MeanInterval(estimate, estimate - half, estimate + half, stderr, confidence, tuning)


def classical_mean(values: Sequence[float] | Floats, confidence: float = 0.95) -> MeanInterval:
    """The mean of `values` (at least 2) with its normal interval: the human-only estimate."""
    data = np.asarray(values, dtype=np.float64)
    if data.size < 2:
        raise ValueError("a mean's interval needs at least 2 values")
    return _interval(
        float(data.mean()), float(data.std(ddof=1)) / math.sqrt(data.size), confidence, 0.0
    )


def ppi_mean(
    human: Sequence[float] | Floats,
    model_audited: Sequence[float] | Floats,
    model_only: Sequence[float] | Floats,
    confidence: float = 0.95,
    *,
    tuned: bool = True,
) -> MeanInterval:
    """PPI++'s estimate of the human-label mean (module docstring): `human[i]` and
    `model_audited[i]` are the two values of audited unit i (at least 2 units), `model_only`
    the model's values of the other units (at least 2). `tuned=False` takes lam = 1 (plain
    PPI)."""
    y = np.asarray(human, dtype=np.float64)
    f = np.asarray(model_audited, dtype=np.float64)
    g = np.asarray(model_only, dtype=np.float64)
    if y.shape != f.shape:
        raise ValueError("human and model_audited must hold one value per audited unit")
    n, big_n = y.size, g.size
    if n < 2 or big_n < 2:
        raise ValueError("PPI needs at least 2 audited and 2 model-only units")
    lam = 1.0
    if tuned:
        # Both from the audit: the lam that minimises the variance estimated below.
        variance = float(f.var(ddof=1))
        covariance = float(np.cov(y, f, ddof=1)[0, 1])
        lam = 0.0 if variance == 0.0 else covariance / ((1.0 + n / big_n) * variance)
        lam = min(1.0, max(0.0, lam))
    residual = y - lam * f
    estimate = lam * float(g.mean()) + float(residual.mean())
    variance = lam * lam * float(g.var(ddof=1)) / big_n + float(residual.var(ddof=1)) / n
    return _interval(estimate, math.sqrt(variance), confidence, lam)


def confusion(
    human: Sequence[int], model: Sequence[int], grades: Sequence[int]
) -> npt.NDArray[np.int64]:
    """The grade table: row = the human grade, column = the model grade, in `grades` order."""
    if len(human) != len(model):
        raise ValueError("human and model must grade the same units")
    index = {grade: i for i, grade in enumerate(grades)}
    table = np.zeros((len(grades), len(grades)), dtype=np.int64)
    for h, m in zip(human, model, strict=True):
        if h not in index or m not in index:
            raise ValueError(f"grade {h if h not in index else m} is not one of {list(grades)}")
        table[index[h], index[m]] += 1
    return table


def _table_kappa(observed: Floats) -> float:
    """The quadratic weighted kappa of a grade table (NaN: empty, or no expected
    disagreement)."""
    total = observed.sum()
    if total == 0:
        return float("nan")
    k = observed.shape[0]
    steps = np.arange(k, dtype=np.float64)
    weights = (steps[:, None] - steps[None, :]) ** 2 / (k - 1) ** 2
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total
    chance = float((weights * expected).sum())
    if chance == 0.0:
        return float("nan")
    return 1.0 - float((weights * observed).sum()) / chance


def weighted_kappa(human: Sequence[int], model: Sequence[int], grades: Sequence[int]) -> float:
    """Cohen's kappa with quadratic weights over the ordered `grades` (at least 2): 1 for the
    same grades, 0 for what chance gives, negative below; NaN when the expected disagreement
    is 0 (every unit in one grade on both sides)."""
    if len(grades) < 2:
        raise ValueError("kappa needs at least 2 grades")
    return _table_kappa(confusion(human, model, grades).astype(np.float64))


@dataclass(frozen=True)
class JudgeReading:
    """A model judge against the people, over its newest `span` audit pairs (`pairs` of them:
    fewer while the audit is young) and its reference, the source's first `span` pairs
    (`before` of them: those not among the newest)."""

    source: str
    total: int  # audit pairs of the source read in all
    pairs: int
    kappa: float
    bias: float  # mean (model - human) grade over the newest pairs
    before: int
    previous_bias: float  # over the reference (NaN: none)
    shift_p: float  # two-sided p of "the bias did not move" (NaN: not enough pairs)
    confusion: tuple[tuple[int, ...], ...]  # human grade (rows) x model grade, newest pairs
    grades: tuple[int, ...] = ()  # the confusion's rows and columns, in order
    kappa_stderr: float = math.nan  # the kappa's jackknife standard error

    @property
    def shift(self) -> float:
        """How far the bias moved (NaN: not enough pairs)."""
        return self.bias - self.previous_bias


def judge_reading(
    source: str, human: Sequence[int], model: Sequence[int], grades: Sequence[int], span: int
) -> JudgeReading:
    """`source`'s reading from its audit pairs in the order read (human and model grades)."""
    total = len(human)
    newest_h, newest_m = human[-span:], model[-span:]
    reference = min(span, max(0, total - span))  # the first pairs, none of the newest
    older_h, older_m = human[:reference], model[:reference]
    newest = np.subtract(newest_m, newest_h, dtype=np.float64)
    older = np.subtract(older_m, older_h, dtype=np.float64)
    bias = float(newest.mean()) if newest.size else math.nan
    previous = float(older.mean()) if older.size else math.nan
    p = math.nan
    if newest.size >= 2 and older.size >= 2:
        variance = float(newest.var(ddof=1)) / newest.size + float(older.var(ddof=1)) / older.size
        if variance > 0:
            z = abs(bias - previous) / math.sqrt(variance)
            p = math.erfc(z / math.sqrt(2.0))
        else:
            p = 1.0 if bias == previous else 0.0
    table = confusion(newest_h, newest_m, grades)
    kappa = _table_kappa(table.astype(np.float64)) if len(grades) >= 2 else math.nan
    return JudgeReading(
        source=source,
        total=total,
        pairs=len(newest_h),
        kappa=kappa,
        bias=bias,
        before=len(older_h),
        previous_bias=previous,
        shift_p=p,
        confusion=tuple(tuple(int(c) for c in row) for row in table),
        grades=tuple(grades),
        kappa_stderr=kappa_stderr(table) if len(grades) >= 2 else math.nan,
    )


def kappa_stderr(table: npt.NDArray[np.int64]) -> float:
    """The jackknife standard error of the quadratic weighted kappa of a grade table: each
    unit left out in turn, which for a table is one leave-one-out kappa per non-empty cell,
    weighted by its count (NaN with fewer than 3 units or a kappa left undefined)."""
    counts = table.astype(np.float64)
    n = float(counts.sum())
    if n < 3:
        return math.nan
    cells = [(i, j) for i, j in zip(*np.nonzero(counts), strict=True)]
    left_out = []
    for i, j in cells:
        counts[i, j] -= 1
        left_out.append(_table_kappa(counts))
        counts[i, j] += 1
    values = np.array(left_out)
    weights = np.array([counts[i, j] for i, j in cells])
    if not np.all(np.isfinite(values)):
        return math.nan
    mean = float(np.sum(weights * values) / n)
    return math.sqrt((n - 1) / n * float(np.sum(weights * (values - mean) ** 2)))
