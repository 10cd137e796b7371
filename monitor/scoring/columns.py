"""The scorer's numpy engine: measure columns from a matrix of grade codes.

Many rankings at once arrive here as a (rankings, width) matrix of small integer grade codes
(`RankedCodes`; code 0 = a document not in the evaluation set, and the right padding of short
rankings). `CodeTables` turn codes into gains, relevance and judged flags by indexing; every
measure is then read off a cumulative sum along the ranks, so each column costs a few numpy
passes over the matrix. Each measure kind's function here is the one its row of
`monitor.scoring.catalog.KIND_TABLE` names. Formulas and conventions are docs/metrics.md's;
the per-ranking oracle the tests hold (`tests/support/oracle.py`) is what these columns are checked
against, and the C kernel (`measure_kernel.c`) against these, bit for bit.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from monitor.scoring.bounds import Graded, ndcg_lower_of, ndcg_upper_of
from monitor.scoring.gain import LINEAR, Gain

__all__ = [
    "NO_GRADE",
    "CodeTables",
    "Columns",
    "GradeCounts",
    "IdcgZero",
    "IdealSpec",
    "QueryIdeals",
    "RankedCodes",
    "RankedMatrix",
    "TopSpec",
    "average_precision",
    "average_precision_cut",
    "dcg",
    "discounts",
    "expected_reciprocal_rank",
    "gain_values",
    "grade_counts",
    "judged",
    "ndcg",
    "ndcg_condensed",
    "ndcg_lower",
    "ndcg_upper",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "pad_codes",
    "padded_grades",
    "precision",
    "r_precision",
    "rank_biased_precision",
    "rbp_residual",
    "recall",
    "reciprocal_rank",
    "scale_levels",
    "success",
    "top_gains",
]

Floats = npt.NDArray[np.float64]
Int64s = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]
Codes = npt.NDArray[Any]  # uint8 on the fast path, intp on the general one

# What nDCG is for a query whose ideal DCG is 0: 0 (trec_eval), or NaN ("exclude": left out
# of the means).
IdcgZero = Literal["zero", "exclude"]

NO_GRADE: Final = -(2**62)  # the grade of "not in the evaluation set" (and of padding)
IdealSpec = tuple[Gain, int | None]  # (gain, cutoff or None: whole list) of one IDCG column

CHUNK_ROWS: Final = 2048  # bounds temporary matrices when a large run is scored


def gain_values(gain: Gain, grades: npt.ArrayLike) -> Floats:
    """`gain.of` of each grade of an integer array (negative grades gain 0)."""
    values = np.asarray(grades, dtype=np.int64)
    gains: Floats = np.maximum(values, 0).astype(np.float64)
    if gain.name == "exp":
        gains = np.exp2(gains) - 1.0
    for grade, value in gain.table:
        gains[values == grade] = value
    return gains


@dataclass(frozen=True)
class CodeTables:
    """Per grade code: its grade, its gain under each gain rule, relevant and judged flags."""

    grades: Int64s
    gains: dict[Gain, Floats]
    relevant: Flags
    judged: Flags
    scale: Int64s  # the evaluation set's grades: what an unjudged document may get (bounds)
    relevance_level: int = 1  # as given: trec_eval's families read it (`relevant` clips at 0)

    @classmethod
    def of(
        cls,
        grades: Int64s,
        gains: Sequence[Gain],
        relevance_level: int,
        scale: Sequence[int] | None = None,
    ) -> CodeTables:
        """Tables for the code -> grade array `grades` (NO_GRADE: not in the evaluation set);
        `scale`: the evaluation set's grades (default: those of `grades`)."""
        judged = grades != NO_GRADE
        return cls(
            grades=grades,
            gains={gain: gain_values(gain, grades) for gain in gains},
            # max(.., 0): a negative grade is never relevant (docs/metric-conventions.md V1).
            relevant=grades >= max(relevance_level, 0),
            judged=judged,
            scale=grades[judged] if scale is None else np.asarray(scale, dtype=np.int64),
            relevance_level=relevance_level,
        )


