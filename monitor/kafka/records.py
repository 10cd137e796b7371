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
kafka-python's reader does (tests/real_parts/test_kafka_records.py checks them against each other).

This reaches into kafka-python's internals (`Fetcher.PartitionRecords`, a batch's `_buffer` and
`_pos`), so it is used only with the kafka-python versions it was tested against, only for a
consumer without deserializers that reads uncommitted (rankmon's), and only when the C module
is active (RANKMON_SPEEDUPS). Otherwise the consumer keeps the stock reader and returns
ConsumerRecords, which `EventSource` converts.

Either reader is wrapped by `install_reader` so that a batch that cannot be read never stops
the consumer. In kafka-python 3.0.12 a `PartitionRecords` whose `take()` raised (a codec
library missing, a corrupt batch) stays in the fetcher undrained and every later `take()`
returns nothing: `fetched_records` loops on it for ever and `poll()` never returns. The
wrapper catches what `take()` raises, reports the partition and the offset it stopped at as
an `UnreadableBatch`, and drains the records, so kafka-python moves on to the other
partitions; the position stays at the unreadable batch, nothing after it is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import dropwhile
from typing import Any, ClassVar, Final, NamedTuple

import kafka
from kafka import KafkaConsumer
from kafka.consumer.fetcher import Fetcher
from kafka.errors import CorruptRecordError
from kafka.protocol.consumer import IsolationLevel
from kafka.record.default_records import DefaultRecordBatch

from monitor.native import speedups, speedups_active

__all__ = ["SourceRecord", "UnreadableBatch", "install_reader", "read_records_in_c"]

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


class UnreadableBatch(NamedTuple):
    """A partition's records could not be read from `offset` on: `error` says why."""

    partition: int
    offset: int
    error: str


def install_reader(consumer: KafkaConsumer, report: Callable[[UnreadableBatch], None]) -> str:
    """Give `consumer` a reader that reports unreadable batches to `report` instead of hanging.

    Returns which reader reads the records: "c" (SourceRecords read in C), "python"
    (kafka-python's reader, guarded) or "unguarded" (a kafka-python version whose internals
    were not tested: nothing is changed).
    """
    fetcher = _tested_fetcher(consumer)
    if fetcher is None:
        return "unguarded"
    base = FastPartitionRecords if _c_reader_safe(fetcher) else Fetcher.PartitionRecords
    # A class per consumer, as an instance attribute: kafka-python's class stays as it is.
    fetcher.PartitionRecords = type(
        f"Guarded{base.__name__}", (_Guarded, base), {"report": staticmethod(report)}
    )
    return "c" if base is FastPartitionRecords else "python"


def read_records_in_c(consumer: KafkaConsumer) -> bool:
    """Make `consumer` hand out SourceRecords read in C; False (and nothing changed) if not safe."""
    fetcher = _tested_fetcher(consumer)
    if fetcher is None or not _c_reader_safe(fetcher):
        return False
    fetcher.PartitionRecords = FastPartitionRecords
    return True


def _tested_fetcher(consumer: KafkaConsumer) -> Fetcher | None:
    fetcher = getattr(consumer, "_fetcher", None)
    if kafka.__version__ not in TESTED_KAFKA_PYTHON or not isinstance(fetcher, Fetcher):
        return None
    return fetcher


def _c_reader_safe(fetcher: Fetcher) -> bool:
    config = fetcher.config
    if not speedups_active() or config.get("key_deserializer") or config.get("value_deserializer"):
        return False
    return bool(getattr(fetcher, "_isolation_level", None) == IsolationLevel.READ_UNCOMMITTED)


class _Guarded(Fetcher.PartitionRecords):  # type: ignore[misc]
    """A reader whose `take()` reports what it cannot read and drains, instead of raising.

    The records handed out before the failure still come first (both readers return them
    and raise at the next `take()`); the report names the offset after the last of them.
    """

    report: ClassVar[Callable[[UnreadableBatch], None]]

    def take(self, n: int | None = None) -> list[Any]:
        try:
            records: list[Any] = super().take(n)
        except Exception as error:  # whatever the batch makes the reader raise
            where = UnreadableBatch(
                self.topic_partition.partition, self.next_fetch_offset, _describe(error)
            )
            self.drain()
            type(self).report(where)
            return []
        return records


def _describe(error: Exception) -> str:
    text = str(error) or type(error).__name__
    name = type(error).__name__
    return text if text.startswith(name) else f"{name}: {text}"


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
                kept = list(dropwhile(self._maybe_skip_record, records))
                if not kept:  # as kafka-python: each record read moves the position, skipped too
                    self.next_fetch_offset = records[-1].offset + 1
                records, self._skipping = kept, not kept
            if not records and self._corrupt is not None:
                raise self._corrupt  # nothing to hand out before it: it comes now
            self._ready = records
        return True

    def _read_v2(self, batch: DefaultRecordBatch) -> list[SourceRecord]:
        iter(batch)  # decompresses the batch's records in place
        records, corrupt = speedups.parse_records(
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
