"""`SetScores`: one measure of a few rankings under any of several evaluation sets.

The judging loop scores sampled rankings again under sets the stream never scores with (the
judge's and the people's views of the correction, the versions a baseline is re-scored
between): one `Scorer` per set version, made the first time it is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer

__all__ = ["SetScores"]


class SetScores:
    """Each ranking's value of a measure key under a set, with a scorer kept per version."""

    def __init__(self, new_scorer: Callable[[EvaluationSet], Scorer]) -> None:
        self._new_scorer = new_scorer
        self._scorers: dict[str, Scorer] = {}

    def __call__(
        self,
        evaluation_set: EvaluationSet,
        key: str,
        queries: Sequence[str],
        rankings: Sequence[Sequence[str]],
    ) -> list[float]:
        """`key`'s value of each (query, ranking) under `evaluation_set` (NaN: none)."""
        if not queries:
            return []
        scorer = self._scorers.get(evaluation_set.version)
        if scorer is None:
            scorer = self._scorers[evaluation_set.version] = self._new_scorer(evaluation_set)
        column = [str(k) for k in scorer.keys].index(key)
        return [float(v) for v in scorer.score(queries, rankings)[:, column]]

    def forget(self, version: str) -> None:
        """Drop the scorer of a version no longer asked for."""
        self._scorers.pop(version, None)

    def forget_all(self) -> None:
        self._scorers.clear()
