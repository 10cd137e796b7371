"""Records as rankmon consumes them, and a faster reader of fetched record batches.

`SourceRecord` is what the service needs of a Kafka record. kafka-python 3 reads every record
of a fetched batch in Python (a varint loop per field, a record object and a ConsumerRecord
each): for 3 KB ranking events that is ~8 us a record, more than rankmon spends on scoring
and windowing it. `read_records_in_c(consumer)` gives one KafkaConsumer's fetcher a
`PartitionRecords` whose v2 batches are read by `monitor._speedups.parse_records`, straight
into SourceRecords (about 0.5 us a record).

Only the reading of records changes. kafka-python still fetches, checks each batch's CRC,
decompresses it, skips control batches, reads legacy (v0/v1) batches with its own reader, and
tracks positions from what `take()` hands out. Records below the fetch offset (the head of a
compressed batch fetched mid-way) are skipped, records before a corrupt one are handed out
before the CorruptRecordError, and after it the partition yields nothing more: all as
kafka-python's reader does (tests/test_kafka_records.py checks them against each other).

This reaches into kafka-python's internals (`Fetcher.PartitionRecords`, a batch's `_buffer` and
`_pos`), so it is used only with the kafka-python versions it was tested against, only for a
consumer without deserializers that reads uncommitted (rankmon's), and only when the C module
is active (RANKMON_SPEEDUPS). Otherwise the consumer keeps the stock reader and returns
ConsumerRecords, which `EventSource` converts.
"""

from __future__ import annotations

from itertools import dropwhile
from typing import Any, Final, NamedTuple

import kafka
from kafka import KafkaConsumer
from kafka.consumer.fetcher import Fetcher
from kafka.errors import CorruptRecordError
from kafka.protocol.consumer import IsolationLevel
from kafka.record.default_records import DefaultRecordBatch

from monitor.native import parse_records, speedups_active

__all__ = ["SourceRecord", "read_records_in_c"]

# The kafka-python versions whose fetcher internals FastPartitionRecords was tested against.
TESTED_KAFKA_PYTHON: Final = frozenset({"3.0.12"})


class SourceRecord(NamedTuple):
    """One Kafka record as consumed: where it sits, when it was written, its raw bytes.

    A named tuple rather than a frozen dataclass: one is built per record on the hot path,
    and a tuple builds several times faster. A null value (a tombstone) is b"".
    """

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes


def read_records_in_c(consumer: KafkaConsumer) -> bool:
    """Make `consumer` hand out SourceRecords read in C; False (and nothing changed) if not safe."""
    if not speedups_active() or kafka.__version__ not in TESTED_KAFKA_PYTHON:
        return False
    fetcher = getattr(consumer, "_fetcher", None)
    if not isinstance(fetcher, Fetcher):
        return False
    config = fetcher.config
    if config.get("key_deserializer") or config.get("value_deserializer"):
        return False
    if getattr(fetcher, "_isolation_level", None) != IsolationLevel.READ_UNCOMMITTED:
        return False
    # An instance attribute: this consumer only, kafka-python's class stays as it is.
    fetcher.PartitionRecords = FastPartitionRecords
    return True


class FastPartitionRecords(Fetcher.PartitionRecords):  # type: ignore[misc]
    """kafka-python's fetched records of one partition, read a batch at a time in C."""

    def __init__(self, fetch_offset: int, tp: Any, records: Any, **options: Any) -> None:
        super().__init__(fetch_offset, tp, records, **options)
        self._batches = records
        self._topic: str = tp.topic
        self._partition: int = tp.partition
        self._ready: list[SourceRecord] = []  # read, not taken yet
        self._taken_upto = 0
        self._last_batch: Any = None
        self._corrupt: CorruptRecordError | None = None  # found after the records in _ready
        self._failed = False  # a CorruptRecordError was raised: nothing more is read
        self._skipping = True  # until a record at or past fetch_offset

    def take(self, n: int | None = None) -> list[SourceRecord]:
        self._maybe_raise_next_inline_exception()
        taken: list[SourceRecord] = []
        while self.record_iterator is not None and not self._failed:
            if n is not None and len(taken) >= n:
                break
            if self._taken_upto == len(self._ready):
                try:
                    if not self._read_next_batch():
                        break  # drained
                except Exception as error:  # as kafka-python: hand out what came before
                    self._failed = True
                    if not taken:
                        raise
                    self._next_inline_exception = error  # raised by the next take()
                    break
                continue
            end = len(self._ready) if n is None else self._taken_upto + n - len(taken)
            chunk = self._ready[self._taken_upto : end]
            self._taken_upto += len(chunk)
            taken += chunk
            self.next_fetch_offset = chunk[-1].offset + 1
        return taken

    def _read_next_batch(self) -> bool:
        """Reads batches until one has records to hand out; False once all are read."""
        if self._corrupt is not None:
            raise self._corrupt
        self._ready, self._taken_upto = [], 0
        while not self._ready:
            batch = self._batches.next_batch()
            if batch is None:
                last = self._last_batch
                if last is not None and last.magic == 2:
                    # v2 keeps the last offset of a compacted batch: fetch past it
                    self.next_fetch_offset = last.next_offset
                self.drain()
                return False
            self._last_batch = batch
            if self.check_crcs and not batch.validate_crc():
                raise CorruptRecordError(
                    f"Record batch for partition {self.topic_partition} at offset "
                    f"{batch.base_offset} failed crc check"
                )
            if batch.magic == 2:
                self.leader_epoch = batch.leader_epoch
                if batch.is_control_batch:  # transaction markers are not records
                    self.next_fetch_offset = batch.next_offset
                    continue
                records = self._read_v2(batch)
            else:
                records = self._read_legacy(batch)
            if records:  # counted per batch; kafka-python only checks bytes_read > 0
                self.records_read += len(records)
                self.bytes_read += batch.size_in_bytes
            if self._skipping and records:
                records = list(dropwhile(self._maybe_skip_record, records))
                self._skipping = not records
            self._ready = records
        return True

    def _read_v2(self, batch: DefaultRecordBatch) -> list[SourceRecord]:
        iter(batch)  # decompresses the batch's records in place
        records, corrupt = parse_records(
            batch._buffer,
            pos=batch._pos,
            count=batch.records_count,
            base_offset=batch.base_offset,
            first_timestamp=batch.first_timestamp,
            max_timestamp=batch.max_timestamp,
            log_append_time=batch.timestamp_type == DefaultRecordBatch.LOG_APPEND_TIME,
            topic=self._topic,
            partition=self._partition,
            record_type=SourceRecord,
        )
        if corrupt is not None:
            self._corrupt = CorruptRecordError(
                f"Found invalid record structure in partition {self.topic_partition} "
                f"batch at offset {batch.base_offset}: {corrupt}"
            )
            if not records:
                raise self._corrupt
        return records

    def _read_legacy(self, batch: Any) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        try:
            for record in batch:
                if self.check_crcs and not record.validate_crc():
                    raise CorruptRecordError(
                        f"Record for partition {self.topic_partition} at offset "
                        f"{record.offset} failed crc check"
                    )
                value = b"" if record.value is None else record.value
                records.append(
                    SourceRecord(
                        self._topic,
                        self._partition,
                        record.offset,
                        record.timestamp,
                        record.key,
                        value,
                    )
                )
        except CorruptRecordError as error:
            if not records:
                raise
            self._corrupt = error
        return records
