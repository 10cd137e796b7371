"""trec_eval's measure families over `RankedRelevance`: the provider of the measure table's
kinds that the scorer's own columns do not compute (bpref, infAP, the set measures, ...).

Each family takes every evaluated query at once (one row each) and returns one column per
value name of its measure (one per cutoff or fraction given). `rankmon eval` calls them on
its rankings (`monitor.trec.evaluate`); the stream through the table's rows
(`monitor.scoring.providers`). The definitions are trec_eval 10.0's (its `m_*.c`;
docs/metrics.md, "`rankmon eval`: every trec_eval measure"); where a value is a sum, the terms are
added in rank order, as trec_eval's loops add them, so that the printed values agree with
trec_eval's to the last digit. Logarithms come from the C library (`math.log2`, `math.log`),
as trec_eval's do.

Conventions shared by all: a document is relevant when its grade is >= the relevance level
(`-l`); `R` is the query's number of relevant judged documents, retrieved or not; a value
trec_eval leaves undefined (R = 0 for recall-like measures, nothing retrieved) is 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cmp_to_key, lru_cache
from typing import Final

import numpy as np
import numpy.typing as npt

from monitor.scoring.columns import discounts
from monitor.scoring.relevance import NONPOOL, UNJUDGED, RankedRelevance

__all__ = [
    "FAMILIES",
    "MIN_GEO_MEAN",
    "Params",
    "Settings",
    "compute",
    "is_integer_name",
    "reset_missing",
]

Floats = npt.NDArray[np.float64]
Int64s = npt.NDArray[np.int64]
Values = Floats | list[str]

_INFAP_EPSILON: Final = 0.00001
# The least per-query value whose log a geometric mean takes (trec_eval's MIN_GEO_MEAN).
MIN_GEO_MEAN: Final = 0.00001
_RBP_PERSISTENCE: Final = 0.9


@dataclass(frozen=True)
class Params:
    """A measure's parameters: numbers (cutoffs, fractions, coefficients) or name=value pairs."""

    numbers: tuple[float, ...] = ()
    pairs: tuple[tuple[str, float], ...] = ()
    text: str | None = None  # as typed after the dot; None: trec_eval's defaults

    def pair(self, name: str, default: float) -> float:
        """The value of the pair `name` (the first one given), or `default`."""
        return next((value for key, value in self.pairs if key == name), default)


def is_integer_name(text: str) -> bool:
    """True for `3`, `-1`, `+2`: a pair name that is a relevance level (trec_eval valid_int)."""
    body = text[1:] if text[:1] in "+-" else text
    return body.isascii() and body.isdigit()


@dataclass(frozen=True)
class Settings:
    """What the command line adds: the collection size of `-N` (utility's fourth term)."""

    num_docs: int = 0


Family = Callable[[RankedRelevance, Params, Settings], Values]


def compute(name: str, params: Params, ranked: RankedRelevance, settings: Settings) -> Values:
    """The values of one requested measure: (queries, value names) floats, or strings.

    Terms a measure computes and then discards (x / 0 at ranks it does not use) are C
    doubles' inf and NaN, not warnings.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return FAMILIES[name](ranked, params, settings)


# Reset to 0 for a query the run misses, as trec_eval resets them after scoring its stand-in.
_RESET_WHEN_MISSING: Final = frozenset({"utility", "unj", "rbp_resid"})


def reset_missing(name: str, ranked: RankedRelevance, values: Values) -> Values:
    """`values` with trec_eval's clean-up for the queries the run misses (`-c`)."""
    if not ranked.missing.any():
        return values
    if isinstance(values, list):
        return [
            "" if missing else text for text, missing in zip(values, ranked.missing, strict=True)
        ]
    if name in _RESET_WHEN_MISSING:
        values = values.copy()
        values[ranked.missing] = 0.0
    return values


def _column(values: npt.NDArray[np.float64]) -> Floats:
    column: Floats = np.asarray(values, dtype=np.float64).reshape(-1, 1)
    return column


def _divide(numerator: npt.ArrayLike, denominator: npt.ArrayLike) -> Floats:
    """Elementwise C division of doubles: x/0 is inf or NaN, not an error."""
    with np.errstate(divide="ignore", invalid="ignore"):
        result: Floats = np.true_divide(numerator, denominator, dtype=np.float64)
    return result


