"""Months unattended: compressed topics, unreadable batches, quiet streams, clock steps, backlogs.

Each test runs `Monitor` as in production against the real Tansu broker (and, for the backlog,
the real Alertmanager), in a thread, with small windows:

    tumbling 2s, lateness 1s, idle 2s, tick 500ms
    compressed   batches in gzip, lz4, zstd and snappy -> every event in a published window
    unreadable   zstd on partition 0 without its codec -> partition 1 goes on, /readyz says why
    quiet        a burst, then nothing -> its window is published by size+lateness+idle+tick
    backlog      a bad window inside 12 finalized in one tick -> Alertmanager pages, resolves
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kafka.codec
import orjson
import pytest
from kafka import KafkaProducer

from monitor.alerting.messages import rfc3339
from monitor.checkpoint.share import WindowShare
from monitor.checkpoint.share_reader import read_shares
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.service import Monitor
from tests.support.realparts import (
    AlertmanagerServer,
    WebhookReceiver,
    monitor_thread,
    write_service_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]

QRELS = {f"q{i}": {f"q{i}-d{j}": 3 - j % 4 for j in range(8)} for i in range(6)}
FAST_WINDOWS = """
windows: {size: 2s, allowed_lateness: 1s, idle_timeout: 2s}
schedule: {interval: 500ms}
"""


def event(event_id: str, query: str, time_ms: int, *, good: bool = True) -> bytes:
    docs = QRELS[query]
    ranking = sorted(docs, key=lambda d: -docs[d]) if good else [f"x{j}" for j in range(10)]
    return orjson.dumps(
        {
            "event_id": event_id,
            "query_id": query,
            "ranking": ranking,
            "event_time": time_ms,
            "segment": {"model": "v1"},
            # Padding that compresses: a producer only keeps a compressed batch if it is
            # smaller than the plain one.
            "note": "x" * 200,
        }
    )


def send(
    broker: EmbeddedBroker,
    topic: str,
    values: list[bytes],
    *,
    compression: str | None = None,
    partition: int | None = None,
) -> None:
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, compression_type=compression, linger_ms=20
    )
    for value in values:
        producer.send(topic, key=b"k", value=value, partition=partition)
    producer.flush()
    producer.close()


def published(broker: EmbeddedBroker, topic: str) -> list[WindowShare]:
    records = read_shares(bootstrap_servers=broker.bootstrap_servers, topic=f"{topic}.windows")
    return [record for record in records if isinstance(record, WindowShare)]


def events_in(shares: list[WindowShare]) -> int:
    return sum(share.summary.events for share in shares)


def wait_until(condition: Callable[[], bool], timeout_s: float, every_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every_s)
    return condition()


def http_status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def service(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> Callable[..., tuple[str, Path]]:
    """`service(partitions, extra_yaml)`: a topic and a service config for it."""

    def make(partitions: int = 1, extra: str = FAST_WINDOWS) -> tuple[str, Path]:
        topic = new_topic(partitions)
        return topic, write_service_config(tmp_path, tansu, topic, QRELS, extra)

    return make


def test_batches_in_every_codec_kafka_python_supports_end_in_published_windows(
    tansu: EmbeddedBroker, service: Callable[..., tuple[str, Path]]
) -> None:
    topic, config = service()
    start = (time.time_ns() // 1_000_000 // 2000 - 30) * 2000  # whole windows, in the past
    codecs = ["gzip", "lz4", "zstd", "snappy", None]
    sent = 0
    for n, codec in enumerate(codecs):
        values = [event(f"{codec}-{i}", f"q{i % 6}", start + n * 2000 + i * 10) for i in range(30)]
        send(tansu, topic, values, compression=codec)
        sent += len(values)
    with monitor_thread(Monitor(load_config(config, environ={}))):
        # The stream then goes quiet: every window, the newest included, is published.
        assert wait_until(lambda: events_in(published(tansu, topic)) == sent, 30)
    starts = sorted(share.summary.start_ms for share in published(tansu, topic))
    assert starts == [start + n * 2000 for n in range(len(codecs))]


@pytest.mark.usefixtures("kafka_outage")
def test_a_batch_that_cannot_be_read_pauses_its_partition_and_the_others_go_on(
    tansu: EmbeddedBroker, service: Callable[..., tuple[str, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    topic, config = service(partitions=2)
    start = (time.time_ns() // 1_000_000 // 2000 - 30) * 2000
    zstd = [event(f"z{i}", f"q{i % 6}", start + i * 10) for i in range(20)]
    send(tansu, topic, zstd, compression="zstd", partition=0)
    plain = [event(f"p{i}", f"q{i % 6}", start + 2000 + i * 10) for i in range(20)]
    send(tansu, topic, plain, partition=1)
    # A consumer without the zstd library, as kafka-python is when nothing installed it.
    monkeypatch.setattr(kafka.codec, "has_zstd", lambda: False)
    monitor = Monitor(load_config(config, environ={}))
    with monitor_thread(monitor):
        assert wait_until(lambda: bool(published(tansu, topic)), 30)
        status, body = http_status(f"{monitor.server.url}/readyz")
        assert status == 503
        assert "unreadable: partition 0 at offset 0" in body and "zstd" in body
        assert http_status(f"{monitor.server.url}/healthz")[0] == 200
        unreadable = monitor.registry.get_sample_value(
            "rankmon_unreadable_batches_total", {"partition": "0"}
        )
        assert unreadable is not None and unreadable >= 1
        # The other partition's window was finalized, published and committed meanwhile.
        (share,) = published(tansu, topic)
        assert share.summary.events == len(plain) and share.partitions == frozenset({1})
        ticks = monitor.registry.get_sample_value("rankmon_loop_progress_timestamp_seconds")
        assert ticks is not None and ticks > time.time() - 5


def test_a_burst_then_silence_publishes_its_last_window_without_another_event(
    tansu: EmbeddedBroker, service: Callable[..., tuple[str, Path]]
) -> None:
    topic, config = service()
    monitor = Monitor(load_config(config, environ={}))
    with monitor_thread(monitor):
        assert wait_until(lambda: monitor.source.group_joined, 20)
        now_ms = time.time_ns() // 1_000_000
        # One event time for the whole burst: spread over 12 ms it straddled a window
        # boundary now and then, and two windows were published.
        burst = [event(f"b{i}", f"q{i % 6}", now_ms) for i in range(12)]
        send(tansu, topic, burst)
        sent_at = time.monotonic()
        assert wait_until(lambda: bool(published(tansu, topic)), 20, every_s=0.05)
        took = time.monotonic() - sent_at
    (share,) = published(tansu, topic)
    assert share.summary.events == len(burst)
    # size 2s + lateness 1s + idle 2s + one tick 0.5s, and the read-back's own latency
    assert took <= 2 + 1 + 2 + 0.5 + 1.0, took


ALERTS = """
windows: {{size: 2s, allowed_lateness: 1s, idle_timeout: 1h}}
schedule: {{interval: 3s}}
alerts:
  log: true
  alertmanager: {{url: "{url}", min_firing: 2s}}
  delivery: {{resend_interval: 1s, backoff_initial: 200ms, backoff_max: 1s}}
  rules:
    - name: ndcg10-floor
      measure: ndcg@10
      severity: critical
      below: 0.5
      for: 1
