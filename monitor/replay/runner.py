"""One replay: every query of the evaluation set asked once, each ending in one outcome.

`run_replay` asks the ranker from `concurrency` threads, no faster than `rate` requests per
second, retries included (spaced evenly, so a replay never bursts at production, and a ranker
answering 503 gets no more requests than a healthy one), publishes each query's record (a
worker does so while the ranker works on its next query), and then the end-of-replay marker
on every partition.

A stop (SIGTERM, SIGINT) sends nothing more: no further request, retries included; requests
in flight get `STOP_GRACE_S` to answer before their connections are shut. Every query not
answered by then ends as `error`/`cancelled`, which is no failure of the ranker: it is not
published (the monitor counts no failure for it), only counted in the marker's outcomes, so
the marker still accounts for every query. The replay's result is `aborted`, and its marker
says `stopped` (the monitor holds the quality rules on its window: a part of the set is no
measurement of the ranker). The run file still holds what was answered.

A circuit breaker ends a replay whose ranker is down: after `breaker` queries in a row failed
as the ranker fails (a refused or reset connection, a timeout, a 429 or a 5xx, after their
retries) nothing more is asked, the queries left end as `error`/`aborted`, and the replay's
result is `aborted` with the reason; its marker says so (`replay.aborted`). A dead ranker
then ends a replay in the time `breaker` queries take to fail, whatever the set's size.

`write_run` writes the replay as a TREC run (`rankmon eval QRELS RUN` scores it as the monitor
does): each query's documents in the ranker's order, with the ranker's own scores where they
strictly decrease (trec_eval sorts by score, and would reorder ties), else N..1.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from monitor.replay.events import end_marker, query_event, start_marker
from monitor.replay.ranker import Answer
from monitor.replay.topics import Query

__all__ = [
    "STOP_GRACE_S",
    "Asker",
    "Publisher",
    "RateLimit",
    "ReplayReport",
    "run_replay",
    "write_run",
]

# After a stop, how long the requests in flight may still answer.
STOP_GRACE_S: Final = 2.0


class Received(Protocol):
    """An answer read, not yet looked into (`monitor.replay.ranker.Reply`)."""

    def answer(self) -> Answer: ...


class Pending(Protocol):
    """A query sent (`monitor.replay.ranker.Call`)."""

    def receive(self) -> Received: ...


class Asker(Protocol):
    """The ranker (`monitor.replay.ranker.RankerClient`)."""

    def send(self, query: Query, pace: Callable[[], bool] | None = None) -> Pending:
        """Send `query`'s first attempt (after `pace()`, which says whether to go on, before
        each attempt, retries included)."""

    def interrupt(self) -> None:
        """Shut the connections of the requests in flight (they end as failed)."""


class Publisher(Protocol):
    """Where a replay's records go (`monitor.replay.publish.KafkaPublisher`)."""

    def send(self, key: bytes, value: bytes) -> None: ...

    def begin(self, marker: tuple[bytes, bytes]) -> None:
        """Send the start marker to every partition, before any record of the replay."""

    def end(self, marker: Callable[[int], tuple[bytes, bytes]]) -> None:
        """Wait until every record sent is stored, then send `marker(records)` to every
        partition, `records` being how many of them went to that partition."""


