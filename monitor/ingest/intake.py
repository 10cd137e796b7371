"""Intake: one poll's records -> decoded, scored events and rejected records, as data.

`Intake.take` returns a `Taken`: the records it rejects (`invalid` with its reason, and
`unknown_query`), in record order, and the accepted events of the poll scored together by the
scorer (one pass per poll, not per event) as one `ScoredEvents`, with their records. It calls
no other stage: the loop hands a `Taken` on (`monitor.ingest.handoff.Handoff`: the dead
letters, the outcome counts, the windows, which decide `late` and `duplicate`, and the ranking
samples), so every record ends in exactly one outcome of `monitor.ingest.schema.Outcome`.

With the C accelerators (`monitor.native`) a poll's values are first scanned in C: the
common, clean event is decoded and turned into grade codes without a Python string per
document. Whatever the scanner is not sure of (every invalid record among them) is "punted"
to `monitor.ingest.events`, the reference decoder, which decides its outcome and reason. Both paths
give the same events, outcomes and numbers (tests/property/test_native_intake.py).

A record replayed after a restart into a window that was already published is neither
counted nor dead-lettered: the run that published the window counted it.

Each event is scored against the evaluation set of its epoch (`Windower.epochs`, by event
time): after a reload, events of windows that were open at the reload keep the old set. While
two epochs are live (about a window's length after a reload) a poll takes the reference path,
which decodes each event before it picks its evaluation set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import NamedTuple, TypeVar

import numpy as np

from monitor.ingest.events import (
    DocumentFields,
    EventDecoder,
    RankingEvent,
    Rejection,
    ReplayEnd,
)
from monitor.ingest.schema import Outcome, Reason
from monitor.kafka.consumer import SourceRecord
from monitor.native import DecodedEvents, speedups
from monitor.scoring.scorer import Scorer
from monitor.windows.engine import EventWindows, ScoredEvents
from monitor.windows.segments import SegmentLabeler
from monitor.windows.summary import Segment

__all__ = ["Intake", "Rejected", "Taken"]


class Rejected(NamedTuple):
    """A record intake turned away, and why."""

    record: SourceRecord
    outcome: Outcome
    reason: str = ""
    detail: str = ""


@dataclass
class Taken:
    """What intake made of one poll: the records it rejected, in record order, and the
    accepted events as one `ScoredEvents` whose row `i` is `records[i]`'s (None: none)."""

    rejected: list[Rejected] = field(default_factory=list)
    scored: ScoredEvents | None = None
    records: Sequence[SourceRecord] = ()
    # A replay's failed queries among `rejected` (its `failed_query` notices), as rows marked
    # failed for the windows to count (None: none).
    failed: ScoredEvents | None = None
    # The end-of-replay markers among `rejected`, checked, with the partition each came on.
    ended: list[tuple[int, ReplayEnd]] = field(default_factory=list)
    # The start-of-replay markers among `rejected`, checked, likewise.
    started: list[tuple[int, ReplayEnd]] = field(default_factory=list)
    # What accepted events say a judge reads of their documents: (query id, documents).
    documents: list[tuple[str, Mapping[str, DocumentFields]]] = field(default_factory=list)