def pad_codes(
    flat: Codes, lengths: Int64s, width: int, dtype: type[np.integer[Any]] = np.uint8
) -> Codes:
    """A (rankings, width) matrix of the first min(length, width) codes of each ranking,
    concatenated in `flat`, 0-padded on the right."""
    matrix = np.zeros((len(lengths), width), dtype=dtype)
    matrix[np.arange(width) < np.minimum(lengths, width)[:, None]] = flat
    return matrix


@dataclass(frozen=True)
class RankedCodes:
    """Rankings as a (rankings, width) code matrix, 0-padded on the right.

    `lengths` are the full ranking lengths (num_ret); they may exceed `width`, when the keys
    only look at the first `width` documents.
    """

    codes: Codes
    lengths: Int64s

    @classmethod
    def from_parts(
        cls, parts: Sequence[bytes], width: int, rankings: Sequence[Sequence[str]]
    ) -> RankedCodes:
        """From one bytes object of one-byte codes per ranking (each at most `width` long)."""
        flat = np.frombuffer(b"".join(parts), dtype=np.uint8)
        lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
        if flat.size == width * len(parts):  # every ranking fills the width: no padding
            return cls(flat.reshape(len(parts), width), lengths)
        return cls(pad_codes(flat, lengths, width, np.uint8), lengths)

    @classmethod
    def from_grades(
        cls, flat_grades: Sequence[int], width: int, rankings: Sequence[Sequence[str]]
    ) -> tuple[RankedCodes, Int64s]:
        """From the grades of the first `width` documents of each ranking, concatenated.

        Returns the codes and their code -> grade table (code 0 is NO_GRADE).
        """
        grades = np.array(flat_grades, dtype=np.int64)
        table = np.unique(np.append(grades, NO_GRADE))
        codes = np.searchsorted(table, grades)
        lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
        return cls(pad_codes(codes, lengths, width, np.intp), lengths), table


_DISCOUNTS: list[Floats] = [np.zeros(0)]  # one table, grown on demand


def discounts(width: int) -> Floats:
    """log2(rank + 1) for ranks 1..width (read-only); DCG divides by it, as trec_eval does.

    From the C library's log2, as trec_eval computes it: numpy's own log2 differs from it in
    the last bit at some ranks (the first is 1621), which the C kernel, the numpy columns, the
    test oracle and `monitor.scoring.families` would then not share."""
    table = _DISCOUNTS[0]
    if len(table) < width:
        size = max(width, 2 * len(table), 1024)
        table = np.array([math.log2(rank + 1) for rank in range(1, size + 1)], dtype=np.float64)
        table.setflags(write=False)
        _DISCOUNTS[0] = table
    return table[:width]


TopSpec = tuple[tuple[Gain, ...], int]  # (gains, depth) of the queries' highest gains kept
# One query's judged documents per grade >= 0, grades ascending: what trec_eval's families
# read of the documents a ranking did not retrieve (R, the nonrelevant for bpref, the ideal
# ranking of G and Rndcg).
GradeCounts = tuple[tuple[int, int], ...]


def grade_counts(grades: Iterable[int]) -> GradeCounts:
    """The `GradeCounts` of a query's judged grades (negative ones are left out)."""
    return tuple(sorted(Counter(grade for grade in grades if grade >= 0).items()))


