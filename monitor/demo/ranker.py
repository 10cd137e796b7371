"""A synthetic ranker: a ranking of a demo query for a model version of a given quality.

A document's score is `quality * SIGNAL * grade + noise` with standard normal noise, and the
ranking is the candidates sorted by score: at quality 0 the order is random, and the higher
the quality the more often relevant documents come first. A version may switch to a lower
quality at a known time, which is the drop the demo's alert catches. The demo serves it
over HTTP (`monitor.demo.http_ranker`) and `rankmon replay` asks it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from monitor.demo.synthetic import SyntheticCorpus

__all__ = ["SIGNAL", "ModelVersion", "SyntheticRanker"]

# How strongly a grade lifts a document's score at quality 1, in units of the noise's sd.
SIGNAL = 1.5


@dataclass(frozen=True)
class ModelVersion:
    """One model version: its quality, and optionally a lower one from `degrade_at_ms` on.

    Times are epoch milliseconds, as event times are.
    """

    name: str
    quality: float
    degraded_quality: float | None = None
    degrade_at_ms: int | None = None

    def __post_init__(self) -> None:
        if (self.degraded_quality is None) != (self.degrade_at_ms is None):
            raise ValueError("degraded_quality and degrade_at_ms go together")

    def quality_at(self, now_ms: int) -> float:
        """The quality in force at `now_ms`."""
        degraded = self.degrade_at_ms is not None and now_ms >= self.degrade_at_ms
        if degraded and self.degraded_quality is not None:
            return self.degraded_quality
        return self.quality


class SyntheticRanker:
    """Ranks a query's candidates (judged and unjudged) by a noisy, grade-lifted score."""

    def __init__(self, corpus: SyntheticCorpus, *, seed: int = 0, depth: int = 20) -> None:
        self._corpus = corpus
        self._rng = random.Random(seed)
        self._depth = depth

    def rank(self, query_id: str, quality: float) -> list[str]:
        """The candidates of `query_id` by descending noisy score, cut at the ranker's depth."""
        grades = self._corpus.judgments[query_id]
        scored = [
            (quality * SIGNAL * grades.get(doc, 0) + self._rng.gauss(0.0, 1.0), doc)
            for doc in self._corpus.candidates(query_id)
        ]
        scored.sort(reverse=True)
        return [doc for _, doc in scored[: self._depth]]
