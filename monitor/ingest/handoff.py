"""Handoff: what intake took from a poll, handed on to where each record's outcome goes.

`Handoff.deliver(taken)` sends each record `Intake.take` rejected to the dead-letter topic,
counts it, and tells the windows it was consumed (so a partition's safe offset can move past
it when no window is open there); then hands the scored events to the windows, which turn
away the `late` and the `duplicate` ones (dead-lettered and counted too) and count the rest
`accepted`, and keeps the ranking samples the explanations show. A replay's notice (a failed
query, the end of a replay: outcome `replay_notice`) is counted and consumed, never
dead-lettered: it is no bad input; a failed query's notice is then also handed to the
windows, which count it as the replay's failure (`WindowSummary.failed_queries`), and an end
marker's replay is noted in the windows' `ReplayEnds`. A notice past its limits (a replay id
past `events.max_id_bytes`, a time past `events.max_future` or its record timestamp plus
`windows.max_clock_skew`) is `invalid` like an event, and dead-lettered. What accepted events
say a judge reads of their documents goes to `documents` (the judging loop's shelf), if any.
Rejections go first, in record order, then the windows' verdicts, in row order: the order the
dead-letter topic sees.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import orjson

from monitor.ingest.events import DocumentFields, ReplayEnd
from monitor.ingest.intake import Taken
from monitor.ingest.schema import Outcome
from monitor.kafka.consumer import SourceRecord
from monitor.logs import fields
from monitor.windows.engine import EventWindows, ScoredEvents
from monitor.windows.samples import RankingSamples
from monitor.windows.scored import Admission, int_list

__all__ = ["DocumentKeeper", "Handoff", "OutcomeCounter", "RejectSink"]

_log = logging.getLogger(__name__)

_WARN_EVERY_S = 10.0


class RejectSink(Protocol):
    """Where rejected records go (the dead-letter topic)."""

    def reject(
        self, record: SourceRecord, outcome: str, reason: str = "", detail: str = ""
    ) -> None: ...


class OutcomeCounter(Protocol):
    """Where outcome counts go (the exporter's `rankmon_events_total`)."""

    def count_outcome(self, outcome: str, reason: str = "", amount: int = 1) -> None: ...


class DocumentKeeper(Protocol):
    """Where what events say of their documents goes (`monitor.judging.documents`)."""

    def keep(self, query_id: str, documents: Mapping[str, DocumentFields]) -> None: ...


class Handoff:
    """Hands each poll's `Taken` on: dead letters, counts, windows, samples."""

    def __init__(
        self,
        windows: EventWindows,
        rejects: RejectSink,
        counter: OutcomeCounter,
        samples: RankingSamples | None = None,
        documents: DocumentKeeper | None = None,
    ) -> None:
        self.windows = windows
        self.rejects = rejects
        self.counter = counter
        self.samples = samples  # one ranking per query, segment and pane (explanations)
        self.documents = documents
        self._warned_at = -_WARN_EVERY_S  # when a late replay was last logged (monotonic s)

    def deliver(self, taken: Taken) -> None:
        """Every record of the poll to its one outcome (the module docstring)."""
        for rejected in taken.rejected:
            record, outcome = rejected.record, rejected.outcome.value
            if rejected.outcome is not Outcome.REPLAY_NOTICE:  # a notice is no bad input
                self.rejects.reject(record, outcome, rejected.reason, rejected.detail)
            self.counter.count_outcome(outcome, rejected.reason)
            self.windows.record_consumed(record.partition, record.offset)
        for _, started in taken.started:
            self._start(started)
        replay_ends = self.windows.replay_ends
        for partition, ended in taken.ended:
            # Checked by the decoder: its id and labels within their byte limits, its start
            # no later than its record timestamp plus the clock skew.
            replay_ends.add(
                ended.replay_id,
                partition,
                replay_ends.start_of(ended.replay_id, ended.started_ms),
                ended.segment,
                stopped=ended.stopped,
            )
        if self.documents is not None:
            for query_id, documents in taken.documents:
                self.documents.keep(query_id, documents)
        if taken.scored is not None:
            self._admit(self._moved(taken.scored), taken.records)
        if taken.failed is not None:
            # A replay's failed queries: counted as notices above; the windows count them as
            # the replay's failures (a late or repeated one is dropped, it has no ranking).
            self.windows.add_events(self._moved(taken.failed))

    def _start(self, started: ReplayEnd) -> None:
        """A replay's start marker: it holds its windows open until it ends. One that starts
        in a window already closed (a manual replay after the scheduled one of its window
        ended) is moved to the first window still open, and the move is logged: its records
        would all be late."""
        replay_ends, watermark = self.windows.replay_ends, self.windows.watermark_ms
        if started.replay_id in replay_ends.moved():
            return
        if watermark is None or not replay_ends.closed(started.started_ms, watermark):
            replay_ends.started(started.replay_id, started.started_ms)
            return
        to_ms = self.windows.spec.first_open_start(watermark)
        replay_ends.retime(started.replay_id, to_ms)
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:  # a writer of markers cannot flood the log
            self._warned_at = now
            _log.warning(
                "a replay started in a window already closed: counted in the next one",
                extra=fields(
                    replay=started.replay_id,
                    started_ms=started.started_ms,
                    counted_at_ms=to_ms,
                    why="the window of its start closed when the replays in it ended; a "
                    "replay started while they run shares their window "
                    "(docs/operations.md, 'Several replayers')",
                ),
            )

    def _moved(self, scored: ScoredEvents) -> ScoredEvents:
        """The rows of replays moved out of a closed window, at the start they were moved to
        (their event ids are `<replay_id>/<query_id>`)."""
        moved = self.windows.replay_ends.moved()
        if not moved:
            return scored
        times = list(int_list(scored.event_times_ms))
        changed = False
        for row, event_id in enumerate(scored.event_ids):
            replay_id, slash, _ = event_id.partition("/")
            to_ms = moved.get(replay_id) if slash else None
            if to_ms is not None:
                times[row] = to_ms
                changed = True
        if not changed:
            return scored
        return dataclasses.replace(scored, event_times_ms=np.asarray(times, dtype=np.int64))

    def _admit(self, scored: ScoredEvents, records: Sequence[SourceRecord]) -> None:
        """Hand the scored events to the windows; send on and count what they turn away."""
        admission = self.windows.add_events(scored)
        if self.samples is not None:
            self._sample(scored, records, admission)
        for row in admission.late:
            self.rejects.reject(records[row], Outcome.LATE.value)
        for row in admission.duplicates:
            self.rejects.reject(records[row], Outcome.DUPLICATE.value)
        counter = self.counter
        if admission.accepted:
            counter.count_outcome(Outcome.ACCEPTED.value, amount=admission.accepted)
        if admission.late:
            counter.count_outcome(Outcome.LATE.value, amount=len(admission.late))
        if admission.duplicates:
            counter.count_outcome(Outcome.DUPLICATE.value, amount=len(admission.duplicates))

    def _sample(
        self, scored: ScoredEvents, records: Sequence[SourceRecord], admission: Admission
    ) -> None:
        """Keep the ranking of each accepted event whose pane has none of its query yet.

        Once a pane holds a ranking per query this is a dict lookup per event; the record's
        JSON is parsed again only for the first event of a (segment, query, pane)."""
        samples = self.samples
        assert samples is not None
        turned_away = {*admission.late, *admission.duplicates, *admission.already_published}
        segments, queries, times = scored.segments, scored.query_ids, scored.event_times_ms
        for row in range(len(queries)):
            key = samples.key(segments[row], queries[row], times[row])
            if key is None or row in turned_away:
                continue
            ranking = orjson.loads(records[row].value or b"{}").get("ranking")
            if isinstance(ranking, list):
                samples.keep(key, [str(doc) for doc in ranking])