class Intake:
    """Decodes, validates and scores the records of each poll.

    `windows` is read, never written: its epochs say which evaluation set scores an event."""

    def __init__(
        self,
        decoder: EventDecoder,
        labeler: SegmentLabeler,
        windows: EventWindows,
        *,
        inline_judgments: bool = False,
    ) -> None:
        self.decoder = decoder
        self.inline_judgments = inline_judgments  # inline grades fill unjudged documents
        self.labeler = labeler
        self.windows = windows
        # The C path reads the labeler's keys straight from the event; the decoder must not
        # drop any of them first (it never does when both come from one config).
        kept = decoder.segment_keys
        self._scannable = kept is None or kept.issuperset(labeler.keys)

    def take(
        self, records: Sequence[SourceRecord], scorers: Mapping[str, Scorer], now_ms: int
    ) -> Taken:
        """One poll's records (partition then offset order), decoded and scored.

        `scorers`: a scorer for each evaluation-set version an epoch of the windows uses."""
        taken = Taken()
        epochs = self.windows.windower.epochs
        if len(epochs) > 1:
            self._process_epochs(records, scorers, now_ms, taken)
        else:
            scorer = scorers[epochs[0].version]
            if scorer.judgment_index is None or not self._scannable:
                accepted = self._decode(records, scorer, now_ms, taken)
                if accepted:
                    self._window(accepted, [scorer] * len(accepted), taken)
            else:
                self._process_scanned(records, scorer, now_ms, taken)
        taken.failed = self._failed_queries(taken.rejected, scorers)
        taken.ended = [
            (item.record.partition, ended)
            for item in taken.rejected
            if item.reason == Reason.END_OF_REPLAY.value
            and (ended := self.decoder.replay_end(item.record.value, item.record.timestamp_ms))
        ]
        taken.started = [
            (item.record.partition, started)
            for item in taken.rejected
            if item.reason == Reason.START_OF_REPLAY.value
            and (
                started := self.decoder.replay_end(
                    item.record.value, item.record.timestamp_ms, start=True
                )
            )
        ]
        return taken

    def _failed_queries(
        self, rejected: list[Rejected], scorers: Mapping[str, Scorer]
    ) -> ScoredEvents | None:
        """The replay's failed queries among the notices, as rows the windows count as
        failures (no measures: NaN), in record order. One of a query no evaluation set in use
        has is `unknown_query`, as a ranking event of it is: each would hold a cell."""
        failed = []
        for index, item in enumerate(rejected):
            if item.reason != Reason.FAILED_QUERY.value:
                continue
            event = self.decoder.failed_query(item.record.value, item.record.timestamp_ms)
            if event is None:
                continue
            if not any(event.query_id in s.evaluation_set for s in scorers.values()):
                rejected[index] = Rejected(item.record, Outcome.UNKNOWN_QUERY)
                continue
            failed.append((item.record, event))
        if not failed:
            return None
        label = self.labeler.label
        return ScoredEvents(
            partitions=[record.partition for record, _ in failed],
            offsets=[record.offset for record, _ in failed],
            event_times_ms=[event.event_time_ms for _, event in failed],
            event_ids=[event.event_id for _, event in failed],
            query_ids=[event.query_id for _, event in failed],
            segments=[label(event.segment) for _, event in failed],
            measures=np.full((len(failed), len(self.windows.measure_keys)), np.nan),
            record_times_ms=[record.timestamp_ms for record, _ in failed],
            failed=np.ones(len(failed), dtype=np.bool_),
        )

    def _process_epochs(
        self,
        records: Sequence[SourceRecord],
        scorers: Mapping[str, Scorer],
        now_ms: int,
        taken: Taken,
    ) -> None:
        """The reference path, each event scored with its epoch's evaluation set."""
        epochs = self.windows.windower.epochs
        accepted: list[tuple[SourceRecord, RankingEvent]] = []
        chosen: list[Scorer] = []
        for record in records:
            result = self.decoder(record.value, record.timestamp_ms, now_ms)
            if isinstance(result, Rejection):
                rejected = Rejected(record, result.outcome, result.reason.value, result.detail)
                taken.rejected.append(rejected)
                continue
            scorer = scorers[epochs[self.windows.windower.epoch_of(result.event_time_ms)].version]
            if result.query_id not in scorer.evaluation_set:
                taken.rejected.append(Rejected(record, Outcome.UNKNOWN_QUERY))
                continue
            accepted.append((record, result))
            chosen.append(scorer)
            if result.documents:
                taken.documents.append((result.query_id, result.documents))
        if accepted:
            self._window(accepted, chosen, taken)

    def _decode(
        self, records: Sequence[SourceRecord], scorer: Scorer, now_ms: int, taken: Taken
    ) -> list[tuple[SourceRecord, RankingEvent]]:
        """The reference path: each record through `monitor.ingest.events`; rejects noted."""
        accepted: list[tuple[SourceRecord, RankingEvent]] = []
        for record in records:
            event = self._decode_one(record, scorer, now_ms, taken)
            if event is not None:
                accepted.append((record, event))
        return accepted

    def _decode_one(
        self, record: SourceRecord, scorer: Scorer, now_ms: int, taken: Taken
    ) -> RankingEvent | None:
        """One record through `monitor.ingest.events`: its event, or None once it is rejected."""
        result = self.decoder(record.value, record.timestamp_ms, now_ms)
        if isinstance(result, Rejection):
            taken.rejected.append(
                Rejected(record, result.outcome, result.reason.value, result.detail)
            )
            return None
        if result.query_id not in scorer.evaluation_set:
            taken.rejected.append(Rejected(record, Outcome.UNKNOWN_QUERY))
            return None
        if result.documents:
            taken.documents.append((result.query_id, result.documents))
        return result

    def _process_scanned(
        self, records: Sequence[SourceRecord], scorer: Scorer, now_ms: int, taken: Taken
    ) -> None:
        """The C path: scan every value, punt the doubtful ones to the reference path."""
        index = scorer.judgment_index
        assert index is not None
        decoder = self.decoder
        depth = scorer.lookup_depth
        timestamps = [record.timestamp_ms for record in records]

        def scan() -> DecodedEvents:
            scanned = speedups.decode_events(
                index,
                [record.value for record in records],
                timestamps,
                now_ms=now_ms,
                max_depth=decoder.max_depth,
                max_bytes=decoder.max_bytes,
                max_future_ms=decoder.max_future_ms,
                segment_keys=self.labeler.keys,
                use_event_time=decoder.use_event_time,
                depth=-1 if depth is None else depth,
                grade_codes=scorer.inline_grade_codes if self.inline_judgments else None,
                max_id_bytes=decoder.max_id_bytes,
                max_value_bytes=decoder.max_value_bytes,
            )
            return DecodedEvents(*scanned)

        try:
            decoded = scan()
        except OverflowError:
            # A crafted record batch's timestamp past int64 (kafka-python reads it as a big
            # int): no timestamp for the scanner, which leaves such records to the reference
            # decoder; it rejects them (too far in the future, or no event time).
            timestamps = [t if _INT64_MIN <= t <= _INT64_MAX else -1 for t in timestamps]
            decoded = scan()
        accepted, unknown_query = speedups.SCAN_ACCEPTED, speedups.SCAN_UNKNOWN_QUERY
        if records and decoded.status.count(accepted) == len(records):  # most polls: all in C
            self._window_scanned(list(records), decoded, [], [], scorer, taken=taken)
            return
        scanned: list[SourceRecord] = []
        slow: list[tuple[SourceRecord, RankingEvent]] = []
        punted: list[bool] = []  # per accepted record, in record order: from `slow`?
        for record, state in zip(records, decoded.status, strict=True):
            if state == accepted:
                punted.append(False)
                scanned.append(record)
            elif state == unknown_query:
                taken.rejected.append(Rejected(record, Outcome.UNKNOWN_QUERY))
            else:  # punted: the reference decoder decides, rejects keep record order
                event = self._decode_one(record, scorer, now_ms, taken)
                if event is not None:
                    punted.append(True)
                    slow.append((record, event))
        if scanned or slow:
            self._window_scanned(scanned, decoded, slow, punted, scorer, taken=taken)

    def _window_scanned(
        self,
        scanned: list[SourceRecord],
        decoded: DecodedEvents,
        slow: list[tuple[SourceRecord, RankingEvent]],
        punted: list[bool],
        scorer: Scorer,
        *,
        taken: Taken,
    ) -> None:
        event_ids, query_ids, times = decoded.event_ids, decoded.query_ids, decoded.times_ms
        segments = decoded.segments
        measures = scorer.score_coded(
            decoded.rows, decoded.codes, decoded.lengths, decoded.added, decoded.added_counts
        )
        records = scanned
        if slow:
            # Merge the punted events back in: the windows see a poll in record order.
            events = [event for _, event in slow]
            extra: list[Mapping[str, int] | None] | None = None
            if self.inline_judgments:
                extra = [event.judgments for event in events]
            slow_measures = scorer.score(
                [e.query_id for e in events], [e.ranking for e in events], extra
            )
            order = _arrival_order(punted, len(scanned))
            records = _merged(scanned, [record for record, _ in slow], order)
            event_ids = _merged(event_ids, [e.event_id for e in events], order)
            query_ids = _merged(query_ids, [e.query_id for e in events], order)
            times = _merged(times, [e.event_time_ms for e in events], order)
            values_of = self.labeler.values_of
            segments = _merged(segments, [values_of(e.segment) for e in events], order)
            measures = np.concatenate([measures, slow_measures])[order]
        label = self.labeler.raw
        scored = ScoredEvents(
            partitions=[record.partition for record in records],
            offsets=[record.offset for record in records],
            event_times_ms=times,
            event_ids=event_ids,
            query_ids=query_ids,
            segments=[label(values) for values in segments],
            measures=measures,
            record_times_ms=[record.timestamp_ms for record in records],
        )
        taken.scored, taken.records = scored, records

    def _window(
        self,
        accepted: list[tuple[SourceRecord, RankingEvent]],
        scorers: Sequence[Scorer],
        taken: Taken,
    ) -> None:
        """Score the decoded events (event `i` with `scorers[i]`) into `taken`."""
        events = [event for _, event in accepted]
        measures = np.empty((len(events), len(self.windows.measure_keys)))
        for scorer in {id(s): s for s in scorers}.values():
            rows = [i for i, s in enumerate(scorers) if s is scorer]
            chosen = [events[i] for i in rows]
            extra: list[Mapping[str, int] | None] | None = None
            if self.inline_judgments:
                extra = [event.judgments for event in chosen]
            measures[rows] = scorer.score(
                [e.query_id for e in chosen], [e.ranking for e in chosen], extra
            )
        label = self.labeler.label
        segments: list[Segment] = [label(e.segment) for e in events]
        scored = ScoredEvents(
            partitions=[record.partition for record, _ in accepted],
            offsets=[record.offset for record, _ in accepted],
            event_times_ms=[e.event_time_ms for e in events],
            event_ids=[e.event_id for e in events],
            query_ids=[e.query_id for e in events],
            segments=segments,
            measures=measures,
            record_times_ms=[record.timestamp_ms for record, _ in accepted],
        )
        taken.scored, taken.records = scored, [record for record, _ in accepted]


_T = TypeVar("_T")

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _arrival_order(punted: Sequence[bool], scanned: int) -> list[int]:
    """Where each accepted record, in record order, sits in `scanned + slow` concatenated."""
    order, next_scanned, next_slow = [], 0, scanned
    for from_slow in punted:
        if from_slow:
            order.append(next_slow)
            next_slow += 1
        else:
            order.append(next_scanned)
            next_scanned += 1
    return order


def _merged(first: Sequence[_T], second: Sequence[_T], order: Sequence[int]) -> list[_T]:
    both = list(chain(first, second))
    return [both[row] for row in order]