@dataclass(frozen=True)
class QueryIdeals:
    """Per query (one row each): IDCG for each (gain, cutoff) spec, and num_rel; and, when a
    key needs them (`ndcg_upper`), `top`: per gain, the query's `depth` highest gains,
    highest first, padded with 0."""

    specs: tuple[IdealSpec, ...]
    ideal: Floats  # (queries, len(specs))
    num_rel: Int64s
    top: Mapping[Gain, Floats] | None = None  # gain -> (queries, depth)
    counts: tuple[GradeCounts, ...] | None = None  # when a key reads them (`reads_counts`)

    @classmethod
    def of(
        cls,
        grade_lists: Sequence[Sequence[int]],
        specs: tuple[IdealSpec, ...],
        relevance_level: int,
        top: TopSpec = ((), 0),
        *,
        counts: bool = False,
    ) -> QueryIdeals:
        """From each query's judged grades (all of them, retrieved or not;
        docs/metric-conventions.md N4, V3); with `counts`, each query's `GradeCounts` too.

        num_rel counts grades >= relevance_level (never negative grades, V2).
        """
        rows = len(grade_lists)
        ideal = np.zeros((rows, len(specs)), dtype=np.float64)
        num_rel = np.zeros(rows, dtype=np.int64)
        gains, depth = top
        highest = {gain: np.zeros((rows, depth)) for gain in gains} if depth else None
        for start in range(0, rows, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, rows)
            grades = padded_grades(grade_lists[start:stop])
            chunk = cls.of_matrix(grades, specs, relevance_level, top)
            ideal[start:stop] = chunk.ideal
            num_rel[start:stop] = chunk.num_rel
            if highest is not None and chunk.top is not None:
                for gain, values in chunk.top.items():
                    highest[gain][start:stop] = values
        per_query = tuple(map(grade_counts, grade_lists)) if counts else None
        return cls(specs, ideal, num_rel, highest, per_query)

    @classmethod
    def of_matrix(
        cls,
        grades: Int64s,
        specs: tuple[IdealSpec, ...],
        relevance_level: int,
        top: TopSpec = ((), 0),
    ) -> QueryIdeals:
        """From a (queries, width) matrix of judged grades, right-padded with NO_GRADE."""
        # NO_GRADE padding is below every level; max(.., 0): negative grades never count.
        num_rel = np.count_nonzero(grades >= max(relevance_level, 0), axis=1).astype(np.int64)
        highest = top_gains(grades, top) if top[1] else None
        return cls(specs, _ideal_dcg_columns(grades, specs), num_rel, highest)

    def take(self, rows: Int64s) -> QueryIdeals:
        """The rows of the given queries, in that order."""
        top = None if self.top is None else {g: v[rows] for g, v in self.top.items()}
        counts = None if self.counts is None else tuple(self.counts[r] for r in rows.tolist())
        return QueryIdeals(self.specs, self.ideal[rows], self.num_rel[rows], top, counts)


def top_gains(grades: Int64s, top: TopSpec) -> dict[Gain, Floats]:
    """Per gain of `top`, each row's `depth` highest gains, highest first, padded with 0 (a
    matrix of grades right-padded with NO_GRADE, as `QueryIdeals.of_matrix` takes)."""
    gains, depth = top
    width = min(depth, grades.shape[1])
    out = {}
    for gain in gains:
        highest = np.zeros((len(grades), depth), dtype=np.float64)
        if width:
            highest[:, :width] = -np.sort(-gain_values(gain, grades), axis=1)[:, :width]
        out[gain] = highest
    return out


def padded_grades(grade_lists: Sequence[Sequence[int] | Int64s]) -> Int64s:
    """One row per list, padded on the right with NO_GRADE (gain 0, never relevant)."""
    lengths = np.fromiter(map(len, grade_lists), dtype=np.int64, count=len(grade_lists))
    width = int(lengths.max(initial=0))
    flat = np.fromiter(chain.from_iterable(grade_lists), dtype=np.int64, count=int(lengths.sum()))
    matrix = np.full((len(grade_lists), width), NO_GRADE, dtype=np.int64)
    matrix[np.arange(width) < lengths[:, None]] = flat
    return matrix


def _ideal_dcg_columns(grades: Int64s, specs: Sequence[IdealSpec]) -> Floats:
    """IDCG@k per row of judged grades: gains sorted highest first, their DCG cut at k."""
    width = grades.shape[1]
    out = np.zeros((len(grades), len(specs)), dtype=np.float64)
    if width == 0:
        return out
    for gain in dict.fromkeys(gain for gain, _ in specs):
        ideal = -np.sort(-gain_values(gain, grades), axis=1)
        cumulative = np.cumsum(ideal / discounts(width), axis=1)
        for column, (spec_gain, k) in enumerate(specs):
            if spec_gain == gain:
                out[:, column] = cumulative[:, min(k or width, width) - 1]
    return out


