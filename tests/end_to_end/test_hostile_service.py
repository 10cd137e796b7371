"""Hostile producers against the real service on the real broker (Tansu)."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from kafka import KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from monitor.checkpoint.share_reader import read_shares
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.service import Monitor
from tests.support.realparts import monitor_thread, write_service_config

pytestmark = [pytest.mark.broker]

QRELS = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}}


def events_by_outcome(url: str) -> dict[str, float]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            text = answer.read().decode()
    except OSError:  # not listening yet
        return {}
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "rankmon_events_total":
                outcome = sample.labels["outcome"]
                counts[outcome] = counts.get(outcome, 0.0) + sample.value
    return counts


def test_an_event_dated_290_s_ahead_makes_no_honest_event_late_on_the_real_broker(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(1)
    config_file = write_service_config(tmp_path, tansu, topic, QRELS)
    environ = {"RANKMON_WINDOWS__ALLOWED_LATENESS": "60s"}
    now = time.time_ns() // 1_000_000
    producer = KafkaProducer(bootstrap_servers=tansu.bootstrap_servers)

    def send(event_id: str, event_time_ms: int, record_time_ms: int) -> None:
        value = orjson.dumps(
            {
                "event_id": event_id,
                "query_id": "q1" if event_id.endswith(("0", "2", "4", "6", "8")) else "q2",
                "ranking": ["d1", "d2", "d3"],
                "event_time": event_time_ms,
                "segment": {"model": "v1"},
            }
        )
        producer.send(topic, key=b"q", value=value, timestamp_ms=record_time_ms)

    # The producer's clock is `now`; one event claims to be 290 s ahead (inside max_future),
    # then 200 honest events, one a second by their event and record times.
    send("future", now + 290_000, now)
    for second in range(1, 201):
        send(f"honest-{second}", now + second * 1000, now + second * 1000)
    producer.flush()
    producer.close()
    with monitor_thread(Monitor(load_config(config_file, environ=environ))) as monitor:
        deadline = time.monotonic() + 30
        counts: dict[str, float] = {}
        while time.monotonic() < deadline:
            counts = events_by_outcome(monitor.metrics_url)
            if sum(counts.values()) >= 201:
                break
            time.sleep(0.2)
    assert counts.get("accepted") == 201, counts
    assert counts.get("late", 0) == 0, counts


def test_a_second_deployment_on_the_same_windows_topic_ignores_the_firsts_records(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Production and a staging copy (its own group) read one events topic; both were given
    # the same windows topic. Staging used to restore production's windows: its events of
    # those windows were not counted, and its labels and alerts were production's.
    topic = new_topic(1)
    config_file = write_service_config(tmp_path, tansu, topic, QRELS)
    start = 1_767_225_600_000
    producer = KafkaProducer(bootstrap_servers=tansu.bootstrap_servers)
    for second in [*range(1, 10), 25]:  # window [0, 10) and, at 25, what closes it
        value = {
            "event_id": f"e{second}",
            "query_id": "q1" if second % 2 else "q2",
            "ranking": ["d1", "d2", "d3"],
            "event_time": start + second * 1000,
            "segment": {"model": "v1"},
        }
        producer.send(topic, key=b"q", value=orjson.dumps(value))
    producer.flush()
    producer.close()

    def run_until_published(environ: dict[str, str], shares_before: int) -> dict[str, float]:
        with monitor_thread(Monitor(load_config(config_file, environ=environ))) as monitor:
            deadline = time.monotonic() + 30
            counts: dict[str, float] = {}
            while time.monotonic() < deadline:
                counts = events_by_outcome(monitor.metrics_url)
                if sum(counts.values()) >= 10 and window_shares(tansu, topic) > shares_before:
                    break
                time.sleep(0.2)
            return counts

    production = run_until_published({}, 0)
    assert production.get("accepted") == 10, production
    shared = window_shares(tansu, topic)
    staging = run_until_published({"RANKMON_KAFKA__GROUP_ID": f"staging-{topic}"}, shared)
    assert staging.get("accepted") == 10, staging  # its own windows, every event counted
    assert staging.get("late", 0) == 0, staging
    assert window_shares(tansu, topic) > shared  # it published its own share of [0, 10)
    warnings = [r for r in caplog.records if "records of another deployment" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelname == "ERROR"


def window_shares(broker: EmbeddedBroker, topic: str) -> int:
    return len(read_shares(bootstrap_servers=broker.bootstrap_servers, topic=f"{topic}.windows"))


def test_each_consumer_group_gets_its_own_windows_and_dead_letter_topics_by_default(
    tmp_path: Path,
) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    config = tmp_path / "rankmon.yaml"
    config.write_text("kafka: {topic: events}\nevaluation_set: {path: q.txt}\n")
    default = load_config(config, environ={}).kafka
    staging = load_config(config, environ={"RANKMON_KAFKA__GROUP_ID": "rankmon staging"}).kafka
    assert (default.windows_topic, default.dead_letter_topic) == ("events.windows", "events.dlq")
    assert staging.windows_topic == "events.rankmon_staging.windows"
    assert staging.dead_letter_topic == "events.rankmon_staging.dlq"
