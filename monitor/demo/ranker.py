"""A synthetic ranker: serves rankings for the demo's queries, one model version per segment.

A document's score is `quality * SIGNAL * grade + noise` with standard normal noise, and the
ranking is the candidates sorted by score: at quality 0 the order is random, and the higher
the quality the more often relevant documents come first. A version may switch to a lower
quality at a known time, which is the drop the demo's alert catches.

Events follow the ranking-event schema (README.md): JSON, keyed by query id, `event_time` the
moment the ranking was served (epoch milliseconds), the version as segment `model`. A small
share of events is deliberately bad (malformed JSON, an unknown query, an empty ranking) or a
byte-for-byte resend of an earlier event, so every outcome counter has something to count.
"""

from __future__ import annotations

import itertools
import random
import threading
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson

from monitor.clock import Clock
from monitor.demo.synthetic import SyntheticCorpus

__all__ = ["SIGNAL", "ModelVersion", "SyntheticRanker", "serve"]

# How strongly a grade lifts a document's score at quality 1, in units of the noise's sd.
SIGNAL = 1.5

# The flavours of deliberately bad events, drawn with equal probability.
_BAD_KINDS = ("malformed_json", "unknown_query", "empty_ranking")

Send = Callable[[bytes, bytes], None]


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
    """Draws queries (a few popular, a long tail) and serves each a ranking of one version.

    Popularity follows a Zipf-like law with exponent 1, so a window sees the head queries
    many times and part of the tail once or not at all, as production traffic does.
    """

    def __init__(
        self,
        corpus: SyntheticCorpus,
        versions: Sequence[ModelVersion],
        *,
        seed: int = 0,
        depth: int = 20,
        bad_share: float = 0.02,
        duplicate_share: float = 0.01,
    ) -> None:
        if not versions:
            raise ValueError("need at least one model version")
        if not 0 <= bad_share + duplicate_share < 1:
            raise ValueError("bad_share + duplicate_share must be in [0, 1)")
        self._corpus = corpus
        self._versions = tuple(versions)
        self._rng = random.Random(seed)
        self._depth = depth
        self._bad_share = bad_share
        self._duplicate_share = duplicate_share
        self._queries = corpus.query_ids
        # Shuffled so that popularity is independent of the query id order.
        popular = list(self._queries)
        self._rng.shuffle(popular)
        self._by_popularity = popular
        self._cumulative = list(
            itertools.accumulate(1 / rank for rank in range(1, len(popular) + 1))
        )
        self._recent: deque[tuple[bytes, bytes]] = deque(maxlen=50)

    def rank(self, query_id: str, quality: float) -> list[str]:
        """The candidates of `query_id` by descending noisy score, cut at the ranker's depth."""
        grades = self._corpus.judgments[query_id]
        scored = [
            (quality * SIGNAL * grades.get(doc, 0) + self._rng.gauss(0.0, 1.0), doc)
            for doc in self._corpus.candidates(query_id)
        ]
        scored.sort(reverse=True)
        return [doc for _, doc in scored[: self._depth]]

    def next_event(self, now_ms: int) -> tuple[bytes, bytes]:
        """The next record to send at `now_ms`: (key, value)."""
        draw = self._rng.random()
        if draw < self._duplicate_share and self._recent:
            return self._rng.choice(self._recent)
        if draw < self._duplicate_share + self._bad_share:
            return self._bad_event(now_ms)
        version = self._rng.choice(self._versions)
        query_id = self._rng.choices(self._by_popularity, cum_weights=self._cumulative)[0]
        record = self._record(
            now_ms, query_id, self.rank(query_id, version.quality_at(now_ms)), version
        )
        self._recent.append(record)
        return record

    def _record(
        self, now_ms: int, query_id: str, ranking: list[str], version: ModelVersion
    ) -> tuple[bytes, bytes]:
        event = {
            "schema_version": 1,
            "event_id": str(uuid.UUID(int=self._rng.getrandbits(128), version=4)),
            "query_id": query_id,
            "ranking": ranking,
            "event_time": now_ms,
            "segment": {"model": version.name},
        }
        return query_id.encode(), orjson.dumps(event)

    def _bad_event(self, now_ms: int) -> tuple[bytes, bytes]:
        kind = self._rng.choice(_BAD_KINDS)
        version = self._rng.choice(self._versions)
        if kind == "unknown_query":
            return self._record(now_ms, "q-unknown", ["d-unknown"], version)
        key, value = self._record(now_ms, self._rng.choice(self._queries), [], version)
        if kind == "malformed_json":
            return key, value[: len(value) // 2]
        return key, value


def serve(
    ranker: SyntheticRanker,
    send: Send,
    stop: threading.Event,
    *,
    rate: float,
    clock: Clock,
    tick_seconds: float = 0.05,
) -> int:
    """Send `rate` events per second of `clock` time until `stop` is set; return the count.

    Events due since the start are sent in a burst every `tick_seconds`, so the long-run rate
    holds even when a send or the machine is slow.
    """
    if rate <= 0:
        raise ValueError("rate must be positive")
    start_ms = clock.now_ms()
    sent = 0
    while not stop.is_set():
        now_ms = clock.now_ms()
        due = int((now_ms - start_ms) / 1000 * rate)
        while sent < due and not stop.is_set():
            send(*ranker.next_event(now_ms))
            sent += 1
        stop.wait(tick_seconds)
    return sent
