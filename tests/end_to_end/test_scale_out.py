"""Several `rankmon run` instances in one consumer group: their window shares combine into
exactly what one instance publishes.

Three partitions, events keyed by query id. The reference is one instance over the whole
stream. The scaled run starts two instances, adds a third mid-stream, then kills one with
SIGKILL; every rebalance moves partitions (and their open windows) between instances:

    chunks      1  2  3  4  5  6  7  8  9  10  11  12  closers
    A           run ............................................ SIGTERM
    B           run .................. X (kill -9)
    C                 run (joined) ............................. SIGTERM

For each window and segment, the shares must cover disjoint partitions whose union is the
reference's, with the same per-query means bit for bit, the same event and query counts, and
sums whose total gives the reference's mean over queries (to float rounding: the shares are
summed in another order).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.share import WindowShare
from monitor.demo.broker import EmbeddedBroker
from monitor.testing.mixed_traffic import MixedTraffic, TrafficRecord
from monitor.windows.summary import Segment
from tests.support.recovery_support import (
    CORPUS,
    STEP_MS,
    T0,
    ServiceProcess,
    committed,
    create_topics,
    feed,
    produce,
    read_topic,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PARTITIONS = 3
COUNT = 480
CHUNKS = 12
PAUSE_S = 0.5
# No late records: with several partitions the global watermark depends on how far each
# partition was read, so whether an out-of-order event is late would depend on timing.
TRAFFIC = MixedTraffic(CORPUS, start_ms=T0, step_ms=STEP_MS, late_by_ms=3_000, late=0.0)


@dataclass(frozen=True)
class Window:
    """One window and segment, merged over its shares."""

    partitions: frozenset[int]
    events: int
    queries: int
    query_means: dict[str, dict[str, float]]
    sums: dict[str, float]


def merged(shares: list[WindowShare]) -> dict[tuple[int, Segment], Window]:
    """Merge shares per window and segment, failing if two cover one partition."""
    windows: dict[tuple[int, Segment], Window] = {}
    for share in shares:
        key = (share.summary.start_ms, share.summary.segment)
        assert share.partitions is not None
        summary, seen = share.summary, windows.get(key)
        if seen is None:
            seen = Window(frozenset(), 0, 0, {}, dict.fromkeys(summary.sums, 0.0))
        assert not seen.partitions & share.partitions, f"{key} published twice for a partition"
        windows[key] = Window(
            seen.partitions | share.partitions,
            seen.events + summary.events,
            seen.queries + summary.queries,
            {**seen.query_means, **{q: dict(m) for q, m in summary.query_means.items()}},
            {k: seen.sums[k] + v for k, v in summary.sums.items()},
        )
    return windows


def shares_of(broker: EmbeddedBroker, topic: str) -> list[WindowShare]:
    """The window shares on the windows topic (a group's members also send progress there)."""
    return [
        WindowShare.from_json(r.value)
        for r in read_topic(broker.bootstrap_servers, topic)
        if not ProgressRecord.is_key(r.key)
    ]


@pytest.fixture(scope="module")
def records() -> list[TrafficRecord]:
    return list(TRAFFIC.records(seed=23, count=COUNT))


def closers(records: list[TrafficRecord]) -> list[tuple[int, TrafficRecord]]:
    """One closer per partition, far after the stream (the slowest partition holds the
    watermark)."""
    last = max(r.event_time_ms for r in records)
    return [(p, TRAFFIC.closer(23, last + 5_000 + p)) for p in range(PARTITIONS)]


def finish(broker: EmbeddedBroker, topic: str, group: str, records: list[TrafficRecord]) -> None:
    """Produce the closers and wait until the group committed up to each of them."""
    for partition, closer in closers(records):
        produce(broker.bootstrap_servers, topic, [closer], partition=partition)
    ends: dict[int, int | None] = {}
    for record in read_topic(broker.bootstrap_servers, topic):
        ends[record.partition] = record.offset
    wait_until(
        lambda: committed(broker.bootstrap_servers, group, topic, PARTITIONS) == ends,
        60,
        "the commits up to the closers",
    )


@pytest.fixture(scope="module")
def single_instance(
    tansu: EmbeddedBroker, records: list[TrafficRecord], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[tuple[int, Segment], Window]]:
    topic = f"one-{uuid.uuid4().hex[:10]}"
    create_topics(tansu, topic, PARTITIONS)
    config = write_config(tmp_path_factory.mktemp("one"), tansu.bootstrap_servers, topic, "one")
    service = ServiceProcess(config, "one")
    try:
        service.wait_ready()
        produce(tansu.bootstrap_servers, topic, records)
        finish(tansu, topic, "one", records)
        assert service.terminate() == 0, service.log()
    finally:
        service.kill()
    yield merged(shares_of(tansu, f"{topic}.windows"))


def test_two_then_three_instances_with_one_killed_combine_to_the_single_instance_windows(
    tansu: EmbeddedBroker,
    records: list[TrafficRecord],
    single_instance: dict[tuple[int, Segment], Window],
    tmp_path: Path,
) -> None:
    topic = f"many-{uuid.uuid4().hex[:10]}"
    create_topics(tansu, topic, PARTITIONS)
    group = f"g-{topic}"
    config = write_config(tmp_path, tansu.bootstrap_servers, topic, group)
    services = {name: ServiceProcess(config, name) for name in ("a", "b")}

    def change_membership(chunk: int) -> None:
        if chunk == 2:
            services["c"] = ServiceProcess(config, "c")
            services["c"].wait_ready()  # the group is stable with three members
        if chunk == 7:
            services["b"].kill()

    try:
        for service in services.values():
            service.wait_ready()
        feed(
            tansu.bootstrap_servers,
            topic,
            records,
            chunks=CHUNKS,
            pause_s=PAUSE_S,
            between=change_membership,
        )
        finish(tansu, topic, group, records)
        for name in ("a", "c"):
            assert services[name].terminate() == 0, services[name].log()
    finally:
        for service in services.values():
            service.kill()

    shares = shares_of(tansu, f"{topic}.windows")
    combined = merged(shares)
    assert len(shares) > len(combined), "no window was split between instances"
    assert sorted(combined) == sorted(single_instance)
    for key, alone in single_instance.items():
        together = combined[key]
        assert together.partitions == alone.partitions, key
        assert (together.events, together.queries) == (alone.events, alone.queries), key
        assert together.query_means == alone.query_means, key
        for measure, total in alone.sums.items():
            assert math.isclose(together.sums[measure], total, rel_tol=1e-12), (key, measure)
            global_mean = together.sums[measure] / together.queries
            assert math.isclose(global_mean, total / alone.queries, rel_tol=1e-12)
