"""Mixed traffic for fault tests and the soak bench: what production throws at rankmon.

A seeded stream of ranking-event records over a `SyntheticCorpus`: mostly valid events whose
event time moves forward at a steady step, with invalid records (bad JSON, a missing field,
an empty ranking), events of unknown queries, exact duplicates (the same bytes again a few
records later, inside the open window) and late events (far behind the stream's time, their
windows closed). The same seed gives the same records.

Each record names the outcome it is built to get (`intended`). That is exact on one partition;
on several, an event built late may still find its window open when the slowest partition
holds the global watermark back, so reconcile counts by what the monitor reports, and use the
intent as a plan.

    time ->     e e e e d e e I e e U e e L e e e     d duplicate of an earlier e
                                                      I invalid, U unknown query, L late
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import orjson

from monitor.demo.synthetic import SyntheticCorpus

__all__ = ["MixedTraffic", "TrafficRecord"]

INVALID_VALUES: tuple[bytes, ...] = (
    b"{not json",
    b'{"event_id": "x", "ranking": ["d1"]}',  # no query_id
    b'{"event_id": "y", "query_id": "q0001", "ranking": []}',
)


@dataclass(frozen=True)
class TrafficRecord:
    """One record to produce, the outcome it is built for, and its event time."""

    key: bytes
    value: bytes
    intended: str  # accepted, invalid, unknown_query, duplicate, late
    event_time_ms: int


@dataclass(frozen=True)
class MixedTraffic:
    """Shares of each kind of bad input; the rest is valid traffic.

    `step_ms` is the event-time distance between two valid events; a late event is set
    `late_by_ms` behind the stream's current time (more than window size plus lateness, so
    its windows closed); a duplicate repeats one of the last `duplicate_span` valid events
    (keep `duplicate_span * step_ms` below the allowed lateness, so its window is still open).
    """

    corpus: SyntheticCorpus
    start_ms: int
    step_ms: int
    late_by_ms: int
    models: Sequence[str] = ("v1", "v2")
    invalid: float = 0.03
    unknown_query: float = 0.02
    duplicate: float = 0.03
    late: float = 0.02
    duplicate_span: int = 5
    depth: int = 10

    def records(
        self, seed: int, count: int, clock: Callable[[], int] | None = None
    ) -> Iterator[TrafficRecord]:
        """`count` records; event ids are `<seed>-<n>`, so streams of two seeds never collide.

        With `clock` (epoch ms), event time never falls behind it: after a pause in sending,
        the next valid event is at the clock's time, as a ranker's would be.
        """
        rng = random.Random(seed)
        recent: list[TrafficRecord] = []
        now = self.start_ms
        queries = self.corpus.query_ids
        for n in range(count):
            draw = rng.random()
            if draw < self.invalid:
                value = INVALID_VALUES[n % len(INVALID_VALUES)]
                yield TrafficRecord(b"q0001", value, "invalid", now)
                continue
            draw -= self.invalid
            if draw < self.duplicate and recent:
                original = rng.choice(recent[-self.duplicate_span :])
                yield TrafficRecord(
                    original.key, original.value, "duplicate", original.event_time_ms
                )
                continue
            draw -= self.duplicate
            query, time_ms, intended = rng.choice(queries), now, "accepted"
            if draw < self.unknown_query:
                query, intended = f"unknown-{n}", "unknown_query"
            elif draw - self.unknown_query < self.late:
                time_ms, intended = now - self.late_by_ms, "late"
            else:
                now = max(now + self.step_ms, clock() if clock is not None else now)
                time_ms = now
            record = TrafficRecord(
                query.encode(), self._event(rng, f"{seed}-{n}", query, time_ms), intended, time_ms
            )
            if intended == "accepted":
                recent.append(record)
                del recent[: -self.duplicate_span]
            yield record

    def closer(self, seed: int, time_ms: int, query: str | None = None) -> TrafficRecord:
        """A valid event far ahead, whose watermark closes every window before it."""
        query = query or self.corpus.query_ids[0]
        rng = random.Random(seed)
        value = self._event(rng, f"closer-{seed}-{time_ms}", query, time_ms)
        return TrafficRecord(query.encode(), value, "accepted", time_ms)

    def _event(self, rng: random.Random, event_id: str, query: str, time_ms: int) -> bytes:
        known = query in self.corpus.judgments
        pool = self.corpus.candidates(query) if known else ("u1", "u2", "u3")
        ranking = rng.sample(pool, min(self.depth, len(pool)))
        return orjson.dumps(
            {
                "event_id": event_id,
                "query_id": query,
                "ranking": ranking,
                "event_time": time_ms,
                "segment": {"model": rng.choice(self.models)},
            }
        )
