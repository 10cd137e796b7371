"""Kafka in and out: the first stage of the data flow and the last writes.

Enters: the broker's fetched record batches (any codec), the group's assignments.
Leaves: `Poll`s of `SourceRecord`s (read in C from the fetched batches where that is safe),
committed offsets, and a `RecordProducer` the later stages write dead letters and window
shares through. Also the reachability of the cluster (`bootstrap`, `reachability`).
"""

from __future__ import annotations

from monitor.kafka.consumer import EventSource, EventStream, Poll, SourceRecord, UnreadableBatch
from monitor.kafka.producer import KafkaUnavailableError, RecordProducer, RecordSink

__all__ = [
    "EventSource",
    "EventStream",
    "KafkaUnavailableError",
    "Poll",
    "RecordProducer",
    "RecordSink",
    "SourceRecord",
    "UnreadableBatch",
]