class RankedMatrix:
    """What every measure column is read from.

    Cutoff measures read cumulative sums over the `head` (the first max(k) ranks), all their
    cutoffs at once; measures of the whole ranking (mrr, map, num_rel_ret) read the positions
    of the relevant documents, which are few, instead of a full-width matrix.
    """

    def __init__(
        self, codes: RankedCodes, tables: CodeTables, queries: QueryIdeals, head: int | None
    ) -> None:
        self.codes = codes.codes
        self.lengths = codes.lengths
        self.rows = len(self.lengths)
        width = int(self.codes.shape[1])
        self.head = width if head is None else min(head, width)
        self.tables = tables
        self.queries = queries
        self._dcg: dict[Gain, Floats] = {}

    def at(self, cumulative: npt.NDArray[Any], cutoffs: Sequence[int | None]) -> npt.NDArray[Any]:
        """Ranks k (1-based; None: the head's end) of a head cumulative sum, one column each.

        A ranking shorter than k reads its last rank: the padding adds 0.
        """
        if self.head == 0:
            return np.zeros((self.rows, len(cutoffs)), dtype=cumulative.dtype)
        return cumulative[:, [min(k or self.head, self.head) - 1 for k in cutoffs]]

    @cached_property
    def head_codes(self) -> Codes:
        return self.codes[:, : self.head]

    def dcg(self, gain: Gain, cutoffs: Sequence[int | None]) -> Floats:
        if gain not in self._dcg:
            gains = self.tables.gains[gain][self.head_codes]
            self._dcg[gain] = np.cumsum(gains / discounts(self.head), axis=1)
        result: Floats = self.at(self._dcg[gain], cutoffs)
        return result

    def ideal(self, gain: Gain, cutoffs: Sequence[int | None]) -> Floats:
        specs = self.queries.specs
        result: Floats = self.queries.ideal[:, [specs.index((gain, k)) for k in cutoffs]]
        return result

    @cached_property
    def condensed_codes(self) -> Codes:
        """Each row's judged codes first, in rank order, then its unjudged ones (gain 0)."""
        unjudged = ~self.tables.judged[self.codes]
        order = np.argsort(unjudged, axis=1, kind="stable")
        return np.take_along_axis(self.codes, order, axis=1)

    def condensed_dcg(self, gain: Gain, cutoffs: Sequence[int | None]) -> Floats:
        """DCG of the condensed lists at each cutoff (None: the whole list)."""
        codes = self.condensed_codes
        width = int(codes.shape[1])
        if width == 0:
            return np.zeros((self.rows, len(cutoffs)), dtype=np.float64)
        cumulative = np.cumsum(self.tables.gains[gain][codes] / discounts(width), axis=1)
        result: Floats = cumulative[:, [min(k or width, width) - 1 for k in cutoffs]]
        return result

    @cached_property
    def relevant_so_far(self) -> Int64s:
        return np.cumsum(self.tables.relevant[self.head_codes], axis=1)

    @cached_property
    def judged_so_far(self) -> Int64s:
        return np.cumsum(self.tables.judged[self.head_codes], axis=1)

    @cached_property
    def relevant_positions(self) -> tuple[Int64s, Int64s, Int64s]:
        """Row and 0-based rank of each relevant document (row-major), and the count per row."""
        rows, ranks = np.nonzero(self.tables.relevant[self.codes])
        return rows, ranks, np.bincount(rows, minlength=self.rows)


def _ratio(numerator: npt.NDArray[Any], denominator: npt.NDArray[Any], when_zero: float) -> Floats:
    """numerator / denominator (broadcast), and `when_zero` where the denominator is 0."""
    safe = np.where(denominator > 0, denominator, 1)
    result: Floats = np.where(denominator > 0, numerator / safe, when_zero)
    return result


