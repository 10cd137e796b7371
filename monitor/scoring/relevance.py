"""Each evaluated query's ranking as trec_eval's measures see it (its `RES_RELS`).

For the measures the streaming monitor does not compute (`monitor.scoring.families`), a ranking
is the relevance value of each retrieved document, rank 1 first:

- the document's grade when the qrels judge it with a grade >= 0;
- `UNJUDGED` (-2) when the qrels list it with a negative grade (in the pool, not judged:
  what infAP samples);
- `NONPOOL` (-1) when the qrels do not list it.

Rows are padded on the right with `PAD`, which is neither. A query of the evaluation set that
the run misses (`-c`) is ranked as trec_eval ranks it, one document outside the pool, and
`missing` marks it (a few measures are then reset to 0, as trec_eval does). Per query the
counts of each judged grade (>= 0) are kept too: the gain-based measures build their ideal
ranking from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final

import numpy as np
import numpy.typing as npt

from monitor.scoring.columns import NO_GRADE, RankedMatrix, grade_counts
from monitor.scoring.evalset import EvaluationSet

__all__ = ["NONPOOL", "PAD", "UNJUDGED", "RankedRelevance"]

Int64s = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]

NONPOOL: Final = -1
UNJUDGED: Final = -2
PAD: Final = -3


def _relevance(grade: int | None) -> int:
    if grade is None:
        return NONPOOL
    return UNJUDGED if grade < 0 else grade


@dataclass(frozen=True)
class RankedRelevance:
    """The evaluated queries' rankings as relevance values, one row per query."""

    query_ids: tuple[str, ...]
    rels: Int64s  # (queries, width), PAD beyond num_ret
    num_ret: Int64s
    levels: tuple[Mapping[int, int], ...]  # per query: grade >= 0 -> judged documents
    missing: Flags
    relevance_level: int

    @classmethod
    def of(
        cls,
        evaluation_set: EvaluationSet,
        query_ids: Sequence[str],
        rankings: Sequence[Sequence[str] | None],
        relevance_level: int,
        *,
        judged_only: bool = False,
    ) -> RankedRelevance:
        """From each query's ordered documents (None: missing from the run, `-c`).

        `judged_only` (`-J`) has already been applied to the rankings; here it only drops the
        stand-in document of a missing query, which is not judged either.
        """
        stand_in: list[int] = [] if judged_only else [NONPOOL]
        rows: list[list[int]] = []
        levels: list[Mapping[int, int]] = []
        for qid, ranking in zip(query_ids, rankings, strict=True):
            grades = evaluation_set.grades(qid)
            if ranking is None:
                rows.append(stand_in)
            else:
                rows.append([_relevance(grade) for grade in map(grades.get, ranking)])
            levels.append(dict(grade_counts(grades.values())))
        num_ret = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        width = int(num_ret.max(initial=0))
        rels = np.full((len(rows), width), PAD, dtype=np.int64)
        for row, values in enumerate(rows):
            rels[row, : len(values)] = values
        missing = np.array([ranking is None for ranking in rankings], dtype=np.bool_)
        return cls(tuple(query_ids), rels, num_ret, tuple(levels), missing, relevance_level)

    @classmethod
    def of_matrix(cls, ranked: RankedMatrix) -> RankedRelevance:
        """The scorer's rankings (`RankedMatrix`: grade codes over each whole ranking, and each
        query's grade counts, `QueryIdeals.counts`) as the families see them: a document the
        evaluation set does not list is outside the pool, one it lists with a negative grade
        in the pool, unjudged. No ranking is missing: an empty one is scored as empty."""
        if ranked.queries.counts is None:
            raise ValueError("the families need each query's grade counts (QueryIdeals.counts)")
        width = int(ranked.codes.shape[1])
        grades = ranked.tables.grades[ranked.codes]
        rels = np.where(grades == NO_GRADE, NONPOOL, np.where(grades < 0, UNJUDGED, grades))
        num_ret = np.minimum(np.asarray(ranked.lengths, dtype=np.int64), width)
        rels = np.where(np.arange(width)[None, :] < num_ret[:, None], rels, PAD).astype(np.int64)
        return cls(
            query_ids=("",) * ranked.rows,
            rels=rels,
            num_ret=num_ret,
            levels=tuple(dict(counts) for counts in ranked.queries.counts),
            missing=np.zeros(ranked.rows, dtype=np.bool_),
            relevance_level=ranked.tables.relevance_level,
        )

    @property
    def width(self) -> int:
        return int(self.rels.shape[1])

    @cached_property
    def relevant(self) -> Flags:
        """Retrieved documents judged relevant (grade >= the relevance level)."""
        flags: Flags = self.rels >= self.relevance_level
        return flags

    @cached_property
    def judged_nonrelevant(self) -> Flags:
        flags: Flags = (self.rels >= 0) & (self.rels < self.relevance_level)
        return flags

    @cached_property
    def unjudged(self) -> Flags:
        """Retrieved documents without a judgment: outside the pool, or in it but unjudged."""
        flags: Flags = (self.rels == NONPOOL) | (self.rels == UNJUDGED)
        return flags

    @cached_property
    def relevant_so_far(self) -> Int64s:
        """Relevant documents at ranks 1..i+1 (column i)."""
        counts: Int64s = np.cumsum(self.relevant, axis=1, dtype=np.int64)
        return counts

    @cached_property
    def num_rel_ret(self) -> Int64s:
        counts: Int64s = np.count_nonzero(self.relevant, axis=1).astype(np.int64)
        return counts

    @cached_property
    def num_rel(self) -> Int64s:
        """Judged documents with a grade >= the relevance level, retrieved or not."""
        level = self.relevance_level
        return np.array(
            [sum(n for g, n in counts.items() if g >= level) for counts in self.levels],
            dtype=np.int64,
        )

    @cached_property
    def num_nonrel(self) -> Int64s:
        """Judged documents below the relevance level (grade >= 0), retrieved or not."""
        level = self.relevance_level
        return np.array(
            [sum(n for g, n in counts.items() if g < level) for counts in self.levels],
            dtype=np.int64,
        )

    def so_far_at(self, counts: Int64s, ranks: Int64s) -> Int64s:
        """`counts[q, ranks[q] - 1]` per row (ranks are 1-based, clipped to num_ret; 0 -> 0)."""
        depth = np.minimum(ranks, self.num_ret)
        if self.width == 0:
            return np.zeros(len(depth), dtype=np.int64)
        taken = counts[np.arange(len(depth)), np.maximum(depth - 1, 0)]
        result: Int64s = np.where(depth > 0, taken, 0)
        return result
