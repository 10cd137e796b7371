"""What changed in one query's ranking: judged documents that entered or left the top k,
the discounted gain lost (or won) at each rank, how much the ranking churned, and why.

Churn is judgment-free, so "the rankings changed but the metric did not" is visible:

- `rbo`: rank-biased overlap of the two top k (Webber, Moffat and Zobel 2010, the
  extrapolated RBO_ext of their equation 32, persistence p = 0.9): 1 for the same ranking,
  0 for no document in common, weighing the top ranks most;
- `jaccard`: |A and B| / |A or B| of the two top k as sets (1 for two empty rankings).

`cause` says what moved, first match wins: `empty_answer` (no ranking after: the ranker
failed or the query was not served), `judged_left` (a judged relevant document left the top
k), `unjudged_entered` (a document nobody judged entered it), `reorder_only` (the same
documents in another order), `unchanged`, else `judged_changed` (judged documents swapped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monitor.scoring.gain import Gain

__all__ = ["RBO_PERSISTENCE", "RankedDocument", "RankingChange", "jaccard", "ranking_change", "rbo"]

RBO_PERSISTENCE = 0.9  # RBO's p: the top 10 ranks carry about 86 % of the weight


@dataclass(frozen=True)
class RankedDocument:
    """A document at a rank with its grade (None: unjudged) and its gain."""

    rank: int
    document: str
    grade: int | None
    gain: float


@dataclass(frozen=True)
class RankingChange:
    """Two rankings of one query, cut at k, and what moved between them.

    `gain_change[r - 1]`: the discounted gain at rank r after minus before,
    (gain_after - gain_before) / log2(r + 1): what the rank adds to DCG@k.
    """

    k: int
    before: tuple[RankedDocument, ...]
    after: tuple[RankedDocument, ...]
    entered: tuple[str, ...]  # judged relevant documents in the top k after, not before
    left: tuple[str, ...]  # judged relevant documents in the top k before, not after
    gain_change: tuple[float, ...]
    rbo: float = 1.0  # rank-biased overlap of the two top k
    jaccard: float = 1.0  # of the two top k as sets

    def moves(self) -> list[tuple[str, int, int | None]]:
        """Where each judged relevant document of the top k before went: (document, rank
        before, rank after or None when it left the top k), those that moved only."""
        after = {d.document: d.rank for d in self.after}
        return [
            (d.document, d.rank, after.get(d.document))
            for d in self.before
            if d.grade is not None and d.gain > 0 and after.get(d.document) != d.rank
        ]

    @property
    def cause(self) -> str:
        """What moved between the two top k (the module docstring)."""
        before = [d.document for d in self.before]
        after = [d.document for d in self.after]
        if not after:
            return "empty_answer"
        if self.left:
            return "judged_left"
        if any(d.grade is None and d.document not in before for d in self.after):
            return "unjudged_entered"
        if before == after:
            return "unchanged"
        if sorted(before) == sorted(after):
            return "reorder_only"
        return "judged_changed"


def rbo(before: Sequence[str], after: Sequence[str], p: float = RBO_PERSISTENCE) -> float:
    """RBO_ext of two rankings of distinct documents, to the depth of the longer one."""
    depth = max(len(before), len(after))
    if depth == 0:
        return 1.0
    seen_before: set[str] = set()
    seen_after: set[str] = set()
    overlap = 0
    weighted = 0.0
    for d in range(1, depth + 1):
        x = before[d - 1] if d <= len(before) else None
        y = after[d - 1] if d <= len(after) else None
        if x is not None and y is not None and x == y:
            overlap += 1
        else:
            overlap += (x is not None and x in seen_after) + (y is not None and y in seen_before)
        if x is not None:
            seen_before.add(x)
        if y is not None:
            seen_after.add(y)
        weighted += overlap / d * p**d
    return overlap / depth * p**depth + (1 - p) / p * weighted


def jaccard(before: Sequence[str], after: Sequence[str]) -> float:
    """|A and B| / |A or B| of the two rankings as sets (1 when both are empty)."""
    union = set(before) | set(after)
    return len(set(before) & set(after)) / len(union) if union else 1.0


def _ranked(
    ranking: Sequence[str], grades: Mapping[str, int], gain: Gain, k: int
) -> tuple[RankedDocument, ...]:
    out = []
    for rank, document in enumerate(ranking[:k], start=1):
        grade = grades.get(document)
        out.append(
            RankedDocument(
                rank, document, grade, gain.of(grade) if grade is not None and grade > 0 else 0.0
            )
        )
    return tuple(out)


def ranking_change(
    before: Sequence[str], after: Sequence[str], grades: Mapping[str, int], gain: Gain, k: int
) -> RankingChange:
    """Compare two rankings of one query at cutoff k."""
    b, a = _ranked(before, grades, gain, k), _ranked(after, grades, gain, k)
    relevant_before = {d.document for d in b if d.grade is not None and d.grade > 0}
    relevant_after = {d.document for d in a if d.grade is not None and d.grade > 0}
    changes = []
    for rank in range(1, k + 1):
        gain_before = b[rank - 1].gain if rank <= len(b) else 0.0
        gain_after = a[rank - 1].gain if rank <= len(a) else 0.0
        changes.append((gain_after - gain_before) / math.log2(rank + 1))
    return RankingChange(
        k=k,
        before=b,
        after=a,
        entered=tuple(d.document for d in a if d.document in relevant_after - relevant_before),
        left=tuple(d.document for d in b if d.document in relevant_before - relevant_after),
        gain_change=tuple(changes),
        rbo=rbo(before[:k], after[:k]),
        jaccard=jaccard(before[:k], after[:k]),
    )
