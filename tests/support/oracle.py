"""The oracle: one executable specification per measure kind, on ONE ranking, written for
reading rather than speed. The engines (`monitor.scoring.columns`, and the C kernel through
them) are tested against it; `value` is the one table from a kind to its definition here.

Conventions (trec_eval 10.0, docs/metric-conventions.md sections 3-5), shared by every function here
and by the vectorised engine in `monitor.scoring.scorer`, which must give the same numbers:

- `grades` holds the grade of each retrieved document in rank order (rank 1 first): an int
  for a document in the evaluation set, `None` for one that is not. Ordering the ranking
  (ties included) is the caller's job.
- A negative grade is a judged document that gains 0 and is never relevant (V1).
- A document is relevant when its grade >= `relevance_level` (default 1). `relevance_level`
  affects the binary measures (precision, recall, RR, AP) but never nDCG/DCG (N7).
- Discount at rank r (1-based): 1 / log2(r + 1) (N2).
- A cutoff `k` looks at the first min(k, len(grades)) documents; a short ranking is not padded
  (equivalent to padding with gain-0, non-relevant documents) (N3).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from monitor.scoring.columns import IdcgZero
from monitor.scoring.gain import LINEAR, Gain

__all__ = [
    "IdcgZero",
    "average_precision",
    "dcg",
    "ideal_dcg",
    "judged",
    "ndcg",
    "ndcg_bounds",
    "ndcg_condensed",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
    "success",
    "value",
]

Grades = Sequence[int | None]


def _top(grades: Grades, k: int | None) -> Grades:
    if k is None:
        return grades
    if k < 1:
        raise ValueError(f"cutoff k must be >= 1, got {k}")
    return grades[:k]


def _relevant(grade: int | None, relevance_level: int) -> bool:
    # A negative grade is never relevant, even with relevance_level 0 (V1).
    return grade is not None and grade >= max(relevance_level, 0)


def dcg(grades: Grades, k: int | None = None, gain: Gain = LINEAR) -> float:
    """DCG@k = sum over ranks r = 1..min(k, n) of gain(g_r) / log2(r + 1).

    `k=None`: no cutoff (the whole ranking). `None` and negative grades gain 0.
    """
    return sum(gain.of(g) / math.log2(r + 1) for r, g in enumerate(_top(grades, k), start=1))


def ideal_dcg(ideal_grades: Iterable[int], k: int | None = None, gain: Gain = LINEAR) -> float:
    """IDCG@k: DCG of the query's judged documents sorted by gain, highest first, cut at k.

    `ideal_grades` are ALL the grades known for the query (retrieved or not, N4); negative
    grades gain 0 and so never add to it. Not limited by the number of retrieved documents.
    """
    gains = sorted((gain.of(g) for g in ideal_grades), reverse=True)
    top = gains if k is None else gains[:k]
    return sum(value / math.log2(r + 1) for r, value in enumerate(top, start=1) if value > 0)


def ndcg(
    grades: Grades,
    ideal_grades: Iterable[int],
    k: int | None = None,
    gain: Gain = LINEAR,
    idcg_zero: IdcgZero = "zero",
) -> float:
    """nDCG@k = DCG@k / IDCG@k (trec_eval `ndcg_cut_k`; `k=None` is trec_eval `ndcg`, N5).

    When IDCG@k = 0 (the query has no document with a positive gain), the value is 0 and the
    query still counts in means (`idcg_zero="zero"`, trec_eval, N6), or NaN so that the caller
    can leave the query out (`idcg_zero="exclude"`). Never exceeds 1 when `ideal_grades` holds
    every grade in `grades`.
    """
    if idcg_zero not in ("zero", "exclude"):
        raise ValueError(f"idcg_zero must be 'zero' or 'exclude', got {idcg_zero!r}")
    ideal = ideal_dcg(ideal_grades, k, gain)
    if ideal == 0.0:
        return 0.0 if idcg_zero == "zero" else math.nan
    return dcg(grades, k, gain) / ideal


def precision(grades: Grades, k: int, relevance_level: int = 1) -> float:
    """P@k = (number of relevant documents in the first k) / k.

    Always divided by k, even when fewer than k documents were retrieved (trec_eval P_k).
    """
    top = _top(grades, k)
    return sum(_relevant(g, relevance_level) for g in top) / k


def recall(grades: Grades, num_rel: int, k: int | None = None, relevance_level: int = 1) -> float:
    """recall@k = (number of relevant documents in the first k) / num_rel; 0 when num_rel = 0.

    `num_rel` is the number of the query's judged documents with grade >= relevance_level,
    retrieved or not (V3).
    """
    if num_rel == 0:
        return 0.0
    return sum(_relevant(g, relevance_level) for g in _top(grades, k)) / num_rel


def reciprocal_rank(grades: Grades, relevance_level: int = 1) -> float:
    """RR = 1 / rank of the first relevant document; 0 if none was retrieved. No cutoff."""
    for rank, grade in enumerate(grades, start=1):
        if _relevant(grade, relevance_level):
            return 1.0 / rank
    return 0.0


def average_precision(
    grades: Grades, num_rel: int, relevance_level: int = 1, k: int | None = None
) -> float:
    """AP = (sum over relevant retrieved documents of precision at their rank) / num_rel.

    Relevant documents that were not retrieved contribute 0; 0 when num_rel = 0 (trec_eval map).
    With `k`, only the first k documents count and the divisor stays num_rel (trec_eval
    `map_cut_k`).
    """
    if num_rel == 0:
        return 0.0
    found = 0
    total = 0.0
    for rank, grade in enumerate(_top(grades, k), start=1):
        if _relevant(grade, relevance_level):
            found += 1
            total += found / rank
    return total / num_rel


def judged(grades: Grades, k: int) -> float:
    """judged@k = (documents in the first k that the evaluation set grades) / min(k, n).

    Any grade counts, 0 and negative included; only `None` is unjudged. This is ir_measures'
    `Judged@k`, not 1 - trec_eval's `unj_k` (which divides by k). An empty ranking gives 0.
    """
    top = _top(grades, k)
    if not top:
        return 0.0
    return sum(g is not None for g in top) / len(top)


def success(grades: Grades, k: int, relevance_level: int = 1) -> float:
    """success@k = 1 if a relevant document is in the first k, else 0 (trec_eval success_k)."""
    return 1.0 if any(_relevant(g, relevance_level) for g in _top(grades, k)) else 0.0


def r_precision(grades: Grades, num_rel: int, relevance_level: int = 1) -> float:
    """R-precision: relevant documents in the first num_rel, over num_rel; 0 when num_rel = 0.

    A ranking shorter than num_rel is not padded: its relevant documents still count over
    num_rel (trec_eval Rprec).
    """
    if num_rel == 0:
        return 0.0
    return sum(_relevant(g, relevance_level) for g in grades[:num_rel]) / num_rel


def ndcg_condensed(
    grades: Grades,
    ideal_grades: Iterable[int],
    k: int | None = None,
    gain: Gain = LINEAR,
    idcg_zero: IdcgZero = "zero",
) -> float:
    """Condensed-list nDCG (Sakai's nDCG'@k): nDCG@k of the ranking with every document not
    in the evaluation set removed (the judged ones move up), over the same ideal DCG; what
    trec_eval's ndcg_cut gives on a run without those documents."""
    return ndcg([g for g in grades if g is not None], ideal_grades, k, gain, idcg_zero)


