"""judged@k split by the source of each grade: who judged the documents a ranking shows.

Every grade of an evaluation set has a source (`EvaluationSet.source_of`: the file's, a
line's, the judging loop's judgments'). For one ranking, the share of its first k documents
graded by a source is their count over min(k, the ranking's length), so the shares of all
sources add up to its judged@k. A window's split is the mean over its queries, each read from
one sampled ranking (`monitor.windows.samples`). Past `MAX_SOURCES` sources the least present
are counted as `other`, so a producer of judgments cannot explode a label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from monitor.scoring.evalset import EvaluationSet

__all__ = ["MAX_SOURCES", "OTHER_SOURCE", "judged_by_source"]

MAX_SOURCES: Final = 20
OTHER_SOURCE: Final = "other"


def judged_by_source(
    rankings: Iterable[tuple[str, Sequence[str]]], evaluation_set: EvaluationSet, k: int
) -> dict[str, float]:
    """Source -> the mean over the rankings' queries of the share of their first k documents
    that source graded (queries not in the set left out; {} without any)."""
    totals: dict[str, float] = {}
    queries = 0
    for query, ranking in rankings:
        if query not in evaluation_set:
            continue
        queries += 1
        shown = min(k, len(ranking))
        for doc in ranking[:k]:
            source = evaluation_set.source_of(query, doc)
            if source is not None:
                totals[source] = totals.get(source, 0.0) + 1.0 / shown
    if not queries:
        return {}
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    split = {source: total / queries for source, total in ranked[: MAX_SOURCES - 1]}
    rest = sum(total for _, total in ranked[MAX_SOURCES - 1 :]) / queries
    if len(ranked) == MAX_SOURCES:
        split[ranked[-1][0]] = rest
    elif rest:
        split[OTHER_SOURCE] = rest
    return split
