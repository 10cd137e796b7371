"""Intake: one poll's records -> decoded, scored events in their windows; rejects as data.

Every record ends in exactly one outcome of `monitor.ingest.events.Outcome`, counted on the
exporter:
`invalid` (with its reason) and `unknown_query` are decided here, `late` and `duplicate` by
the windows, and each of those goes with its original bytes to the dead-letter topic. The
accepted events of a poll are scored together by the batch engine (one numpy pass per poll,
not per event) and handed to the windows as one `ScoredEvents`.

With the C accelerators (`monitor.native`) a poll's values are first scanned in C: the
common, clean event is decoded and turned into grade codes without a Python string per
document. Whatever the scanner is not sure of (every invalid record among them) is "punted"
to `monitor.ingest.events`, the reference decoder, which decides its outcome and reason. Both paths
give the same events, outcomes and numbers (tests/property/test_native_intake.py).

A record replayed after a restart into a window that was already published is neither
counted nor dead-lettered: the run that published the window counted it.

Each event is scored against the evaluation set of its epoch (`EventWindows.epochs`, by event
time): after a reload, events of windows that were open at the reload keep the old set. While
two epochs are live (about a window's length after a reload) a poll takes the reference path,
which decodes each event before it picks its evaluation set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Protocol, TypeVar

import numpy as np
import orjson

from monitor.ingest.events import EventDecoder, RankingEvent, Rejection
from monitor.ingest.schema import Outcome
from monitor.kafka.consumer import SourceRecord
from monitor.native import DecodedEvents, speedups
from monitor.scoring.scorer import Scorer
from monitor.windows.engine import EventWindows, ScoredEvents
from monitor.windows.samples import RankingSamples
from monitor.windows.scored import Admission
from monitor.windows.segments import SegmentLabeler
from monitor.windows.summary import Segment

__all__ = ["Intake", "OutcomeCounter", "RejectSink"]


class RejectSink(Protocol):
    """Where rejected records go (the dead-letter topic)."""

    def reject(
        self, record: SourceRecord, outcome: str, reason: str = "", detail: str = ""
    ) -> None: ...


class OutcomeCounter(Protocol):
    """Counts records by outcome and reason (`rankmon_events_total`)."""

    def count_outcome(self, outcome: str, reason: str = "", amount: int = 1) -> None: ...


class Intake:
    """Decodes, validates, scores and windows the records of each poll."""

    def __init__(
        self,
        decoder: EventDecoder,
        labeler: SegmentLabeler,
        windows: EventWindows,
        rejects: RejectSink,
        counter: OutcomeCounter,
        *,
        inline_judgments: bool = False,
        samples: RankingSamples | None = None,
    ) -> None:
        self.decoder = decoder
        self.samples = samples  # one ranking per query, segment and pane (explanations)
        self.inline_judgments = inline_judgments  # inline grades fill unjudged documents
        self.labeler = labeler
        self.windows = windows
        self.rejects = rejects
        self.counter = counter
        # The C path reads the labeler's keys straight from the event; the decoder must not
        # drop any of them first (it never does when both come from one config).
        kept = decoder.segment_keys
        self._scannable = kept is None or kept.issuperset(labeler.keys)

    def process(
        self, records: Sequence[SourceRecord], scorers: Mapping[str, Scorer], now_ms: int
    ) -> None:
        """Take one poll's records (partition then offset order) to their outcomes.

        `scorers`: a scorer for each evaluation-set version an epoch of the windows uses."""
        epochs = self.windows.epochs
        if len(epochs) > 1:
            self._process_epochs(records, scorers, now_ms)
            return
        scorer = scorers[epochs[0].version]
        if scorer.judgment_index is None or not self._scannable:
            accepted = self._decode(records, scorer, now_ms)
            if accepted:
                self._window(accepted, [scorer] * len(accepted))
            return
        self._process_scanned(records, scorer, now_ms)

    def _process_epochs(
        self, records: Sequence[SourceRecord], scorers: Mapping[str, Scorer], now_ms: int
    ) -> None:
        """The reference path, each event scored with its epoch's evaluation set."""
        epochs = self.windows.epochs
        accepted: list[tuple[SourceRecord, RankingEvent]] = []
        chosen: list[Scorer] = []
        for record in records:
            result = self.decoder(record.value, record.timestamp_ms, now_ms)
            if isinstance(result, Rejection):
                self._reject(record, Outcome.INVALID, result.reason.value, result.detail)
                continue
            scorer = scorers[epochs[self.windows.epoch_of(result.event_time_ms)].version]
            if result.query_id not in scorer.evaluation_set:
                self._reject(record, Outcome.UNKNOWN_QUERY)
                continue
            accepted.append((record, result))
            chosen.append(scorer)
        if accepted:
            self._window(accepted, chosen)

    def _decode(
        self, records: Sequence[SourceRecord], scorer: Scorer, now_ms: int
    ) -> list[tuple[SourceRecord, RankingEvent]]:
        """The reference path: each record through `monitor.ingest.events`; rejects sent on."""
        accepted: list[tuple[SourceRecord, RankingEvent]] = []
        for record in records:
            event = self._decode_one(record, scorer, now_ms)
            if event is not None:
                accepted.append((record, event))
        return accepted

    def _decode_one(self, record: SourceRecord, scorer: Scorer, now_ms: int) -> RankingEvent | None:
        """One record through `monitor.ingest.events`: its event, or None once it is rejected."""
        result = self.decoder(record.value, record.timestamp_ms, now_ms)
        if isinstance(result, Rejection):
            self._reject(record, Outcome.INVALID, result.reason.value, result.detail)
            return None
        if result.query_id not in scorer.evaluation_set:
            self._reject(record, Outcome.UNKNOWN_QUERY)
            return None
        return result

    def _process_scanned(
        self, records: Sequence[SourceRecord], scorer: Scorer, now_ms: int
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
            # A crafted batch's record timestamp past int64 (kafka-python reads it as a big
            # int): no timestamp for the scanner, which leaves such records to the reference
            # decoder; it rejects them (too far in the future, or no event time).
            timestamps = [t if _INT64_MIN <= t <= _INT64_MAX else -1 for t in timestamps]
            decoded = scan()
        accepted, unknown_query = speedups.SCAN_ACCEPTED, speedups.SCAN_UNKNOWN_QUERY
        if records and decoded.status.count(accepted) == len(records):  # most polls: all in C
            self._window_scanned(list(records), decoded, [], [], scorer)
            return
        scanned: list[SourceRecord] = []
        slow: list[tuple[SourceRecord, RankingEvent]] = []
        punted: list[bool] = []  # per accepted record, in record order: from `slow`?
        for record, state in zip(records, decoded.status, strict=True):
            if state == accepted:
                punted.append(False)
                scanned.append(record)
            elif state == unknown_query:
                self._reject(record, Outcome.UNKNOWN_QUERY)
            else:  # punted: the reference decoder decides, rejects keep record order
                event = self._decode_one(record, scorer, now_ms)
                if event is not None:
                    punted.append(True)
                    slow.append((record, event))
        if scanned or slow:
            self._window_scanned(scanned, decoded, slow, punted, scorer)

    def _window_scanned(
        self,
        scanned: list[SourceRecord],
        decoded: DecodedEvents,
        slow: list[tuple[SourceRecord, RankingEvent]],
        punted: list[bool],
        scorer: Scorer,
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
        batch = ScoredEvents(
            partitions=[record.partition for record in records],
            offsets=[record.offset for record in records],
            event_times_ms=times,
            event_ids=event_ids,
            query_ids=query_ids,
            segments=[label(values) for values in segments],
            measures=measures,
            record_times_ms=[record.timestamp_ms for record in records],
        )
        self._admit(batch, records)

    def _reject(
        self, record: SourceRecord, outcome: Outcome, reason: str = "", detail: str = ""
    ) -> None:
        self.rejects.reject(record, outcome.value, reason, detail)
        self.counter.count_outcome(outcome.value, reason)
        # The windows never see this record: tell them, so the partition's safe offset can
        # move past it when no window is open there.
        self.windows.record_consumed(record.partition, record.offset)

    def _window(
        self, accepted: list[tuple[SourceRecord, RankingEvent]], scorers: Sequence[Scorer]
    ) -> None:
        """Score the decoded events (event `i` with `scorers[i]`) and window them."""
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
        batch = ScoredEvents(
            partitions=[record.partition for record, _ in accepted],
            offsets=[record.offset for record, _ in accepted],
            event_times_ms=[e.event_time_ms for e in events],
            event_ids=[e.event_id for e in events],
            query_ids=[e.query_id for e in events],
            segments=segments,
            measures=measures,
            record_times_ms=[record.timestamp_ms for record, _ in accepted],
        )
        self._admit(batch, [record for record, _ in accepted])

    def _admit(self, batch: ScoredEvents, records: Sequence[SourceRecord]) -> None:
        """Hand the batch to the windows; send on and count what they turn away."""
        admission = self.windows.add_events(batch)
        if self.samples is not None:
            self._sample(batch, records, admission)
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
        self, batch: ScoredEvents, records: Sequence[SourceRecord], admission: Admission
    ) -> None:
        """Keep the ranking of each accepted event whose pane has none of its query yet.

        Once a pane holds a ranking per query this is a dict lookup per event; the record's
        JSON is parsed again only for the first event of a (segment, query, pane)."""
        samples = self.samples
        assert samples is not None
        turned_away = {*admission.late, *admission.duplicates, *admission.already_published}
        segments, queries, times = batch.segments, batch.query_ids, batch.event_times_ms
        for row in range(len(queries)):
            key = samples.key(segments[row], queries[row], times[row])
            if key is None or row in turned_away:
                continue
            ranking = orjson.loads(records[row].value or b"{}").get("ranking")
            if isinstance(ranking, list):
                samples.keep(key, [str(doc) for doc in ranking])


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
