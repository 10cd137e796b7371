"""`DeadLetterSink`: rejected records, byte for byte, to the dead-letter topic.

The dead-letter record keeps the original key and value unchanged (even when they are not
UTF-8 or not JSON) and says why in its headers:

| header | value |
|---|---|
| `rankmon-outcome` | the `rankmon_events_total` outcome: invalid, unknown_query, duplicate, late |
| `rankmon-reason` | the reason within the outcome, e.g. `invalid_json` (may be empty) |
| `rankmon-detail` | on an invalid record: what is wrong, one line of at most 400 characters |
| `rankmon-source-topic` | the topic the record was read from |
| `rankmon-source-partition` | its partition, decimal |
| `rankmon-source-offset` | its offset, decimal |
| `rankmon-source-timestamp` | its record timestamp, epoch milliseconds, decimal |
| `rankmon-original-size` | only on a truncated record: the original value's size in bytes |

A refused control record (docs/operations.md's trust table) has for outcome its kind instead:
`judgment`, `tojudge` (a pair on the to-judge topic), `windows` (a progress record).

A record too large for a Kafka request (the 1 MiB default `max.message.bytes`; a producer can
write larger ones to a topic configured for them) keeps its first `max_record_bytes` bytes,
so that one oversized event never blocks the dead-letter topic, and with it the commits.

Sends are asynchronous: `flush()` before committing offsets past the rejected records.
"""

from __future__ import annotations

from monitor.errors import one_line
from monitor.kafka.consumer import SourceRecord
from monitor.kafka.producer import RecordSink

__all__ = ["DeadLetterSink", "dead_letter_headers"]

# Under kafka-python's 1 MiB max_request_size, with room for the headers and batch overhead.
MAX_RECORD_BYTES = 1_000_000


def dead_letter_headers(record: SourceRecord, outcome: str, reason: str) -> list[tuple[str, bytes]]:
    """The headers that say where a rejected record came from and why it was rejected."""
    return [
        ("rankmon-outcome", outcome.encode()),
        ("rankmon-reason", reason.encode()),
        ("rankmon-source-topic", record.topic.encode()),
        ("rankmon-source-partition", str(record.partition).encode()),
        ("rankmon-source-offset", str(record.offset).encode()),
        ("rankmon-source-timestamp", str(record.timestamp_ms).encode()),
    ]


class DeadLetterSink:
    """Sends rejected records to `topic` through a shared `RecordProducer`."""

    def __init__(
        self, producer: RecordSink, topic: str, max_record_bytes: int = MAX_RECORD_BYTES
    ) -> None:
        self.producer = producer
        self.topic = topic
        self.max_record_bytes = max_record_bytes

    def reject(
        self, record: SourceRecord, outcome: str, reason: str = "", detail: str = ""
    ) -> None:
        """Queue the record's original key and value with the reason headers; never raises."""
        headers = dead_letter_headers(record, outcome, reason)
        if detail:
            headers.append(("rankmon-detail", one_line(detail).encode()))
        key = record.key[: self.max_record_bytes // 2] if record.key is not None else None
        room = self.max_record_bytes - len(key or b"")
        value = record.value
        if len(value) > room:
            headers.append(("rankmon-original-size", str(len(value)).encode()))
            value = value[:room]
        self.producer.send(self.topic, key, value, headers)

    def flush(self) -> None:
        """Wait until every queued record is acknowledged (`KafkaUnavailableError` if not)."""
        self.producer.flush()
