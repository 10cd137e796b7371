"""Intake: one poll's records -> decoded, scored events in their windows; rejects as data.

Every record ends in exactly one outcome of `monitor.events.Outcome`, counted on the exporter:
`invalid` (with its reason) and `unknown_query` are decided here, `late` and `duplicate` by
the windows, and each of those goes with its original bytes to the dead-letter topic. The
accepted events of a poll are scored together by the batch engine (one numpy pass per poll,
not per event) and handed to the windows as one `EventBatch`.

A record replayed after a restart into a window that was already published is neither
counted nor dead-lettered: the run that published the window counted it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from monitor.batch import BatchScorer
from monitor.consumer import SourceRecord
from monitor.events import EventDecoder, Outcome, RankingEvent, Rejection
from monitor.segments import SegmentLabeler
from monitor.summary import Segment
from monitor.windows import EventBatch, EventWindows

__all__ = ["Intake", "OutcomeCounter", "RejectSink"]


class RejectSink(Protocol):
    """Where rejected records go (the dead-letter topic)."""

    def reject(self, record: SourceRecord, outcome: str, reason: str = "") -> None: ...


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
    ) -> None:
        self.decoder = decoder
        self.inline_judgments = inline_judgments  # inline grades fill unjudged documents
        self.labeler = labeler
        self.windows = windows
        self.rejects = rejects
        self.counter = counter

    def process(self, records: Sequence[SourceRecord], scorer: BatchScorer, now_ms: int) -> None:
        """Take one poll's records (partition then offset order) to their outcomes."""
        accepted: list[tuple[SourceRecord, RankingEvent]] = []
        known = scorer.evaluation_set
        decoder = self.decoder
        for record in records:
            result = decoder(record.value, record.timestamp_ms, now_ms)
            if isinstance(result, Rejection):
                self._reject(record, Outcome.INVALID, result.reason.value)
            elif result.query_id not in known:
                self._reject(record, Outcome.UNKNOWN_QUERY)
            else:
                accepted.append((record, result))
        if accepted:
            self._window(accepted, scorer)

    def _reject(self, record: SourceRecord, outcome: Outcome, reason: str = "") -> None:
        self.rejects.reject(record, outcome.value, reason)
        self.counter.count_outcome(outcome.value, reason)
        # The windows never see this record: tell them, so the partition's safe offset can
        # move past it when no window is open there.
        self.windows.record_consumed(record.partition, record.offset)

    def _window(
        self, accepted: list[tuple[SourceRecord, RankingEvent]], scorer: BatchScorer
    ) -> None:
        events = [event for _, event in accepted]
        extra: list[Mapping[str, int] | None] | None = None
        if self.inline_judgments:
            extra = [event.judgments for event in events]
        measures = scorer.score([e.query_id for e in events], [e.ranking for e in events], extra)
        label = self.labeler.label
        segments: list[Segment] = [label(e.segment) for e in events]
        evaluation_set = scorer.evaluation_set
        batch = EventBatch(
            partitions=[record.partition for record, _ in accepted],
            offsets=[record.offset for record, _ in accepted],
            event_times_ms=[e.event_time_ms for e in events],
            event_ids=[e.event_id for e in events],
            query_ids=[e.query_id for e in events],
            segments=segments,
            measures=measures,
            evaluation_set_version=evaluation_set.version,
            evaluation_set_queries=len(evaluation_set),
        )
        admission = self.windows.add_batch(batch)
        for row in admission.late:
            self.rejects.reject(accepted[row][0], Outcome.LATE.value)
        for row in admission.duplicates:
            self.rejects.reject(accepted[row][0], Outcome.DUPLICATE.value)
        counter = self.counter
        if admission.accepted:
            counter.count_outcome(Outcome.ACCEPTED.value, amount=admission.accepted)
        if admission.late:
            counter.count_outcome(Outcome.LATE.value, amount=len(admission.late))
        if admission.duplicates:
            counter.count_outcome(Outcome.DUPLICATE.value, amount=len(admission.duplicates))
