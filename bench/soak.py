"""Soak: `rankmon run` under bursts of mixed traffic for a long time, with one crash and restart.

    .venv/bin/python bench/soak.py                    # 30 minutes, the issue's soak
    .venv/bin/python bench/soak.py --minutes 5        # shorter

An embedded Tansu broker (memory storage), a topic of three partitions, one `rankmon run`
child process (10 s tumbling windows, 2 s lateness, 20 s idle timeout, a tick every second).
Producers send mixed traffic (`monitor.testing.mixed_traffic`: about 3% invalid, 2% unknown
query, 3% duplicates, 2% late) with event times that follow the wall clock, in bursts (`--burst`
seconds) with quiet periods between them (`--quiet` seconds, longer than the idle timeout,
as a scheduled replay of an evaluation set does), each record through one of four producers
compressing with gzip, lz4, zstd and snappy. Half-way through, the service is killed with
SIGKILL and started again at once.

Every `--sample` seconds it prints the service's resident memory (from /proc) and the last
"window state" line of its log (open windows, cells, dedupe ids, published marks). At the end
it stops the traffic, waits until the quiet stream has closed every window and the commits
reach every partition's end, stops the service with SIGTERM, and reconciles from the topics,
exactly:

    produced = events in published windows + dead letters, one per source record, by outcome

A record dead-lettered twice (before and after the crash) counts once; a window published
twice, a record with two outcomes, or an event id accepted twice (a double count) is reported
as a failure. Each record carries the outcome the traffic meant for it in a header, and the
records whose outcome differs are counted by (intended, actual), so a duplicate that ended up
counted shows as `duplicate->accepted`.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.demo.synthetic import generate_corpus
from monitor.testing.mixed_traffic import MixedTraffic

PARTITIONS = 3
WINDOW_S = 10
LATENESS_S = 2
IDLE_S = 20
CODECS = ("gzip", "lz4", "zstd", "snappy")


@dataclass
class Traffic:
    """The producer thread's tally."""

    produced: int = 0
    intended: Counter[str] = field(default_factory=Counter)
    last_event_ms: int = 0
    stop: threading.Event = field(default_factory=threading.Event)


def write_config(directory: Path, bootstrap: str, qrels: Path) -> Path:
    config = directory / "soak.yaml"
    config.write_text(
        f"""
kafka:
  bootstrap_servers: ["{bootstrap}"]
  topic: soak
  group_id: soak
  session_timeout_ms: 6000
evaluation_set: {{path: {qrels}}}
metrics: {{cutoffs: [5, 10, 20], gains: [linear, exp]}}
windows: {{size: {WINDOW_S}s, allowed_lateness: {LATENESS_S}s, idle_timeout: {IDLE_S}s}}
schedule: {{interval: 1s}}
segments: {{keys: [model]}}
export: {{host: 127.0.0.1, port: {free_port()}}}
logging: {{format: json}}
"""
    )
    return config


