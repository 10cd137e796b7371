"""Ingest: one poll's records through decoding, scoring and windowing, rejects as data.

Enters: `SourceRecord`s from `monitor.kafka`. Leaves: each record's one outcome, accepted
events in their windows (scored by `monitor.scoring`, windowed by `monitor.windows`), and
every other record with its reason to the dead-letter topic. The event schema (`schema`:
fields, limits, outcomes, reasons) is defined here once; the decoder (`events`) and the C
scanner are checked against it.
"""

from __future__ import annotations

from monitor.ingest.deadletter import DeadLetterSink
from monitor.ingest.events import EventDecoder, RankingEvent, Rejection
from monitor.ingest.intake import Intake
from monitor.ingest.schema import Outcome, Reason

__all__ = [
    "DeadLetterSink",
    "EventDecoder",
    "Intake",
    "Outcome",
    "RankingEvent",
    "Reason",
    "Rejection",
]