def _row_sums(terms: Floats) -> Floats:
    """Each row's terms added left to right (zeros where a term does not apply)."""
    if terms.shape[1] == 0:
        return np.zeros(terms.shape[0], dtype=np.float64)
    sums: Floats = np.cumsum(terms, axis=1)[:, -1]
    return sums


def _ranks(width: int) -> Int64s:
    ranks: Int64s = np.arange(1, width + 1, dtype=np.int64)
    return ranks


# -- precision-and-recall family --------------------------------------------------------------


def _precision_sums(ranked: RankedRelevance) -> Floats:
    """Per query: the sum over relevant ranks r of (relevant so far) / r, in rank order."""
    terms = np.where(ranked.relevant, _divide(ranked.relevant_so_far, _ranks(ranked.width)), 0.0)
    return _row_sums(terms)


def _gm_map(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    average = np.where(
        ranked.num_rel_ret > 0, _divide(_precision_sums(ranked), ranked.num_rel), 0.0
    )
    return _column(np.array([math.log(max(a, MIN_GEO_MEAN)) for a in average.tolist()]))


def _yaap(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    sums = _precision_sums(ranked).tolist()
    num_rel = ranked.num_rel.tolist()
    values = [
        math.log((1.0 + s) / (1.0 + float(r) - s)) for s, r in zip(sums, num_rel, strict=True)
    ]
    return _column(np.array(values, dtype=np.float64))


def _cutoff_counts(ranked: RankedRelevance, counts: Int64s, params: Params) -> Int64s:
    columns = [
        ranked.so_far_at(counts, np.full(len(ranked.num_ret), int(k))) for k in params.numbers
    ]
    return np.stack(columns, axis=1) if columns else np.zeros((len(ranked.num_ret), 0), np.int64)


def _relative_p(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    found = _cutoff_counts(ranked, ranked.relevant_so_far, params)
    cutoffs = np.array(params.numbers, dtype=np.int64)
    shown = np.minimum(cutoffs[None, :], ranked.num_rel[:, None])
    return np.where(ranked.num_rel[:, None] > 0, _divide(found, shown), 0.0)


def _unj(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    unjudged = np.cumsum(ranked.unjudged, axis=1, dtype=np.int64)
    counts = _cutoff_counts(ranked, unjudged, params)
    return _divide(counts, np.array(params.numbers, dtype=np.float64)[None, :])


# -- interpolated precision ---------------------------------------------------------------


@dataclass(frozen=True)
class _Interpolated:
    """Per query: interpolated precision at the rank of each relevant retrieved document.

    Interpolated precision at rank r is the highest precision at any rank >= r (up to the
    last retrieved document). `at_relevant[q][c - 1]` is its value at the c-th relevant
    document; `tail[q]` the value where trec_eval's walk ends: at the first relevant
    document, or the precision of the whole ranking when none was retrieved.
    """

    at_relevant: list[list[float]]
    tail: list[float]

    @classmethod
    def of(cls, ranked: RankedRelevance) -> _Interpolated:
        width = ranked.width
        valid = _ranks(width)[None, :] <= ranked.num_ret[:, None]
        precision = np.where(valid, _divide(ranked.relevant_so_far, _ranks(width)), -np.inf)
        best_below = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
        whole = _divide(ranked.num_rel_ret, ranked.num_ret).tolist()
        rows, positions = np.nonzero(ranked.relevant)
        values = best_below[rows, positions].tolist()
        at_relevant: list[list[float]] = [[] for _ in range(len(ranked.num_ret))]
        for row, value in zip(rows.tolist(), values, strict=True):
            at_relevant[row].append(value)
        tail = [found[0] if found else w for found, w in zip(at_relevant, whole, strict=True)]
        return cls(at_relevant, tail)


def _lround(value: float) -> int:
    """C's lround: halves away from zero."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def _recall_cutoffs(fractions: Sequence[float], num_rel: int) -> list[int]:
    return [_lround(fraction * num_rel) for fraction in fractions]


def _interpolated_walk(cutoffs: Sequence[int], found: list[float], tail: float) -> list[float]:
    """The value trec_eval's backward walk gives each cutoff (a number of relevant documents).

    The walk visits the relevant documents from the last retrieved to the first; a cutoff of
    c takes the interpolated precision at the c-th, the cutoffs taken from the last one down
    while they can be met; those it cannot meet after the walk take `tail`, those above the
    relevant retrieved none.
    """
    values = [0.0] * len(cutoffs)
    index = len(cutoffs) - 1
    while index >= 0 and cutoffs[index] > len(found):
        index -= 1
    reached = len(found)
    while index >= 0 and 1 <= cutoffs[index] <= reached:
        reached = cutoffs[index]
        values[index] = found[reached - 1]
        index -= 1
    while index >= 0:
        values[index] = tail
        index -= 1
    return values


def _iprec_at_recall(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    curve = _Interpolated.of(ranked)
    rows = [
        _interpolated_walk(_recall_cutoffs(params.numbers, r), found, tail)
        for r, found, tail in zip(
            ranked.num_rel.tolist(), curve.at_relevant, curve.tail, strict=True
        )
    ]
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(params.numbers))


def _eleven_point(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    # The levels are used as given (not sorted); the sum runs from the last level to the first.
    curve = _Interpolated.of(ranked)
    averages = []
    for r, found, tail in zip(ranked.num_rel.tolist(), curve.at_relevant, curve.tail, strict=True):
        total = 0.0
        for value in reversed(_interpolated_walk(_recall_cutoffs(params.numbers, r), found, tail)):
            total += value
        averages.append(total / len(params.numbers))
    return _column(np.array(averages, dtype=np.float64))


def _rprec_mult(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    out = np.zeros((len(ranked.num_ret), len(params.numbers)), dtype=np.float64)
    for column, fraction in enumerate(params.numbers):
        ranks = np.array([int(fraction * r + 0.9) for r in ranked.num_rel.tolist()], np.int64)
        beyond = ranks > ranked.num_ret
        found = ranked.so_far_at(ranked.relevant_so_far, ranks)
        at = np.where(ranks >= 1, _divide(found, ranks), 0.0)
        out[:, column] = np.where(beyond, _divide(ranked.num_rel_ret, ranks), at)
    return out


# -- preference and inferred measures -----------------------------------------------------


def _judgment_counts(ranked: RankedRelevance) -> tuple[Int64s, Int64s]:
    nonrel = np.cumsum(ranked.judged_nonrelevant, axis=1, dtype=np.int64)
    unjudged = np.cumsum(ranked.rels == UNJUDGED, axis=1, dtype=np.int64)
    return nonrel, unjudged


def _bpref_values(ranked: RankedRelevance) -> Floats:
    nonrel_above, _ = _judgment_counts(ranked)
    r = ranked.num_rel[:, None]
    penalty = _divide(np.minimum(nonrel_above, r), np.minimum(ranked.num_nonrel[:, None], r))
    terms = np.where(nonrel_above > 0, 1.0 - penalty, 1.0)
    sums = _row_sums(np.where(ranked.relevant, terms, 0.0))
    result: Floats = np.where(ranked.num_rel > 0, _divide(sums, ranked.num_rel), sums)
    return result


def _bpref(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    return _column(_bpref_values(ranked))


def _gm_bpref(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    values = _bpref_values(ranked).tolist()
    return _column(np.array([math.log(max(v, MIN_GEO_MEAN)) for v in values], np.float64))


def _infap(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    nonrel, unjudged = _judgment_counts(ranked)
    rel = ranked.relevant_so_far
    j = np.arange(ranked.width, dtype=np.float64)[None, :]
    previous = rel - 1
    above = _divide(previous + nonrel + unjudged, j)
    sampled = _divide(previous + _INFAP_EPSILON, (previous + nonrel) + 2 * _INFAP_EPSILON)
    terms = 1.0 / (j + 1.0) + (j / (j + 1.0)) * above * sampled
    terms = np.where(j == 0, 1.0, terms)
    sums = _row_sums(np.where(ranked.relevant, terms, 0.0))
    return _column(np.where(ranked.num_rel > 0, _divide(sums, ranked.num_rel), sums))


# -- set measures ----------------------------------------------------------------------------


def _set_p(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    ret = ranked.num_ret
    return _column(np.where(ret > 0, _divide(ranked.num_rel_ret, ret), 0.0))


def _set_relative_p(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    ret, rel = ranked.num_ret, ranked.num_rel
    defined = (ret > 0) & (rel > 0)
    return _column(np.where(defined, _divide(ranked.num_rel_ret, np.minimum(ret, rel)), 0.0))


def _set_recall(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    rel = ranked.num_rel
    return _column(np.where(rel > 0, _divide(ranked.num_rel_ret, rel), 0.0))


def _set_map(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    found = ranked.num_rel_ret.astype(np.float64)
    ret, rel = ranked.num_ret.astype(np.float64), ranked.num_rel.astype(np.float64)
    defined = (ret > 0) & (rel > 0)
    return _column(np.where(defined, _divide(found * found, ret * rel), 0.0))


def _set_f(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    x = params.numbers[0]
    found = ranked.num_rel_ret
    p = _divide(found, ranked.num_ret)
    r = _divide(found, ranked.num_rel)
    return _column(np.where(found > 0, _divide((x + 1.0) * p * r, x * p + r), 0.0))


def _num_nonrel_judged_ret(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    valid = _ranks(ranked.width)[None, :] <= ranked.num_ret[:, None]
    unjudged = np.count_nonzero(ranked.unjudged & valid, axis=1)
    return _column((ranked.num_ret - unjudged - ranked.num_rel_ret).astype(np.float64))


def _utility(ranked: RankedRelevance, params: Params, settings: Settings) -> Floats:
    a, b, c, d = params.numbers
    rows = zip(
        ranked.num_rel_ret.tolist(), ranked.num_ret.tolist(), ranked.num_rel.tolist(), strict=True
    )
    values = [
        a * found
        + b * (ret - found)
        + c * (rel - found)
        + d * (settings.num_docs + found - ret - rel)
        for found, ret, rel in rows
    ]
    return _column(np.array(values, dtype=np.float64))


def _bin_g(ranked: RankedRelevance, _: Params, __: Settings) -> Floats:
    # Each relevant document gains 1 / log2(2 + nonrelevant documents above it):
    # discounts(n)[i] is log2(i + 2).
    logs = discounts(ranked.width + 1)
    nonrel_above = _ranks(ranked.width)[None, :] - ranked.relevant_so_far
    terms = np.where(ranked.relevant, 1.0 / logs[np.minimum(nonrel_above, ranked.width)], 0.0)
    sums = _row_sums(terms)
    return _column(np.where(ranked.num_rel_ret > 0, _divide(sums, ranked.num_rel), 0.0))


def _relstring(ranked: RankedRelevance, params: Params, _: Settings) -> list[str]:
    length = int(params.numbers[0]) if params.numbers else 10
    return ["".join(map(_rel_char, row[: max(0, min(length, n))])) for row, n in _rows(ranked)]


def _rows(ranked: RankedRelevance) -> list[tuple[list[int], int]]:
    return list(zip(ranked.rels.tolist(), ranked.num_ret.tolist(), strict=True))


def _rel_char(rel: int) -> str:
    if rel > 9:
        return ">"
    if rel >= 0:
        return str(rel)
    return {NONPOOL: "-", UNJUDGED: "."}.get(rel, "<")


# -- gain-based measures -------------------------------------------------------------------


@dataclass(frozen=True)
class _Gains:
    """One query's gain of each relevance value, and its ideal ranking's gains.

    Levels come from the parameters (`-m ndcg.1=3,2=9`: pairs whose name is an integer) and
    from the query's judged grades 0..highest (a grade without a pair gains its own value);
    they are ordered by gain as trec_eval orders them, comparing the integer part of the
    difference. The ideal ranking takes each level from the highest gain down, as many times
    as the query has judged documents of it, and stops at the first gain <= 0.
    """

    order: tuple[tuple[int, float, int], ...]  # (level, gain, judged documents), by gain
    ideal: Floats

    @classmethod
    def of(cls, params: Params, counts: Mapping[int, int]) -> _Gains:
        levels: list[list[float]] = [
            [int(name), value, 0] for name, value in params.pairs if is_integer_name(name)
        ]
        for level in range(max(counts, default=-1) + 1):
            known = next((entry for entry in levels if entry[0] == level), None)
            if known is not None:
                known[2] = counts.get(level, 0)
            else:
                levels.append([level, float(level), counts.get(level, 0)])
        ordered = sorted(levels, key=cmp_to_key(_by_truncated_gain))
        ideal: list[float] = []
        for _, gain, number in reversed(ordered):
            if number == 0:
                continue
            if gain <= 0:
                break
            ideal.extend([gain] * int(number))
        order = tuple((int(level), gain, int(n)) for level, gain, n in ordered)
        return cls(order, np.array(ideal, dtype=np.float64))

    def gain_of(self, rels: Sequence[int]) -> Floats:
        """The gain of each relevance value (a value without a level gains 0)."""
        values = np.array(rels, dtype=np.int64)
        if all(level >= 0 and gain == level for level, gain, _ in self.order):
            # Every grade gains itself (no pairs): the query's grades are all levels.
            gains: Floats = np.maximum(values, 0).astype(np.float64)
            return gains
        table: dict[int, float] = {}
        for level, gain, _ in self.order:
            table.setdefault(level, gain)
        return np.array([table.get(rel, 0.0) for rel in rels], dtype=np.float64)

    def rescaled(self) -> _Gains:
        """Gains mapped onto [0, 1] when any lies outside (rbp: (g - min) / (max - min))."""
        gains = [gain for _, gain, _ in self.order]
        low, high = min(gains, default=0.0), max(gains, default=0.0)
        if low >= 0 and high <= 1:
            return self
        order = tuple((lv, (g - low) / (high - low), n) for lv, g, n in self.order)
        return _Gains(order, self.ideal)


@lru_cache(maxsize=4096)
def _gains_of(params: Params, counts: tuple[tuple[int, int], ...]) -> _Gains:
    """`_Gains.of`, once per parameters and judgment counts (queries and measures share it)."""
    return _Gains.of(params, dict(counts))


def _by_truncated_gain(x: list[float], y: list[float]) -> int:
    # trec_eval's comparison returns the gain difference as a C int: 4.5 and 4 compare equal.
    return int(x[1] - y[1])


def _per_query(
    ranked: RankedRelevance,
    params: Params,
    value: Callable[[Floats, _Gains, int], float],
    *,
    rescale: bool = False,
) -> Floats:
    """One value per query from the gains of its ranking, its `_Gains` and its R."""
    values = []
    rows = zip(_rows(ranked), ranked.levels, ranked.num_rel.tolist(), strict=True)
    for (row, num_ret), counts, num_rel in rows:
        gains = _gains_of(params, tuple(sorted(counts.items())))
        if rescale:
            gains = gains.rescaled()
        values.append(value(gains.gain_of(row[:num_ret]), gains, num_rel))
    return _column(np.array(values, dtype=np.float64))


def _running(terms: Floats) -> Floats:
    running: Floats = np.cumsum(terms) if len(terms) else np.zeros(0)
    return running


def _total(terms: Floats) -> float:
    return float(_running(terms)[-1]) if len(terms) else 0.0


def _c_divide(numerator: float, denominator: float) -> float:
    """numerator / denominator as C doubles divide: x / 0 is +-inf, 0 / 0 NaN."""
    if denominator != 0:
        return numerator / denominator
    if numerator == 0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def _dcg_value(gains: Floats, _: _Gains, __: int) -> float:
    return _total(gains / discounts(len(gains)))


def _ideal_dcg_value(_: Floats, gains: _Gains, __: int) -> float:
    return _total(gains.ideal / discounts(len(gains.ideal)))


def _ndcg_value(results: Floats, gains: _Gains, _: int) -> float:
    ideal = _ideal_dcg_value(results, gains, 0)
    return _dcg_value(results, gains, 0) / ideal if ideal > 0 else 0.0


def _g_value(results: Floats, gains: _Gains, _: int) -> float:
    # Cost of rank i: the ideal gain there when >= 1, else 1; a document gains
    # g / log2(2 + cost so far - gain so far).
    cost = np.ones(len(results), dtype=np.float64)
    shared = min(len(results), len(gains.ideal))
    cost[:shared] = np.where(gains.ideal[:shared] >= 1.0, gains.ideal[:shared], 1.0)
    cost_so_far, gain_so_far = _running(cost), _running(results)
    terms = [
        g / math.log2(2 + c - s)
        for g, c, s in zip(
            results.tolist(), cost_so_far.tolist(), gain_so_far.tolist(), strict=True
        )
        if g != 0
    ]
    ideal = _total(gains.ideal)
    return _total(np.array(terms)) / ideal if ideal > 0 else 0.0


def _ndcg_rel_value(results: Floats, gains: _Gains, _: int) -> float:
    # The mean over relevant documents of nDCG at their rank; the relevant documents not
    # retrieved count with the nDCG of the whole ranking.
    dcg = _running(results / discounts(len(results)))
    ideal = _running(gains.ideal / discounts(len(gains.ideal)))
    total = 0.0
    for rank in np.nonzero(results > 0)[0].tolist():
        total += _c_divide(dcg[rank], ideal[min(rank, len(ideal) - 1)] if len(ideal) else 0.0)
    whole_dcg = float(dcg[-1]) if len(dcg) else 0.0
    whole_ideal = float(ideal[-1]) if len(ideal) else 0.0
    missed = float(len(gains.ideal) - int(np.count_nonzero(results > 0)))
    total += _c_divide(missed * whole_dcg, whole_ideal)
    return _c_divide(total, float(len(gains.ideal))) if total > 0.0 else 0.0


def _rndcg_value(results: Floats, gains: _Gains, num_rel: int) -> float:
    # The mean of nDCG taken where the ideal ranking's gain changes (its last rank included),
    # and at the end of the ranking when it runs on past the ideal one.
    if num_rel == 0:
        return 0.0
    dcg = _running(results / discounts(len(results)))
    ideal_gains = gains.ideal
    ideal = _running(ideal_gains / discounts(len(ideal_gains)))
    n, retrieved = len(ideal_gains), len(results)
    total, taken = 0.0, 0
    for boundary in range(1, n + 1):
        if boundary < n and ideal_gains[boundary] == ideal_gains[boundary - 1]:
            continue
        results_dcg = float(dcg[min(boundary, retrieved) - 1]) if retrieved else 0.0
        total += results_dcg / float(ideal[boundary - 1])
        taken += 1
    if retrieved > n + 1 and n > 0:
        total += float(dcg[-1]) / float(ideal[-1])
        taken += 1
    return _c_divide(total, float(taken))


def _gain_family(value: Callable[[Floats, _Gains, int], float]) -> Family:
    return lambda ranked, params, _: _per_query(ranked, params, value)


def _rbp(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    p = params.pair("p", _RBP_PERSISTENCE)

    def value(results: Floats, _: _Gains, __: int) -> float:
        weights = _weights(p, len(results))[: len(results)]
        return (1.0 - p) * _total(np.where(results != 0, results * weights, 0.0))

    return _per_query(ranked, params, value, rescale=True)


def _weights(p: float, size: int) -> Floats:
    """p^0, p^1, ... by repeated multiplication, as trec_eval computes them."""
    steps = np.full(size + 1, p, dtype=np.float64)
    steps[0] = 1.0
    weights: Floats = np.cumprod(steps, dtype=np.float64)
    return weights


def _rbp_resid(ranked: RankedRelevance, params: Params, _: Settings) -> Floats:
    p = params.pair("p", _RBP_PERSISTENCE)
    values = []
    for row, num_ret in _rows(ranked):
        weights = _weights(p, num_ret)
        unjudged = np.array(row[:num_ret], dtype=np.int64) < 0
        if unjudged.any():
            values.append(float(weights[num_ret]) + (1 - p) * _total(weights[:num_ret][unjudged]))
        else:
            values.append(0.0)
    return _column(np.array(values, dtype=np.float64))


FAMILIES: Final[dict[str, Family]] = {
    "gm_map": _gm_map,
    "bpref": _bpref,
    "iprec_at_recall": _iprec_at_recall,
    "relstring": _relstring,
    "infAP": _infap,
    "gm_bpref": _gm_bpref,
    "Rprec_mult": _rprec_mult,
    "utility": _utility,
    "11pt_avg": _eleven_point,
    "binG": _bin_g,
    "G": _gain_family(_g_value),
    "dcg": _gain_family(_dcg_value),
    "ideal_dcg": _gain_family(_ideal_dcg_value),
    "ndcg": _gain_family(_ndcg_value),
    "ndcg_rel": _gain_family(_ndcg_rel_value),
    "Rndcg": _gain_family(_rndcg_value),
    "relative_P": _relative_p,
    "set_P": _set_p,
    "set_relative_P": _set_relative_p,
    "set_recall": _set_recall,
    "set_map": _set_map,
    "set_F": _set_f,
    "num_nonrel_judged_ret": _num_nonrel_judged_ret,
    "yaap": _yaap,
    "rbp": _rbp,
    "rbp_resid": _rbp_resid,
    "unj": _unj,
}
