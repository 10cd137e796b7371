"""The C reader of fetched record batches hands out what kafka-python's own reader does.

`FastPartitionRecords` (monitor/kafka/records.py) replaces kafka-python's per-record Python
reader for rankmon's consumer. These tests take the same fetched bytes through both readers,
`take()` by `take()`, and compare what a consumer sees: the records (as SourceRecords), the
fetch position and leader epoch after each take, when the partition is drained, and where a
CorruptRecordError is raised. Then the same against the real broker, through EventSource.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

import kafka
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.fetcher import Fetcher
from kafka.errors import CorruptRecordError
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from kafka.record.util import calc_crc32c
from kafka.serializer import Deserializer

from monitor.demo.broker import EmbeddedBroker
from monitor.kafka.consumer import _RECORD_FIELDS, EventSource, _source_record
from monitor.kafka.records import FastPartitionRecords, SourceRecord, read_records_in_c
from monitor.native import speedups_built
from tests.support.native_guard import require_speedups, speedups_switched_on  # noqa: F401

TP = TopicPartition("events", 3)
GZIP, LZ4 = 1, 3
# A v2 batch header: base offset (8), length (4), leader epoch (4), magic (1), crc (4), then
# attributes (2), which the crc covers to the end.
CRC_AT, ATTRIBUTES_AT, RECORDS_AT = 17, 21, 61
FIRST_TIMESTAMP_AT = 27  # v2 batch header: firstTimestamp (int64)

Step = tuple[Any, ...]

require_speedups()


def batch_bytes(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    *,
    base_offset: int,
    magic: int = 2,
    compression: int = 0,
    timestamp: int = 1_767_225_600_000,
) -> bytes:
    builder = MemoryRecordsBuilder(magic, compression, batch_size=1 << 24, offset=base_offset)
    for n, (key, value, headers) in enumerate(records):
        appended = builder.append(timestamp + 7 * n, key, value, headers if magic == 2 else None)
        assert appended is not None
    builder.close()
    return bytes(builder.buffer())


def with_control_flag(batch: bytes) -> bytes:
    """The batch marked as a control batch (a transaction marker), its crc recomputed."""
    data = bytearray(batch)
    (attributes,) = struct.unpack_from(">h", data, ATTRIBUTES_AT)
    struct.pack_into(">h", data, ATTRIBUTES_AT, attributes | 0x20)
    struct.pack_into(">I", data, CRC_AT, calc_crc32c(memoryview(data)[ATTRIBUTES_AT:]))
    return bytes(data)


def as_source(record: Any) -> SourceRecord:
    return record if type(record) is SourceRecord else _source_record(_RECORD_FIELDS(record))


def read_through(
    reader: type[Any],
    fetched: bytes,
    fetch_offset: int,
    takes: list[int | None],
    check_crcs: bool = True,
) -> list[Step]:
    """What a consumer sees of `fetched` when it takes `takes` records at a time (cycled)."""
    drained: list[Any] = []
    part = reader(
        fetch_offset, TP, MemoryRecords(fetched), check_crcs=check_crcs, on_drain=drained.append
    )
    steps: list[Step] = []
    empty_takes = 0
    for attempt in range(400):
        size = takes[attempt % len(takes)]
        try:
            got = part.take(size)
        except CorruptRecordError:
            steps.append(("corrupt",))
            continue
        records = [as_source(record) for record in got]
        steps.append((records, part.next_fetch_offset, part.leader_epoch, bool(drained)))
        if drained:
            break
        if size == 0:
            continue  # a take of none is no sign that nothing more will come
        empty_takes = 0 if records else empty_takes + 1
        if empty_takes == 3:  # after a corrupt record: nothing more, ever
            break
    return steps


def assert_same_reading(
    fetched: bytes, fetch_offset: int, takes: list[int | None], check_crcs: bool = True
) -> list[Step]:
    stock = read_through(Fetcher.PartitionRecords, fetched, fetch_offset, takes, check_crcs)
    fast = read_through(FastPartitionRecords, fetched, fetch_offset, takes, check_crcs)
    assert fast == stock
    return fast


def records_in(steps: list[Step]) -> list[SourceRecord]:
    return [record for step in steps if len(step) > 1 for record in step[0]]


keys = st.none() | st.binary(max_size=12)
values = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=3)
records_strategy = st.lists(st.tuples(keys, values, headers), min_size=1, max_size=12)
batch_shapes = st.lists(
    st.tuples(
        records_strategy,
        st.sampled_from([(2, 0), (2, 0), (2, GZIP), (2, LZ4), (1, 0), (1, GZIP), (0, 0)]),
        st.integers(min_value=0, max_value=3),  # offsets skipped before the batch
    ),
    min_size=1,
    max_size=5,
)
take_sizes = st.lists(
    st.none() | st.integers(min_value=0, max_value=15), min_size=1, max_size=4
).filter(lambda sizes: any(size != 0 for size in sizes))


def fetched_bytes(shapes: list[Any]) -> tuple[bytes, int]:
    """The batches back to back, as a fetch response holds them; and the last offset."""
    parts, offset = [], 0
    for records, (magic, compression), gap in shapes:
        offset += gap
        parts.append(batch_bytes(records, base_offset=offset, magic=magic, compression=compression))
        offset += len(records)
    return b"".join(parts), offset - 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=batch_shapes, takes=take_sizes, data=st.data())
def test_every_take_hands_out_the_records_and_positions_kafka_python_would(
    shapes: list[Any], takes: list[int | None], data: st.DataObject
) -> None:
    fetched, last_offset = fetched_bytes(shapes)
    fetch_offset = data.draw(st.integers(min_value=0, max_value=last_offset + 1))
    steps = assert_same_reading(fetched, fetch_offset, takes)
    assert steps[-1][-1] is True  # drained


def test_records_keep_their_offsets_timestamps_keys_and_a_null_value_reads_as_empty() -> None:
    fetched = batch_bytes(
        [(b"q1", b'{"a": 1}', []), (None, None, [("trace", b"x")]), (b"", b"", [])],
        base_offset=40,
    )
    steps = assert_same_reading(fetched, 40, [None])
    assert records_in(steps) == [
        SourceRecord("events", 3, 40, 1_767_225_600_000, b"q1", b'{"a": 1}'),
        SourceRecord("events", 3, 41, 1_767_225_600_007, None, b""),
        SourceRecord("events", 3, 42, 1_767_225_600_014, b"", b""),
    ]


def test_records_before_the_fetch_offset_in_a_compressed_batch_are_skipped() -> None:
    fetched = batch_bytes(
        [(None, b"%d" % n, []) for n in range(10)], base_offset=0, compression=GZIP
    )
    steps = assert_same_reading(fetched, 6, [3])
    assert [record.offset for record in records_in(steps)] == [6, 7, 8, 9]


def test_a_control_batch_is_passed_over_and_the_position_moves_past_it() -> None:
    marker = with_control_flag(batch_bytes([(b"\x00\x00\x00\x01", b"", [])], base_offset=5))
    fetched = batch_bytes([(None, b"a", [])], base_offset=4) + marker
    fetched += batch_bytes([(None, b"b", [])], base_offset=6)
    steps = assert_same_reading(fetched, 4, [1])
    assert [record.value for record in records_in(steps)] == [b"a", b"b"]
    assert steps[-1][1] == 7


def test_a_batch_that_fails_its_crc_is_refused_as_corrupt() -> None:
    good = batch_bytes([(None, b"first", [])], base_offset=0)
    bad = bytearray(batch_bytes([(None, b"second", [])], base_offset=1))
    bad[-1] ^= 0xFF
    steps = assert_same_reading(good + bytes(bad), 0, [None])
    assert records_in(steps) == [SourceRecord("events", 3, 0, 1_767_225_600_000, None, b"first")]
    assert ("corrupt",) in steps


@settings(max_examples=500, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=6),
    flips=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(1, 255)), min_size=1, max_size=3
    ),
    takes=take_sizes,
)
@example(count=3, flips=[(3, 1), (9_688_696_016, 1)], takes=[None])  # every record skipped
def test_damaged_records_give_the_same_records_then_the_same_corrupt_error(
    count: int, flips: list[tuple[int, int]], takes: list[int | None]
) -> None:
    # CRCs unchecked, so the damage reaches the record reader itself.
    data = bytearray(
        batch_bytes(
            [(b"k%d" % n, b"v" * (n * 40), [("h", b"1")]) for n in range(count)], base_offset=9
        )
    )
    for at, mask in flips:
        data[RECORDS_AT + at % (len(data) - RECORDS_AT)] ^= mask
    assert_same_reading(bytes(data), 9, takes, check_crcs=False)


def test_offsets_and_timestamps_past_int64_come_out_as_kafka_python_gives_them() -> None:
    # A crafted batch: a first timestamp and a base offset at the int64 limit, so that the
    # records' deltas carry them past it. kafka-python's Python ints just grow; the C reader
    # must give the same numbers (it used to wrap around, undefined behaviour in C).
    data = bytearray(batch_bytes([(None, b"a", []), (None, b"b", [])], base_offset=0, timestamp=0))
    struct.pack_into(">q", data, 0, 2**63 - 1)  # base offset
    struct.pack_into(">q", data, FIRST_TIMESTAMP_AT, 2**63 - 1)
    struct.pack_into(">I", data, CRC_AT, calc_crc32c(memoryview(data)[ATTRIBUTES_AT:]))
    steps = assert_same_reading(bytes(data), 0, [None])
    [_, second] = records_in(steps)
    assert (second.offset, second.timestamp_ms) == (2**63, 2**63 - 1 + 7)


def test_the_reader_survives_arbitrary_bytes_after_a_valid_batch_header() -> None:
    header = batch_bytes([(None, b"x", [])], base_offset=0)[:RECORDS_AT]
    for tail in (b"", b"\x00", b"\xff" * 11, b"\x02\x00", bytes(range(256))):
        assert_same_reading(header + tail, 0, [None], check_crcs=False)


class Text(Deserializer):  # type: ignore[misc]
    def deserialize(self, topic: str, headers: Any, data: bytes | None) -> str | None:
        return None if data is None else data.decode()


def test_only_a_tested_kafka_python_without_deserializers_reading_uncommitted_gets_the_c_reader(
    tansu: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fetcher_reader(**options: Any) -> type[Any]:
        consumer = KafkaConsumer(bootstrap_servers=tansu.bootstrap_servers, **options)
        try:
            read_records_in_c(consumer)
            return consumer._fetcher.PartitionRecords  # type: ignore[no-any-return]
        finally:
            consumer.close()

    assert fetcher_reader() is FastPartitionRecords
    assert fetcher_reader(value_deserializer=Text()) is Fetcher.PartitionRecords
    assert fetcher_reader(isolation_level="read_committed") is Fetcher.PartitionRecords
    monkeypatch.setattr(kafka, "__version__", "3.1.0")
    assert fetcher_reader() is Fetcher.PartitionRecords
    monkeypatch.undo()
    monkeypatch.setenv("RANKMON_SPEEDUPS", "off")
    assert fetcher_reader() is Fetcher.PartitionRecords
    assert Fetcher.PartitionRecords is not FastPartitionRecords  # the class is left alone


def consume_all(
    bootstrap: str, topic: str, count: int, max_poll_records: int
) -> list[SourceRecord]:
    source = EventSource(
        bootstrap_servers=bootstrap,
        topic=topic,
        group_id=f"{topic}-{max_poll_records}-{speedups_built()}",
        session_timeout_ms=6000,
        max_poll_records=max_poll_records,
    )
    records: list[SourceRecord] = []
    try:
        for _ in range(300):
            records += source.poll(timeout_ms=200).records
            if len(records) >= count:
                break
    finally:
        source.close()
    return records


@pytest.fixture
def mixed_topic(new_topic: Callable[..., str], tansu: EmbeddedBroker) -> Iterator[tuple[str, int]]:
    """A topic of 3,000 records from a gzip and a plain producer: keys, headers, tombstones."""
    topic = new_topic(partitions=2)
    sent = 0
    for compression in ("gzip", None):
        producer = KafkaProducer(
            bootstrap_servers=tansu.bootstrap_servers, compression_type=compression, linger_ms=20
        )
        for n in range(1500):
            producer.send(
                topic,
                key=None if n % 7 == 3 and n % 97 else b"q%d" % (n % 50),
                value=None
                if n % 97 == 0
                else b'{"event_id": "e%d", "pad": "%s"}' % (n, b"x" * (n % 300)),
                headers=[("source", b"test")] if n % 5 == 0 else [],
            )
            sent += 1
        producer.flush()
        producer.close()
    yield topic, sent


def test_the_service_consumer_reads_the_same_records_from_the_broker_with_either_reader(
    tansu: EmbeddedBroker, mixed_topic: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    topic, sent = mixed_topic
    fast = consume_all(tansu.bootstrap_servers, topic, sent, max_poll_records=333)
    monkeypatch.setenv("RANKMON_SPEEDUPS", "off")
    stock = consume_all(tansu.bootstrap_servers, topic, sent, max_poll_records=500)
    assert len(fast) == sent
    assert sorted(fast) == sorted(stock)
    assert sum(record.value == b"" for record in fast) == 2 * len(range(0, 1500, 97))