def ndcg_bounds(
    grades: Grades,
    ideal_grades: Iterable[int],
    scale: Iterable[int],
    k: int,
    *,
    gain: Gain = LINEAR,
    idcg_zero: IdcgZero = "zero",
    every_grading: bool = False,
) -> tuple[float, float]:
    """(least, most) nDCG@k over every grading of the unjudged documents of the first k with
    the grades of `scale` and 0, each graded document entering the ideal too.

    By default each multiset of grades is tried twice, highest grades at the best ranks and
    at the worst (for a fixed multiset the ideal DCG is fixed, and the rearrangement
    inequality puts the extremes of the DCG there); `every_grading` tries every assignment
    ((grades + 1)^u of them, for small u). Undefined values (IDCG 0 under "exclude") are
    left out; NaN if every one is."""
    ideal = list(ideal_grades)
    top = list(grades[:k])
    unjudged = [i for i, g in enumerate(top) if g is None]
    by_gain: dict[float, int] = {}
    for grade in sorted({*scale, 0}):
        by_gain.setdefault(gain.of(grade), grade)  # one grade per gain
    choices = sorted(by_gain.values(), key=gain.of, reverse=True)
    if every_grading:
        orders: Iterable[tuple[int, ...]] = itertools.product(choices, repeat=len(unjudged))
    else:
        orders = (
            order
            for chosen in itertools.combinations_with_replacement(choices, len(unjudged))
            for order in (chosen, chosen[::-1])
        )
    values = []
    for order in orders:
        filled: list[int | None] = list(top)
        for rank, grade in zip(unjudged, order, strict=True):
            filled[rank] = grade
        values.append(ndcg(filled, ideal + list(order), k, gain, idcg_zero))
    defined = [v for v in values if not math.isnan(v)]
    return (min(defined), max(defined)) if defined else (math.nan, math.nan)


