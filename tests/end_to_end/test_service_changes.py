"""Change without corruption: resizes, evaluation-set edits, reloads and releases under load.

`rankmon run` as a child process on the real Tansu broker (tests/support/recovery_support.py), a
mixed stream fed in chunks while it runs, and what the topics hold afterwards:

    resize      kill -9 between a publish and its commit; restart with windows of 2 s (were 1 s)
    edit        kill -9 between a publish and its commit; the qrels edited; restart
    SIGHUP      a reload mid-window: the open window finishes with its version, no fragment
    releases    3 x max_values model releases: labels as they retire, stable across a kill

    records = events in published windows (each window and segment once) + the closer
              + one dead letter per rejected record
"""

from __future__ import annotations

import signal
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from monitor.checkpoint.share import WindowShare
from monitor.demo.broker import EmbeddedBroker
from monitor.testing.crashpoints import CRASH_ENV
from monitor.testing.mixed_traffic import TrafficRecord
from tests.support.recovery_support import (
    CORPUS,
    T0,
    TRAFFIC,
    Published,
    ServiceProcess,
    committed,
    create_topics,
    feed,
    produce,
    read_topic,
    stream,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]

CHUNKS = 8
PAUSE_S = 0.25


def shares(bootstrap: str, topic: str) -> list[WindowShare]:
    records = read_topic(bootstrap, f"{topic}.windows")
    return [WindowShare.from_record(r.value, r.headers) for r in records]


def assert_each_record_accounted_once(
    published: Published, windows: Sequence[WindowShare], records: Sequence[TrafficRecord]
) -> None:
    keys = Counter(
        (s.summary.start_ms, s.summary.end_ms, s.summary.segment, s.partitions) for s in windows
    )
    assert max(keys.values()) == 1, [key for key, n in keys.items() if n > 1]
    dead = {offset for _, offset, _ in published.dead_letters}
    assert len(dead) == len(published.dead_letters), "a record with two outcomes"
    counted = sum(share.summary.events for share in windows)
    # The closer's window stays open: it is the one record in no window and no dead letter.
    assert counted + len(dead) + 1 == len(records)


def run_twice(
    broker: EmbeddedBroker,
    directory: Path,
    records: list[TrafficRecord],
    *,
    second_window: str = "1s",
    between: str = "",
) -> tuple[str, Published, list[WindowShare]]:
    """Feed `records` while `rankmon run` consumes; it is killed at its third publish (before
    the commit); then `between` happens and a second process, with `second_window`, catches
    up to the closer."""
    bootstrap = broker.bootstrap_servers
    topic = f"chg-{uuid.uuid4().hex[:10]}"
    create_topics(broker, topic, 1)
    group = f"g-{topic}"
    first = write_config(directory, bootstrap, topic, group, name="first")
    service = ServiceProcess(first, "first", {CRASH_ENV: "after-publish:3"})
    service.wait_ready()
    try:
        feed(bootstrap, topic, records, chunks=CHUNKS, pause_s=PAUSE_S)
        wait_until(lambda: not service.alive, 30, "the crash after the third publish")
        assert service.process.returncode == -9, service.log()
        if between == "edit":
            qrels = directory / "qrels.txt"
            lines = qrels.read_text().splitlines()
            qrels.write_text("".join(f"{line[:-1]}{(int(line[-1]) + 1) % 4}\n" for line in lines))
        second = write_config(
            directory, bootstrap, topic, group, window=second_window, name="second"
        )
        service = ServiceProcess(second, "second")
        closer = len(records) - 1
        wait_until(
            lambda: committed(bootstrap, group, topic, 1) == {0: closer},
            60,
            "the commit up to the closer",
        )
        assert service.terminate() == 0, service.log()
    finally:
        service.kill()
    return topic, Published.read(bootstrap, topic), shares(bootstrap, topic)


