"""The demo's evaluation set: graded judgments and a corpus, generated from a seed.

The same seed gives the same queries, documents and grades on every machine: the generator is
`random.Random`, whose sequence Python keeps stable across versions and platforms.

Each query gets about `judged_per_query` judged documents with grades 0-3 drawn from
`GRADE_SHARES` (most judged documents are not or only marginally relevant, as in TREC pools),
at least one of grade 2 or 3 so that every query's IDCG is positive, and about
`unjudged_per_query` documents that no one judged (they gain 0, like any unjudged document),
each with a grade nobody knows yet (`true_grade`): what the demo's judges find out.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GRADE_SHARES", "UNJUDGED_SHARES", "SyntheticCorpus", "generate_corpus"]

# Share of judged documents per grade 0, 1, 2, 3: the shape of a typical graded pool.
GRADE_SHARES: tuple[float, float, float, float] = (0.45, 0.30, 0.17, 0.08)
# The true grades of the documents nobody judged: mostly not relevant, as a pool that caught
# most relevant documents leaves them.
UNJUDGED_SHARES: tuple[float, float, float, float] = (0.85, 0.10, 0.04, 0.01)

_GRADES = (0, 1, 2, 3)


@dataclass(frozen=True)
class SyntheticCorpus:
    """Queries with their graded judgments and the unjudged documents a ranker may serve.

    `judgments[qid][docid]` is a grade 0-3; `unjudged[qid]` are documents of the query's
    candidate pool absent from the judgments. Query ids are `q0001`...; document ids are
    unique across the corpus.
    """

    seed: int
    judgments: Mapping[str, Mapping[str, int]]
    unjudged: Mapping[str, tuple[str, ...]]

    @property
    def query_ids(self) -> tuple[str, ...]:
        """The queries in id order."""
        return tuple(sorted(self.judgments))

    def candidates(self, query_id: str) -> tuple[str, ...]:
        """Every document a ranker may serve for the query: judged first, then unjudged."""
        return (*self.judgments[query_id], *self.unjudged[query_id])

    def true_grade(self, query_id: str, doc_id: str) -> int:
        """What a careful person would grade the document: its judgment, or for an unjudged
        one a grade drawn from `UNJUDGED_SHARES` by the seed and the ids (the same every
        time)."""
        judged = self.judgments[query_id].get(doc_id)
        if judged is not None:
            return judged
        rng = random.Random(f"{self.seed}:{query_id}:{doc_id}")
        return rng.choices(_GRADES, weights=UNJUDGED_SHARES)[0]

    def to_trec_qrels(self) -> str:
        """The judgments as a TREC qrels file: `qid 0 docid grade`, one line per judgment."""
        lines = [
            f"{qid} 0 {doc} {grade}\n"
            for qid in self.query_ids
            for doc, grade in self.judgments[qid].items()
        ]
        return "".join(lines)

    def write_qrels(self, path: Path) -> Path:
        """Write `to_trec_qrels()` to `path` and return it."""
        path.write_text(self.to_trec_qrels(), encoding="utf-8")
        return path


def generate_corpus(
    seed: int,
    *,
    queries: int = 300,
    judged_per_query: int = 20,
    unjudged_per_query: int = 30,
) -> SyntheticCorpus:
    """Generate the corpus for `seed`; the pool sizes vary by up to a quarter per query."""
    if queries < 1 or judged_per_query < 1 or unjudged_per_query < 0:
        raise ValueError("need at least one query and one judged document per query")
    rng = random.Random(seed)
    judgments: dict[str, dict[str, int]] = {}
    unjudged: dict[str, tuple[str, ...]] = {}
    next_doc = 0
    for number in range(1, queries + 1):
        qid = f"q{number:04d}"
        judged = _vary(rng, judged_per_query)
        pool = _vary(rng, unjudged_per_query) if unjudged_per_query else 0
        docs = [f"d{next_doc + i:06d}" for i in range(judged + pool)]
        next_doc += judged + pool
        rng.shuffle(docs)
        grades = _grades(rng, judged)
        judgments[qid] = dict(zip(docs[:judged], grades, strict=True))
        unjudged[qid] = tuple(docs[judged:])
    return SyntheticCorpus(seed=seed, judgments=judgments, unjudged=unjudged)


def _vary(rng: random.Random, mean: int) -> int:
    spread = mean // 4
    return max(1, mean + rng.randint(-spread, spread))


def _grades(rng: random.Random, count: int) -> list[int]:
    grades = rng.choices(_GRADES, weights=GRADE_SHARES, k=count)
    if max(grades) < 2:
        # A query whose best document is marginal tells little about a ranker's quality.
        grades[rng.randrange(count)] = rng.choice((2, 3))
    return grades