class RateLimit:
    """At most `rate` acquisitions per second, evenly spaced, across threads."""

    def __init__(self, rate: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._spacing = 1.0 / rate
        self._monotonic = monotonic
        self._next = 0.0
        self._lock = threading.Lock()

    def acquire(self, stop: threading.Event) -> None:
        with self._lock:
            now = self._monotonic()
            at = max(now, self._next)
            self._next = at + self._spacing
        if at > now:
            stop.wait(at - now)


class CircuitBreaker:
    """Trips after `threshold` queries in a row failed as a ranker that is down fails;
    a ranked query (or any other outcome) closes it again. Thread-safe."""

    # The failures that say the ranker is down, not that the request or its answer is wrong.
    TRIPS: Final = frozenset({"connection", "timeout", "http_429"})

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.reason = ""  # why it tripped ("" while it has not)
        self._failed: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def tripped(self) -> bool:
        return bool(self.reason)

    def note(self, answer: Answer) -> None:
        """One query's outcome."""
        failing = answer.outcome != "ranked" and (
            answer.reason in self.TRIPS or answer.reason.startswith("http_5")
        )
        with self._lock:
            if not failing:
                self._failed.clear()
                return
            self._failed[answer.reason] += 1
            in_a_row = sum(self._failed.values())
            if in_a_row >= self.threshold and not self.reason:
                reasons = ", ".join(f"{r} {n}" for r, n in self._failed.most_common())
                self.reason = f"the ranker failed {in_a_row} queries in a row ({reasons})"


@dataclass
class ReplayReport:
    """What a replay did: its id, when, and each query's outcome; `aborted`: why the circuit
    breaker ended it ("" if it did not)."""

    replay_id: str
    queries: int
    started_ms: int
    ended_ms: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    latencies_s: list[float] = field(default_factory=list)
    rankings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    scores: dict[str, tuple[float, ...]] = field(default_factory=dict)  # the ranker's, if any
    aborted: str = ""
    stopped: bool = False  # a stop (SIGTERM, SIGINT) ended it before every query was asked
    # The first answer of each reason whose ids were not found (no_ids, bad_ids), by reason.
    samples: dict[str, tuple[str, str]] = field(default_factory=dict)  # (query id, answer)

    @property
    def result(self) -> str:
        """aborted (the circuit breaker or a stop ended it), complete (every query ranked),
        partial (some) or failed (none)."""
        if self.aborted or self.stopped:
            return "aborted"
        ranked = self.outcomes["ranked"]
        if ranked == self.queries:
            return "complete"
        return "partial" if ranked else "failed"

    def fixes(self, ids_path: str) -> list[str]:
        """One line per failure that a setting fixes, naming it, with a sample answer."""
        lines = []
        for reason, (query, sample) in sorted(self.samples.items()):
            count = self.reasons[reason]
            what = (
                f"no document ids at {ids_path!r}"
                if reason == "no_ids"
                else f"ids at {ids_path!r} that are not strings or numbers"
            )
            lines.append(
                f"replay {self.replay_id}: {count} answers had {what}; set replay.ranker.ids "
                f"(and scores) to where your ranker's answer holds them, e.g. hits.hits[]._id. "
                f"The answer to {query}: {sample}"
            )
        return lines

    def line(self) -> str:
        """The one log line of the replay."""
        outcomes = ", ".join(f"{name} {count}" for name, count in sorted(self.outcomes.items()))
        reasons = ", ".join(f"{name} {count}" for name, count in sorted(self.reasons.items()))
        seconds = (self.ended_ms - self.started_ms) / 1000
        result = self.result
        if self.aborted or self.stopped:
            result = f"aborted: {self.aborted or 'stopped before every query was answered'}"
        text = f"replay {self.replay_id}: {result}, {self.queries} queries in {seconds:.1f} s"
        return f"{text} ({outcomes})" + (f"; failures: {reasons}" if reasons else "")


def run_replay(
    queries: Sequence[Query],
    asker: Asker,
    publisher: Publisher,
    *,
    replay_id: str,
    segment: Mapping[str, str],
    concurrency: int,
    rate: float | None = None,
    breaker: int = 0,
    stop: threading.Event | None = None,
    stop_grace_s: float = STOP_GRACE_S,
    now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    on_answer: Callable[[Query, Answer], None] | None = None,
) -> ReplayReport:
    """Replay `queries` once through `asker` and publish every outcome (module docstring);
    `rate`: requests per second at most (None: no limit); `breaker`: failed queries in a row
    that end the replay (0: none do)."""
    stop = stop or threading.Event()
    limit = None if rate is None else RateLimit(rate)
    tripped = CircuitBreaker(breaker) if breaker else None
    report = ReplayReport(replay_id, len(queries), now_ms())

    def going() -> bool:
        return not stop.is_set() and (tripped is None or not tripped.tripped)

    def pace() -> bool:
        if limit is not None and going():
            limit.acquire(stop)
        return going()

    def outcome(reply: Received, stopped: bool) -> Answer:
        answer = reply.answer()
        if answer.outcome != "ranked" and stopped:
            return Answer("error", reason="cancelled", attempts=answer.attempts)
        if tripped is not None and answer.reason == "cancelled":
            return Answer("error", reason="aborted", attempts=answer.attempts)
        if tripped is not None:
            tripped.note(answer)
        return answer

    done = threading.Event()

    def cut_in_flight() -> None:
        # After a stop, what is still in flight gets the grace, then its connection is shut.
        # It waits on `done` (a replay's end is not held up to the next look at `stop`).
        while not done.wait(0.05):
            if stop.is_set():
                if not done.wait(stop_grace_s):
                    asker.interrupt()
                return

    publisher.begin(start_marker(replay_id, started_ms=report.started_ms, segment=segment))
    watcher = threading.Thread(target=cut_in_flight, name="replay-stop", daemon=True)
    watcher.start()
    # `concurrency` workers, each taking the next query, sending it, then looking into the
    # previous query's answer and publishing its record while the ranker works on this one,
    # then reading this one's answer: at most one request in flight a worker, and no hop to
    # another thread (at concurrency 1 that hop cost the driver a third of its speed against
    # a plain client loop). The circuit breaker hears of a failure one query later.
    # A list's iterator hands each query to one worker without a lock (its next() is one
    # step under the GIL); the report and the publisher take the lock.
    pending = iter(list(queries))
    lock = threading.Lock()
    failures: list[BaseException] = []

    def take(query: Query, reply: Received, stopped: bool) -> None:
        answer = outcome(reply, stopped)
        with lock:
            _take(report, query, answer, publisher, segment)
            if on_answer is not None:
                on_answer(query, answer)

    def work() -> None:
        held: tuple[Query, Received, bool] | None = None  # and whether a stop came by then
        try:
            while True:
                query = next(pending, None)
                if query is None or failures:
                    break
                call = asker.send(query, pace)
                if held is not None:
                    take(*held)
                reply = call.receive()
                held = (query, reply, stop.is_set())
            if held is not None:
                take(*held)
        except BaseException as error:  # re-raised by the caller's thread below
            with lock:
                failures.append(error)

    workers = [
        threading.Thread(target=work, name=f"replay-{n}", daemon=True)
        for n in range(max(1, min(concurrency, len(queries))))
    ]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        done.set()
        watcher.join()
    if failures:
        raise failures[0]
    report.stopped = report.reasons["cancelled"] > 0
    report.ended_ms = now_ms()
    if tripped is not None:
        report.aborted = tripped.reason
    publisher.end(
        lambda records: end_marker(
            replay_id,
            events=records,
            queries=report.queries,
            outcomes=report.outcomes,
            started_ms=report.started_ms,
            ended_ms=report.ended_ms,
            segment=segment,
            aborted=report.aborted,
            stopped=report.stopped,
        )
    )
    return report


def _take(
    report: ReplayReport,
    query: Query,
    answer: Answer,
    publisher: Publisher,
    segment: Mapping[str, str],
) -> None:
    """One query's answer into the report, and its record (none for a cancelled query)."""
    report.outcomes[answer.outcome] += 1
    if answer.outcome != "ranked":
        report.reasons[answer.reason] += 1
        if answer.sample and answer.reason not in report.samples:
            report.samples[answer.reason] = (query.query_id, answer.sample)
    else:
        report.rankings[query.query_id] = answer.ids
        if answer.scores is not None:
            report.scores[query.query_id] = answer.scores
    if answer.attempts:
        report.latencies_s.append(answer.latency_s)
    if answer.reason != "cancelled":
        # Every record of a replay carries its start as event time: the replay is one
        # measurement, in one window, however long it takes (monitor.windows.replay_ends).
        publisher.send(*query_event(report.replay_id, query, answer, segment, report.started_ms))


def _decreasing(scores: Sequence[float]) -> bool:
    """Whether the scores strictly decrease and are finite (trec_eval keeps their order)."""
    return all(math.isfinite(s) for s in scores) and all(
        a > b for a, b in itertools.pairwise(scores)
    )


def write_run(report: ReplayReport, path: Path) -> None:
    """The replay's rankings as a TREC run file (atomically: a reader never sees half).
    A ValueError names a query or document id a run file cannot hold (one with whitespace)."""
    lines = []
    for query_id in sorted(report.rankings):
        ranking = report.rankings[query_id]
        for name in (query_id, *ranking):
            if not name or len(name.split()) != 1 or name.strip() != name:
                raise ValueError(f"query {query_id}: {name!r} cannot be written in a TREC run")
        scores = report.scores.get(query_id)
        if scores is None or len(scores) != len(ranking) or not _decreasing(scores):
            scores = tuple(float(len(ranking) - i) for i in range(len(ranking)))
        for rank, (doc, score) in enumerate(zip(ranking, scores, strict=True), start=1):
            lines.append(f"{query_id} Q0 {doc} {rank} {score:.17g} {report.replay_id}\n")
    folder = path.resolve().parent
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.writelines(lines)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