def test_a_window_resize_across_a_kill_counts_every_record_once(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    records = stream(seed=23, count=320)
    _, published, windows = run_twice(tansu, tmp_path, records, second_window="2s")
    assert_each_record_accounted_once(published, windows, records)
    sizes = Counter(s.summary.end_ms - s.summary.start_ms for s in windows)
    assert set(sizes) == {1_000, 2_000}, sizes  # the old windows up to the change, then new
    new = [s.summary.start_ms for s in windows if s.summary.end_ms - s.summary.start_ms == 2_000]
    old = [s.summary.start_ms for s in windows if s.summary.end_ms - s.summary.start_ms == 1_000]
    assert max(old) < min(new)


def test_an_evaluation_set_edited_between_publish_and_commit_publishes_no_window_twice(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    records = stream(seed=29, count=320)
    _, published, windows = run_twice(tansu, tmp_path, records, between="edit")
    assert_each_record_accounted_once(published, windows, records)
    versions = [s.summary.evaluation_set_version for s in windows]
    # In publishing order: the set of before the kill, then the edited one for the replay.
    assert len(set(versions)) == 2
    assert versions == sorted(versions, key=versions.index)
    first_new = versions.index(versions[-1])
    assert all(v == versions[0] for v in versions[:first_new])


def test_a_sighup_mid_window_gives_one_summary_per_window_and_no_alert_on_a_fragment(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    bootstrap = tansu.bootstrap_servers
    topic = f"hup-{uuid.uuid4().hex[:10]}"
    create_topics(tansu, topic, 1)
    rules = """
alerts:
  log: true
  rules:
    - {name: ndcg10-floor, measure: ndcg@10, below: 0.2}
"""
    config = write_config(tmp_path, bootstrap, topic, f"g-{topic}", window="10s", extra=rules)
    service = ServiceProcess(config, "hup")
    service.wait_ready()
    queries = CORPUS.query_ids[:12]
    ideal = {q: sorted(CORPUS.judgments[q], key=lambda d: -CORPUS.judgments[q][d]) for q in queries}

    def events(seconds: float, count: int, prefix: str) -> list[TrafficRecord]:
        values = []
        for n in range(count):
            query = queries[n % len(queries)]
            value = {
                "event_id": f"{prefix}{n}",
                "query_id": query,
                "ranking": ideal[query][:10],  # the best ranking: healthy under the first set
                "event_time": T0 + int(seconds * 1000) + n,
                "segment": {"model": "v1"},
            }
            values.append(TrafficRecord(query.encode(), orjson.dumps(value), "accepted", 0))
        return values

    try:
        produce(bootstrap, topic, events(1, 24, "a"))
        wait_until(lambda: accepted(service) == 24, 20, "the first events")
        # The edited set grades nothing the ranker serves: a fragment scored with it is 0.
        (tmp_path / "qrels.txt").write_text(
            "".join(f"{q} 0 unrelated-{q} 3\n" for q in CORPUS.query_ids)
        )
        service.process.send_signal(signal.SIGHUP)
        wait_until(lambda: "evaluation set takes effect" in service.log(), 20, "the reload")
        produce(bootstrap, topic, events(6, 1, "b"))  # one event, same window, after the reload
        produce(bootstrap, topic, events(25, 1, "c"))  # closes [T0, T0 + 10 s)
        wait_until(lambda: bool(shares(bootstrap, topic)), 30, "the window's share")
        time.sleep(1.0)  # a few more ticks: a second share of the window would show now
        log = service.log()
        assert service.terminate() == 0, log
    finally:
        service.kill()
    published = shares(bootstrap, topic)
    assert [(s.summary.start_ms, s.summary.events) for s in published] == [(T0, 25)]
    assert published[0].summary.means["ndcg@10:linear"] > 0.9  # all 25 scored with the old set
    assert "alert ndcg10-floor firing" not in log


def accepted(service: ServiceProcess) -> float:
    for line in service.metrics().splitlines():
        if line.startswith('rankmon_events_total{outcome="accepted"'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def releases(count: int, per_release_s: int) -> list[TrafficRecord]:
    """Model releases r0, r1, ... each serving `per_release_s` seconds of events, the
    previous one still serving a share of the traffic meanwhile (a canary rollout)."""
    # 25 records per second of event time (40 ms apart), most of them valid
    records = list(TRAFFIC.records(seed=5, count=(count + 1) * per_release_s * 28))
    out = []
    for n, record in enumerate(records):
        if record.intended != "accepted":
            continue
        value = orjson.loads(record.value)
        serving = (value["event_time"] - T0) // (per_release_s * 1000)
        release = min(count - 1, max(0, serving - (n % 4 == 0)))
        value["segment"] = {"model": f"r{release}"}
        out.append(TrafficRecord(record.key, orjson.dumps(value), "accepted", value["event_time"]))
    return out


def run_releases(
    broker: EmbeddedBroker, directory: Path, records: list[TrafficRecord], crash: str | None
) -> tuple[list[WindowShare], str]:
    """Feed the releases to a fresh topic while `rankmon run` consumes (killed at `crash`,
    then restarted); wait until the quiet stream closed every window; the shares published
    and the last /metrics."""
    bootstrap = broker.bootstrap_servers
    topic = f"rel-{uuid.uuid4().hex[:10]}"
    create_topics(broker, topic, 1)
    group = f"g-{topic}"
    segments = "{keys: [model], max_values: 2, retire_after: 1s}"
    config = write_config(directory, bootstrap, topic, group, segments=segments, idle_timeout="1s")
    service = ServiceProcess(config, "first", {CRASH_ENV: crash} if crash else {})
    service.wait_ready()
    try:
        feed(bootstrap, topic, records, chunks=CHUNKS, pause_s=PAUSE_S)
        if crash:
            wait_until(lambda: not service.alive, 30, "the crash")
            service = ServiceProcess(config, "second")
        ends = {0: len(records)}
        wait_until(lambda: committed(bootstrap, group, topic, 1) == ends, 60, "every window")
        metrics = service.metrics()
        assert service.terminate() == 0, service.log()
    finally:
        service.kill()
    return shares(bootstrap, topic), metrics


def test_model_releases_past_the_cap_get_labels_as_older_ones_retire_stable_across_a_kill(
    tansu: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> None:
    records = releases(6, per_release_s=3)  # 3 x max_values releases
    uninterrupted, metrics = run_releases(tansu, tmp_path_factory.mktemp("a"), records, None)
    recovered, _ = run_releases(tansu, tmp_path_factory.mktemp("b"), records, "after-publish:4")
    assert [s.summary.to_json() for s in recovered] == [s.summary.to_json() for s in uninterrupted]
    labels = [dict(s.summary.segment)["model"] for s in uninterrupted]
    assert {f"r{n}" for n in range(6)} <= set(labels)  # every release got its own label
    assert "__other__" in labels  # while two older ones were still recent
    per_window = Counter(
        s.summary.start_ms for s in uninterrupted if "__other__" not in str(s.summary.segment)
    )
    assert max(per_window.values()) <= 2  # max_values
    # The oldest releases retired: their series left /metrics.
    gauges = [line for line in metrics.splitlines() if line.startswith("rankmon_ndcg{")]
    assert gauges and not any(f'model="r{n}"' in line for line in gauges for n in range(3))
