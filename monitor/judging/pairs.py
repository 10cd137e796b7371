"""What most needs judging: the unjudged (query, document) pairs of finalized windows, by how
much a grade would narrow the window's bounds, each asked for once, within a budget an hour.

A window's nDCG@k counts an unjudged document as gaining 0; judged, it may rise as far as
`ndcg_upper@k`, the most nDCG@k any grading of the unjudged documents of the top k gives
(`monitor.scoring.bounds`). Query q's gap is `ndcg_upper@k(q) - ndcg@k(q)`: how much its
unjudged documents could still add. It is spread over the unjudged documents of q's top k
in proportion to their rank discount `1 / log2(rank + 1)`, the weight each has in the DCG,
and divided by the window's queries. A pair's `priority` is that share: how much judging it
could move the window's mean, at most.
It is the largest over the windows it was seen in. An unjudged document of a query whose gap
is 0 is asked for all the same, with priority 0, after every pair with a share: the priority
orders, never excludes.

The ranking looked at is the window's sampled one per query (`monitor.windows.samples`: the
first ranking of the query served in the window, per segment); `served` counts the windows
whose sampled ranking had the document in the top k, `first_seen_ms` is the start of the first.

`PairQueue` holds the pairs waiting (at most `max_pending`: the lowest priority leaves first)
and the keys of every pair asked for, by this instance or any other (`asked`, read back from
the to-judge topic on start): a pair is never asked for twice. A key is kept as its 64-bit
hash (Python's, keyed per process: ids crafted offline do not collide), about 100 bytes a
pair; past `MAX_ASKED` pairs the oldest are forgotten (a forgotten pair may be asked for once
more), so a to-judge topic flooded with made-up pairs holds bounded memory. `due(now_ms)` gives
the pairs to publish now, highest priority first, so that no more than `budget_per_hour` were
asked for in the trailing hour.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import orjson

from monitor.windows.summary import WindowSummary

__all__ = ["HOUR_MS", "MAX_ASKED", "Pair", "PairKey", "PairQueue", "pair_key"]

HOUR_MS: Final = 3_600_000
# Pairs remembered as asked for, at most: 208 days of the default budget (200 an hour).
MAX_ASKED: Final = 1_000_000

PairKey = tuple[str, str]  # (query id, document id)


def pair_key(query_id: str, doc_id: str) -> bytes:
    """The Kafka record key of a pair on the to-judge topic (a JSON array: no id can split
    into two or merge with the other)."""
    return orjson.dumps([query_id, doc_id])


@dataclass(slots=True)
class Pair:
    """One (query, document) rankmon asks to have judged."""

    query_id: str
    doc_id: str
    priority: float
    first_seen_ms: int
    served: int
    rank: int  # the best (lowest) rank it was seen at, 1 first
    version: str  # the evaluation-set version it was unjudged in

    def to_json(self, readable: Mapping[str, str] | None = None) -> bytes:
        """The to-judge topic's record value; `readable`: what a judge reads of the pair
        (`query_text`, `title`, `snippet`, `url`, `document_url`), where known."""
        return orjson.dumps(
            {
                "query_id": self.query_id,
                "doc_id": self.doc_id,
                "priority": self.priority,
                "first_seen": self.first_seen_ms,
                "served": self.served,
                "rank": self.rank,
                "evaluation_set_version": self.version,
                **(readable or {}),
            }
        )


class PairQueue:
    """The pairs waiting to be asked for, and those asked for already (module docstring)."""

    def __init__(self, cutoff: int, gain: str, budget_per_hour: int, max_pending: int) -> None:
        self.cutoff = cutoff
        self.lower_key = f"ndcg@{cutoff}:{gain}"
        self.upper_key = f"ndcg_upper@{cutoff}:{gain}"
        self.budget_per_hour = budget_per_hour
        self.max_pending = max_pending
        self.pending: dict[PairKey, Pair] = {}
        # The hashes of the pairs asked for (module docstring), and their order, oldest first.
        self.asked: set[int] = set()
        self._asked_order: deque[int] = deque()
        self.dropped = 0  # pairs that left the queue for a higher priority one
        self._asked_at: list[int] = []  # when each pair of the trailing hour was asked, sorted

    def note_window(
        self,
        summary: WindowSummary,
        ranking_of: Callable[[str], Sequence[str] | None],
        grades_of: Callable[[str], Mapping[str, int] | None],
    ) -> int:
        """Take the unjudged pairs of a finalized window's sampled rankings; return how many
        pairs it named. `ranking_of(query)`: the window's sampled ranking of the query;
        `grades_of(query)`: the judgments the window was scored with (None: not a query of
        the set)."""
        if summary.queries == 0:
            return 0
        named = 0
        for query, means in summary.query_means.items():
            gap = means.get(self.upper_key, math.nan) - means.get(self.lower_key, math.nan)
            ranking = ranking_of(query)
            grades = grades_of(query)
            if ranking is None or grades is None:
                continue
            if not gap > 0:  # no share of the band to close (or no bounds): asked for last
                gap = 0.0
            unjudged = [
                (rank, doc)
                for rank, doc in enumerate(ranking[: self.cutoff], start=1)
                if doc not in grades
            ]
            weights = [1.0 / math.log2(rank + 1) for rank, _ in unjudged]
            total = sum(weights)
            for (rank, doc), weight in zip(unjudged, weights, strict=True):
                share = gap * weight / total / summary.queries
                self._note(query, doc, share, rank, summary)
                named += 1
        self._bound()
        return named

    def _note(self, query: str, doc: str, share: float, rank: int, summary: WindowSummary) -> None:
        key = (query, doc)
        if hash(key) in self.asked:
            return
        pair = self.pending.get(key)
        if pair is None:
            self.pending[key] = Pair(
                query, doc, share, summary.start_ms, 1, rank, summary.evaluation_set_version
            )
            return
        pair.priority = max(pair.priority, share)
        pair.served += 1
        pair.rank = min(pair.rank, rank)
        pair.first_seen_ms = min(pair.first_seen_ms, summary.start_ms)

    def _bound(self) -> None:
        excess = len(self.pending) - self.max_pending
        if excess <= 0:
            return
        lowest = heapq.nsmallest(excess, self.pending.values(), key=_order)
        for pair in lowest:
            del self.pending[(pair.query_id, pair.doc_id)]
        self.dropped += excess

    def judged(self, key: PairKey) -> None:
        """A judgment came for the pair: it needs asking no more."""
        self.pending.pop(key, None)
        self._remember(key)

    def was_asked(self, key: PairKey, time_ms: int) -> None:
        """The pair was asked for at `time_ms` (by any instance: read from the topic)."""
        if hash(key) in self.asked:
            return
        self.pending.pop(key, None)
        self._remember(key)
        bisect.insort(self._asked_at, time_ms)
        if len(self._asked_at) > self.budget_per_hour:
            # Only the newest `budget_per_hour` times can tell whether the budget is spent.
            del self._asked_at[0]

    def _remember(self, key: PairKey) -> None:
        hashed = hash(key)
        if hashed in self.asked:
            return
        self.asked.add(hashed)
        self._asked_order.append(hashed)
        if len(self._asked_order) > MAX_ASKED:
            self.asked.discard(self._asked_order.popleft())

    def room(self, now_ms: int) -> int:
        """How many pairs may be asked for now within the budget of the trailing hour."""
        del self._asked_at[: bisect.bisect_right(self._asked_at, now_ms - HOUR_MS)]
        return max(0, self.budget_per_hour - len(self._asked_at))

    def due(self, now_ms: int) -> list[Pair]:
        """The pairs to ask for now, highest priority first, counted as asked at `now_ms`."""
        room = self.room(now_ms)
        if not room or not self.pending:
            return []
        chosen = heapq.nlargest(room, self.pending.values(), key=_order)
        for pair in chosen:
            self.was_asked((pair.query_id, pair.doc_id), now_ms)
        return chosen


def _order(pair: Pair) -> tuple[float, int, str, str]:
    # Priority, then seen more often, then the ids: the same choice on every instance.
    return (pair.priority, pair.served, pair.query_id, pair.doc_id)