# The numpy engine's function of one measure kind: a group of keys of that kind and one gain,
# computed together, one column per cutoff (None: the kind's whole ranking). Every kind of
# `monitor.scoring.catalog.KIND_TABLE` names its own.
Columns = Callable[["RankedMatrix", Gain, list[int | None], IdcgZero], npt.NDArray[Any]]


def ndcg(
    ranked: RankedMatrix, gain: Gain, cutoffs: list[int | None], idcg_zero: IdcgZero
) -> Floats:
    when_zero = 0.0 if idcg_zero == "zero" else np.nan
    return _ratio(ranked.dcg(gain, cutoffs), ranked.ideal(gain, cutoffs), when_zero)


def ndcg_condensed(
    ranked: RankedMatrix, gain: Gain, cutoffs: list[int | None], idcg_zero: IdcgZero
) -> Floats:
    """nDCG of the condensed list (Sakai's nDCG'): the ranking without its unjudged documents,
    the judged ones moved up in order, cut at k; over the same ideal DCG as nDCG@k."""
    when_zero = 0.0 if idcg_zero == "zero" else np.nan
    return _ratio(ranked.condensed_dcg(gain, cutoffs), ranked.ideal(gain, cutoffs), when_zero)


def ndcg_lower(
    ranked: RankedMatrix, gain: Gain, cutoffs: list[int | None], idcg_zero: IdcgZero
) -> Floats:
    """The least nDCG@k over every grading of the unjudged documents of the top k with the
    evaluation set's grades (`monitor.scoring.bounds`; docs/metrics.md, "Bounds")."""
    return _bound(ranked, gain, cutoffs, idcg_zero, ndcg_lower_of)


def ndcg_upper(
    ranked: RankedMatrix, gain: Gain, cutoffs: list[int | None], idcg_zero: IdcgZero
) -> Floats:
    """The most nDCG@k over every grading of the unjudged documents of the top k with the
    evaluation set's grades (`monitor.scoring.bounds`; docs/metrics.md, "Bounds")."""
    return _bound(ranked, gain, cutoffs, idcg_zero, ndcg_upper_of)


def scale_levels(tables: CodeTables, gain: Gain) -> list[float]:
    """The gains an unjudged document may get once judged: those of the grades the
    evaluation set uses and of grade 0, highest first, each once."""
    grades = np.append(tables.scale, 0)
    return sorted({float(g) for g in gain_values(gain, grades)}, reverse=True)


def _bound(
    ranked: RankedMatrix,
    gain: Gain,
    cutoffs: list[int | None],
    idcg_zero: IdcgZero,
    bound: Callable[[Graded], float],
) -> Floats:
    if ranked.queries.top is None or gain not in ranked.queries.top:
        raise ValueError("nDCG's bounds need the queries' highest gains (QueryIdeals.top)")
    highest = ranked.queries.top[gain]
    when_zero = 0.0 if idcg_zero == "zero" else math.nan
    levels = scale_levels(ranked.tables, gain)
    head = ranked.head
    codes = ranked.head_codes.tolist()
    gain_of = ranked.tables.gains[gain].tolist()
    judged = ranked.tables.judged.tolist()
    lengths = ranked.lengths.tolist()
    out = np.zeros((ranked.rows, len(cutoffs)), dtype=np.float64)
    rank_discounts = discounts(head).tolist()
    for column, k in enumerate(cutoffs):
        if k is None:
            raise ValueError("nDCG's bounds need a cutoff")
        ideal_discounts = discounts(k).tolist()
        for row in range(ranked.rows):
            end = min(k, lengths[row], head)
            gains = [gain_of[code] if judged[code] else None for code in codes[row][:end]]
            top = highest[row].tolist()
            graded = Graded(gains, top, levels, k, rank_discounts, ideal_discounts, when_zero)
            out[row, column] = bound(graded)
    return out


def precision(ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero) -> Floats:
    # Always divided by k, however short the ranking (trec_eval P_k).
    result: Floats = ranked.at(ranked.relevant_so_far, cutoffs) / np.array(
        cutoffs, dtype=np.float64
    )
    return result


