"""A monitor killed (SIGKILL) in the middle of a replay, on the real broker: after the restart
the replay is one window, every query counted once, closed by its end markers."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer

from monitor.checkpoint.share import WindowShare
from monitor.checkpoint.share_reader import read_shares
from monitor.demo.broker import EmbeddedBroker
from monitor.replay.events import end_marker, query_event
from monitor.replay.ranker import Answer
from monitor.replay.topics import Query
from tests.support.recovery_support import (
    CORPUS,
    ServiceProcess,
    create_topics,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PARTITIONS = 2


def accepted(service: ServiceProcess) -> int:
    found = re.search(r'rankmon_events_total\{outcome="accepted"[^}]*\} (\S+)', service.metrics())
    return int(float(found[1])) if found else 0


def test_a_monitor_killed_mid_replay_counts_each_query_once_in_one_window(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = f"replay-kill-{uuid.uuid4().hex[:8]}"
    create_topics(tansu, topic, PARTITIONS)
    config = write_config(
        tmp_path, tansu.bootstrap_servers, topic, f"g-{topic}", window="10s", idle_timeout="1h"
    )
    started = int(time.time() * 1000) - 2_000
    queries = CORPUS.query_ids
    records = []
    for n, query in enumerate(queries):
        grades = CORPUS.judgments[query]
        ranking = tuple(sorted(grades, key=lambda doc: -grades[doc])[:10])
        _, value = query_event("r1", Query(query, query), Answer("ranked", ranking), {}, started)
        records.append((n % PARTITIONS, query.encode(), value))
    producer = KafkaProducer(bootstrap_servers=tansu.bootstrap_servers, acks="all")

    def send(batch: list[tuple[int, bytes, bytes]]) -> None:
        for partition, key, value in batch:
            producer.send(topic, key=key, value=value, partition=partition)
        producer.flush()

    half = len(records) // 2
    first = ServiceProcess(config, "first")
    try:
        first.wait_ready()
        send(records[:half])
        wait_until(lambda: accepted(first) == half, 30, "the first half to be consumed")
    finally:
        first.kill()  # mid-replay: the window is open, nothing of it was committed past
    send(records[half:])
    for partition in range(PARTITIONS):
        key, value = end_marker(
            "r1",
            events=sum(1 for p, _, _ in records if p == partition),
            queries=len(queries),
            outcomes={"ranked": len(queries)},
            started_ms=started,
            ended_ms=started + 1_000,
        )
        producer.send(topic, key=key, value=value, partition=partition)
    producer.flush()
    producer.close()

    second = ServiceProcess(config, "second")
    try:
        shares: list[WindowShare] = []

        def published() -> bool:
            shares[:] = [
                s
                for s in read_shares(
                    bootstrap_servers=tansu.bootstrap_servers, topic=f"{topic}.windows"
                )
                if isinstance(s, WindowShare)
            ]
            return bool(shares)

        wait_until(published, 60, "the replay's window to be published", poll_s=0.5)
        time.sleep(2)  # a second share of it would come at the next tick (200 ms)
        published()
        assert second.terminate() == 0, second.log()
    finally:
        second.kill()
    assert len(shares) == 1, [s.summary for s in shares]
    summary = shares[0].summary
    assert (summary.queries, summary.events) == (len(queries), len(queries))
    assert summary.coverage == 1.0