def rbp(grades: Grades, ideal: list[int], k: int, p: float) -> float:
    """RBP@k with persistence p, trec_eval's way: each grade its own gain (unjudged and
    negative 0), over the query's highest grade when that is over 1; p^i by repeated
    multiplication, the sum in rank order."""
    highest = max(ideal, default=0)
    total, weight = 0.0, 1.0
    for grade in grades[:k]:
        gain = float(max(grade or 0, 0))
        total += gain / highest * weight if highest > 1 else gain * weight
        weight *= p
    return (1.0 - p) * total


def rbp_residual(grades: Grades, k: int, p: float) -> float:
    """What the unjudged documents of the first k could add to RBP@k: p^d plus the weight
    (1 - p) p^(i-1) of each unjudged one; 0 when none is unjudged (trec_eval's rbp_resid)."""
    shown = grades[:k]
    if all(grade is not None for grade in shown):
        return 0.0
    weights, weight = [], 1.0
    for _ in range(len(shown) + 1):
        weights.append(weight)
        weight *= p
    unjudged = 0.0
    for rank, grade in enumerate(shown):
        if grade is None:
            unjudged += weights[rank]
    return weights[len(shown)] + (1.0 - p) * unjudged


def err(grades: Grades, k: int, max_grade: float) -> float:
    """ERR@k as gdeval.pl computes it: at each of the first k ranks the reader stops with
    probability (2^g - 1) / 2^max_grade (g: the grade, unjudged and negative 0, at most
    max_grade), and ERR sums that probability over the rank times the chance of getting there."""
    score, reached = 0.0, 1.0
    for rank, grade in enumerate(grades[:k], start=1):
        stop = (2.0 ** min(max(grade or 0, 0), max_grade) - 1.0) / 2.0**max_grade
        score += stop * reached / rank
        reached *= 1.0 - stop
    return score


def value(
    kind: str,
    grades: Grades,
    judgments: Iterable[int],
    *,
    k: int | None,
    gain: Gain | None,
    level: int,
    idcg_zero: IdcgZero,
    scale: Iterable[int] | None = None,
    params: Mapping[str, float] | None = None,
) -> float:
    """The value of the measure `kind` (cutoff `k`, gain `gain`, its other parameters
    `params`, default p 0.8) for one ranking's `grades`, given every grade its query has
    (`judgments`, retrieved or not); `scale`: the evaluation set's grades, which the bounds of
    nDCG@k give unjudged documents (default: the query's)."""
    persistence = (params or {}).get("p", 0.8)
    ideal = list(judgments)
    grade_scale = ideal if scale is None else list(scale)
    num_rel = sum(g >= max(level, 0) for g in ideal)
    gain = gain or LINEAR
    cut = k or 0
    table: dict[str, Callable[[], float]] = {
        "ndcg": lambda: ndcg(grades, ideal, k, gain, idcg_zero),
        "ndcg_condensed": lambda: ndcg_condensed(grades, ideal, k, gain, idcg_zero),
        "ndcg_lower": lambda: ndcg_bounds(
            grades, ideal, grade_scale, cut, gain=gain, idcg_zero=idcg_zero
        )[0],
        "ndcg_upper": lambda: ndcg_bounds(
            grades, ideal, grade_scale, cut, gain=gain, idcg_zero=idcg_zero
        )[1],
        "dcg": lambda: dcg(grades, k, gain),
        "precision": lambda: precision(grades, cut, level),
        "recall": lambda: recall(grades, num_rel, cut, level),
        "judged": lambda: judged(grades, cut),
        "mrr": lambda: reciprocal_rank(grades, level),
        "map": lambda: average_precision(grades, num_rel, level),
        "map_cut": lambda: average_precision(grades, num_rel, level, k),
        "success": lambda: success(grades, cut, level),
        "rprec": lambda: r_precision(grades, num_rel, level),
        "num_ret": lambda: float(len(grades)),
        "num_rel": lambda: float(num_rel),
        "num_rel_ret": lambda: float(sum(_relevant(g, level) for g in grades)),
        "rbp": lambda: rbp(grades, ideal, cut, persistence),
        "rbp_residual": lambda: rbp_residual(grades, cut, persistence),
        "err": lambda: err(grades, cut, (params or {}).get("max_grade", 4.0)),
    }
    return table[kind]()