def recall(ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero) -> Floats:
    relevant = ranked.at(ranked.relevant_so_far, cutoffs)
    return _ratio(relevant, ranked.queries.num_rel[:, None], 0.0)


def judged(ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero) -> Floats:
    shown = np.minimum(ranked.lengths[:, None], np.array(cutoffs, dtype=np.int64))
    return _ratio(ranked.at(ranked.judged_so_far, cutoffs), shown, 0.0)


def reciprocal_rank(ranked: RankedMatrix, _: Gain, __: list[int | None], ___: IdcgZero) -> Floats:
    """1 / (rank of the first relevant document), 0 for rows without one."""
    rows, ranks, _counts = ranked.relevant_positions
    first = np.ones(len(rows), dtype=np.bool_)
    first[1:] = rows[1:] != rows[:-1]
    result = np.zeros((ranked.rows, 1), dtype=np.float64)
    result[rows[first], 0] = 1.0 / (ranks[first] + 1)
    return result


def _average_precision(ranked: RankedMatrix, cutoffs: Sequence[int | None]) -> Floats:
    """Sum over relevant ranks r (r <= k with a cutoff) of (relevant so far at r) / r, over
    num_rel."""
    rows, ranks, counts = ranked.relevant_positions
    row_start = np.cumsum(counts) - counts
    found = np.arange(1, len(rows) + 1) - row_start[rows]
    terms = found / (ranks + 1)
    out = np.empty((ranked.rows, len(cutoffs)), dtype=np.float64)
    for column, k in enumerate(cutoffs):
        taken = terms if k is None else np.where(ranks < k, terms, 0.0)
        # bincount adds each row's terms in rank order, as the oracle's loop does.
        precision_sum = np.bincount(rows, weights=taken, minlength=ranked.rows)
        out[:, column] = _ratio(precision_sum, ranked.queries.num_rel, 0.0)
    return out


def average_precision(ranked: RankedMatrix, _: Gain, __: list[int | None], ___: IdcgZero) -> Floats:
    return _average_precision(ranked, [None])


def average_precision_cut(
    ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero
) -> Floats:
    return _average_precision(ranked, cutoffs)


def success(ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero) -> Floats:
    found: Floats = (ranked.at(ranked.relevant_so_far, cutoffs) > 0).astype(np.float64)
    return found


def r_precision(ranked: RankedMatrix, _: Gain, __: list[int | None], ___: IdcgZero) -> Floats:
    """Relevant documents among the first num_rel, over num_rel."""
    rows, ranks, _counts = ranked.relevant_positions
    num_rel = ranked.queries.num_rel
    within = np.bincount(rows[ranks < num_rel[rows]], minlength=ranked.rows)
    return _ratio(within, num_rel, 0.0)[:, None]


def rank_biased_precision(params: Mapping[str, float]) -> Columns:
    """RBP@k with persistence `p` (`params["p"]`; Moffat and Zobel 2008) as trec_eval's `rbp`
    computes it on the ranking cut at k: `(1 - p) * sum of gain_i * p^(i-1)` over the first k
    ranks, the
    gain each grade's own (negative and unjudged: 0), divided by the query's highest grade
    when that is over 1 (trec_eval maps the gains onto [0, 1]); the powers by repeated
    multiplication and the sum in rank order, as trec_eval takes them."""
    p = params["p"]

    def columns(ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero) -> Floats:
        if ranked.head == 0:
            return np.zeros((ranked.rows, len(cutoffs)), dtype=np.float64)
        terms = _rbp_gains(ranked) * _powers(p, ranked.head)[: ranked.head]
        result: Floats = (1.0 - p) * ranked.at(np.cumsum(terms, axis=1), cutoffs)
        return result

    return columns


