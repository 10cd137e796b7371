"""What changed in one query's ranking: judged documents that entered or left the top k,
and the discounted gain lost (or won) at each rank."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monitor.scoring.gain import Gain

__all__ = ["RankedDocument", "RankingChange", "ranking_change"]


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
    )