"""


def statuses(bodies: list[Any]) -> list[tuple[str, str]]:
    return [
        (body["status"], alert["startsAt"])
        for body in bodies
        for alert in body["alerts"]
        if alert["labels"]["alertname"] == "ndcg10-floor"
    ]


@pytest.mark.alertmanager
def test_an_alert_that_fires_and_resolves_inside_one_backlog_still_pages_through_alertmanager(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    start_alertmanager: Callable[..., AlertmanagerServer],
    webhook_receiver: WebhookReceiver,
) -> None:
    alertmanager = start_alertmanager(webhook_receiver.url)
    topic = new_topic(1)
    config = write_service_config(
        tmp_path, tansu, topic, QRELS, ALERTS.format(url=alertmanager.url)
    )
    # A backlog of 12 windows (after downtime, say): the fourth one bad, all the others good.
    start = (time.time_ns() // 1_000_000 // 2000 - 600) * 2000
    values = [
        event(f"w{w}-{q}", f"q{q}", start + w * 2000 + q * 10, good=w != 3)
        for w in range(13)
        for q in range(6)
    ]
    send(tansu, topic, values)
    monitor = Monitor(load_config(config, environ={}))
    with monitor_thread(monitor):
        assert webhook_receiver.wait_for(
            lambda bodies: ("resolved", _at(start + 4 * 2000)) in statuses(bodies), 40
        ), webhook_receiver.bodies
        fired = monitor.registry.get_sample_value(
            "rankmon_alert_firings_total",
            {"alert": "ndcg10-floor", "severity": "critical", "model": "v1"},
        )
    seen = statuses(webhook_receiver.bodies)
    # Alertmanager notified the firing, at its window (event time), before the resolution.
    first_firing = seen.index(("firing", _at(start + 4 * 2000)))
    assert first_firing < seen.index(("resolved", _at(start + 4 * 2000)))
    assert fired == 1


def _at(ms: int) -> str:
    return rfc3339(ms)