def start_service(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            # -P: the installed package, not a source tree in the working directory
            [sys.executable, "-P", "-m", "monitor.cli", "run", "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def produce_in_bursts(
    bootstrap: str, traffic: MixedTraffic, rate: float, cycle: tuple[float, float], tally: Traffic
) -> None:
    """Send records at `rate` per second for `cycle[0]` seconds, then nothing for
    `cycle[1]`, and again, until told to stop; each record through the next codec's producer.

    Event time advances `STEP_MS` per valid record and never falls behind the wall clock, so
    windows close as in production, in a burst by the watermark, after it by the quiet rule.
    """
    producers = [
        KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, compression_type=codec)
        for codec in CODECS
    ]
    records = traffic.records(seed=1, count=10**9, clock=lambda: time.time_ns() // 1_000_000)
    burst, quiet = cycle
    started, sent_before = time.monotonic(), 0
    while not tally.stop.is_set():
        into_cycle = (time.monotonic() - started) % (burst + quiet)
        if into_cycle >= burst:
            sent_before = tally.produced
            time.sleep(0.1)
            continue
        due = sent_before + int(into_cycle * rate)
        while tally.produced < due:
            record = next(records)
            producer = producers[tally.produced % len(producers)]
            producer.send(
                "soak",
                key=record.key,
                value=record.value,
                headers=[("soak-intended", record.intended.encode())],
            )
            tally.produced += 1
            tally.intended[record.intended] += 1
            tally.last_event_ms = max(tally.last_event_ms, record.event_time_ms)
        time.sleep(0.02)
    for producer in producers:
        producer.flush()
        producer.close()


STEP_MS = 5  # 200 valid events per second of event time


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def last_state(log: Path) -> dict[str, Any]:
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if '"window state"' in line:
            entry: dict[str, Any] = orjson.loads(line)
            return entry
    return {}


def read_all(bootstrap: str, topic: str) -> list[Any]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    records: list[Any] = []
    while not all(
        consumer.highwater(tp) is not None and consumer.position(tp) >= consumer.highwater(tp)
        for tp in partitions
    ):
        for batch in consumer.poll(timeout_ms=500).values():
            records.extend(batch)
    consumer.close()
    return records


def committed(bootstrap: str) -> dict[int, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="soak", enable_auto_commit=False)
    offsets = {p: consumer.committed(TopicPartition("soak", p)) for p in range(PARTITIONS)}
    consumer.close()
    return offsets


def end_offsets(bootstrap: str) -> dict[int, int]:
    """Each partition's end, from a fetch (Tansu's end_offsets() is wrong)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    partitions = [TopicPartition("soak", p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    ends: dict[int, int] = {}
    while len(ends) < PARTITIONS:
        consumer.poll(timeout_ms=200, max_records=1)
        ends |= {
            tp.partition: consumer.highwater(tp) for tp in partitions if consumer.highwater(tp)
        }
    consumer.close()
    return ends


def reconcile(bootstrap: str, produced: int) -> bool:
    windows = read_all(bootstrap, "soak.windows")
    keys = Counter(record.key for record in windows)
    twice = [key for key, n in keys.items() if n > 1]
    accepted = sum(orjson.loads(record.value)["events"] for record in windows)
    outcomes: dict[tuple[int, int], set[str]] = {}
    for record in read_all(bootstrap, "soak.dlq"):
        headers = dict(record.headers)
        source = (int(headers["rankmon-source-partition"]), int(headers["rankmon-source-offset"]))
        outcomes.setdefault(source, set()).add(headers["rankmon-outcome"].decode())
    both = [source for source, seen in outcomes.items() if len(seen) > 1]
    rejected = Counter(next(iter(seen)) for seen in outcomes.values())
    total = accepted + sum(rejected.values())
    # Each source record's fate, against what the traffic meant it to be: a record with no
    # dead letter was accepted, and an event id accepted twice would be a double count.
    moved: Counter[tuple[str, str]] = Counter()
    accepted_ids: Counter[str] = Counter()
    for record in read_all(bootstrap, "soak"):
        intended = dict(record.headers)["soak-intended"].decode()
        seen = outcomes.get((record.partition, record.offset))
        outcome = next(iter(seen)) if seen else "accepted"
        if outcome != intended:
            moved[(intended, outcome)] += 1
        if outcome == "accepted":
            accepted_ids[str(orjson.loads(record.value).get("event_id"))] += 1
    counted_twice = sum(1 for n in accepted_ids.values() if n > 1)
    print(f"windows published: {len(windows)} (published twice: {len(twice)})")
    print(f"accepted in published windows: {accepted}")
    print("dead letters by outcome: " + ", ".join(f"{k}={v}" for k, v in sorted(rejected.items())))
    print(f"records with two outcomes: {len(both)}")
    print(
        "outcome other than intended: "
        + (", ".join(f"{a}->{b}={n}" for (a, b), n in sorted(moved.items())) or "none")
    )
    print(f"event ids accepted twice: {counted_twice}")
    print(f"produced {produced} = accounted {total}: {produced == total}")
    return (
        not twice
        and not both
        and not counted_twice
        and produced == total == sum(accepted_ids.values()) + len(outcomes)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=200.0, help="records per second")
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--burst", type=float, default=90.0, help="seconds of traffic per cycle")
    parser.add_argument("--quiet", type=float, default=45.0, help="seconds of silence after each")
    args = parser.parse_args()
    corpus = generate_corpus(3, queries=300)
    start_ms = time.time_ns() // 1_000_000
    traffic = MixedTraffic(corpus, start_ms=start_ms, step_ms=STEP_MS, late_by_ms=30_000)
    workdir = Path(tempfile.mkdtemp(prefix="rankmon-soak-"))
    log = workdir / "service.log"
    with EmbeddedBroker() as broker:
        for topic, partitions in (("soak", PARTITIONS), ("soak.dlq", 1), ("soak.windows", 1)):
            broker.create_topic(topic, partitions)
        bootstrap = broker.bootstrap_servers
        config = write_config(workdir, bootstrap, corpus.write_qrels(workdir / "qrels.txt"))
        service = start_service(config, log)
        tally = Traffic()
        producer = threading.Thread(
            target=produce_in_bursts,
            args=(bootstrap, traffic, args.rate, (args.burst, args.quiet), tally),
            daemon=True,
        )
        producer.start()
        print(
            f"log: {log}\n{'minute':>7} {'produced':>9} {'RSS MB':>7} {'open':>5} "
            f"{'cells':>6} {'ids':>6} {'marks':>6}"
        )
        began, restarted = time.monotonic(), False
        try:
            while time.monotonic() - began < args.minutes * 60:
                time.sleep(args.sample)
                elapsed = time.monotonic() - began
                if not restarted and elapsed >= args.minutes * 30:
                    service.send_signal(signal.SIGKILL)
                    service.wait()
                    service, restarted = start_service(config, log), True
                    print(f"{elapsed / 60:7.2f} service killed (SIGKILL) and restarted")
                state = last_state(log)
                print(
                    f"{elapsed / 60:7.2f} {tally.produced:9d} {rss_mb(service.pid):7.1f} "
                    f"{state.get('open_windows', '-'):>5} {state.get('cells', '-'):>6} "
                    f"{state.get('event_ids', '-'):>6} {state.get('published_marks', '-'):>6}",
                    flush=True,
                )
            tally.stop.set()
            producer.join()
            # Quiet now: every window closes on processing time and the commits reach the end.
            ends = end_offsets(bootstrap)
            deadline = time.monotonic() + IDLE_S + WINDOW_S + LATENESS_S + 120
            while committed(bootstrap) != ends and time.monotonic() < deadline:
                time.sleep(1)
            print(f"committed {committed(bootstrap)}, ends {ends}")
            service.send_signal(signal.SIGTERM)
            status = service.wait(60)
        finally:
            if service.poll() is None:
                service.kill()
        print(f"service exit status after SIGTERM: {status}; RSS samples above")
        print("intended: " + ", ".join(f"{k}={v}" for k, v in sorted(tally.intended.items())))
        ok = reconcile(bootstrap, tally.produced)
    return 0 if ok and status == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