def rbp_residual(params: Mapping[str, float]) -> Columns:
    """What the unjudged documents of the first k could still add to RBP@k with persistence
    `p` (`params["p"]`), as trec_eval's `rbp_resid` takes it on the ranking cut at k: the
    weight of every unjudged one, `(1 - p) * p^(i-1)`, plus `p^d` for what lies past the d
    ranks read; 0 when none of them is unjudged (trec_eval's convention). RBP@k plus it
    bounds the RBP any grading of those documents gives."""
    p = params["p"]

    def columns(ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero) -> Floats:
        head = ranked.head
        if head == 0:
            return np.zeros((ranked.rows, len(cutoffs)), dtype=np.float64)
        powers = _powers(p, head)
        shown = np.arange(head) < ranked.lengths[:, None]
        unjudged = shown & ~ranked.tables.judged[ranked.head_codes]
        weights = np.cumsum(np.where(unjudged, powers[:head], 0.0), axis=1)
        seen = np.minimum(ranked.lengths[:, None], np.array([k or head for k in cutoffs]))
        tail = powers[np.minimum(seen, head)]
        any_unjudged = ranked.at(np.cumsum(unjudged, axis=1), cutoffs) > 0
        result: Floats = np.where(any_unjudged, tail + (1.0 - p) * ranked.at(weights, cutoffs), 0.0)
        return result

    return columns


def expected_reciprocal_rank(params: Mapping[str, float]) -> Columns:
    """ERR@k (Chapelle et al. 2009) as gdeval.pl (the TREC Web track's) computes it: a reader
    stops at rank i with probability `r_i = (2^g_i - 1) / 2^max_grade` (`params["max_grade"]`,
    gdeval's MAX_JUDGMENT, 4), g_i the document's grade (unjudged and negative: 0, above
    max_grade: max_grade), and ERR is the sum over the first k ranks of `r_i / i` times the
    chance the reader got there, the product of `1 - r_j` before it."""
    highest = params["max_grade"]

    def columns(ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero) -> Floats:
        head = ranked.head
        if head == 0:
            return np.zeros((ranked.rows, len(cutoffs)), dtype=np.float64)
        grades = np.clip(ranked.tables.grades[ranked.head_codes], 0, highest)
        stop = (np.exp2(grades.astype(np.float64)) - 1.0) / 2.0**highest
        reached = np.ones_like(stop)
        reached[:, 1:] = np.cumprod(1.0 - stop[:, :-1], axis=1)
        terms = stop * reached / np.arange(1, head + 1, dtype=np.float64)
        result: Floats = ranked.at(np.cumsum(terms, axis=1), cutoffs)
        return result

    return columns


def _powers(p: float, width: int) -> Floats:
    """p^0, p^1, ..., p^width by repeated multiplication (trec_eval's order)."""
    steps = np.full(width + 1, p, dtype=np.float64)
    steps[0] = 1.0
    powers: Floats = np.cumprod(steps, dtype=np.float64)
    return powers


def _rbp_gains(ranked: RankedMatrix) -> Floats:
    """Each ranked document's grade as its gain (0 for negative or none), over the query's
    highest grade where that is over 1."""
    gains = np.maximum(ranked.tables.grades[ranked.head_codes], 0).astype(np.float64)
    top = ranked.queries.top
    if top is None or LINEAR not in top:
        raise ValueError("RBP needs the queries' highest grades (QueryIdeals.top, linear gain)")
    highest = top[LINEAR][:, :1]
    scaled: Floats = np.divide(gains, highest, out=gains.copy(), where=highest > 1)
    return scaled


def dcg(ranked: RankedMatrix, gain: Gain, cutoffs: list[int | None], _: IdcgZero) -> Floats:
    return ranked.dcg(gain, cutoffs)


def num_ret(ranked: RankedMatrix, _: Gain, __: list[int | None], ___: IdcgZero) -> Int64s:
    return ranked.lengths[:, None]


def num_rel(ranked: RankedMatrix, _: Gain, __: list[int | None], ___: IdcgZero) -> Int64s:
    return ranked.queries.num_rel[:, None]


def num_rel_ret(ranked: RankedMatrix, _: Gain, __: list[int | None], ___: IdcgZero) -> Int64s:
    return ranked.relevant_positions[2][:, None]
