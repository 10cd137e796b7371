"""What the worst producer and the worst clients the defaults admit cost, beside honest ones.

    .venv/bin/python bench/hostile.py [--queries 20000] [--clients 8] [--probes 200]

Three measurements, each printed beside its baseline measured in the same run:

1. Memory and answer sizes. A service (the real `Monitor` and HTTP server; the Kafka
   consumer and producer are in-memory fakes) takes one window of events from a stream, in a
   child process of its own so that its peak RSS is its own: "honest" events (short ids,
   `model` and `market` among 10 values each) against the worst events the defaults admit
   (512-byte event, query and doc ids, 1000 of them a ranking, 128-byte segment values, a
   new value of each key in every event until `segments.max_values` and
   `max_combinations` stop them, 50 sampled rankings per window). Printed: peak RSS, and the
   bytes of `/metrics`, the page at `/`, `/api/v1/segments`.
2. Probe latency under load: `/healthz` asked `--probes` times while `--clients` clients loop
   on `/explain` of a window of `--queries` queries, against the same probes with no load:
   p50, p99 and max in milliseconds.
3. The streaming run reader on files whose lines end in `\\r` only (one unfinished line that
   spans every 4 MiB chunk): seconds for 64, 128 and 256 MiB, and the ratio per doubling
   (2.0 is linear; the reader that re-split the line at each chunk measured 4x).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from monitor import native
from monitor.config.loader import load_config
from monitor.kafka.consumer import Poll, SourceRecord, UnreadableBatch
from monitor.scoring.evalset import EvaluationSet
from monitor.service import Monitor, MonitorIo
from monitor.testing.clock import FakeClock

T0 = 1_767_225_600_000
WINDOW_MS = 10_000
CONFIG = """
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: events}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
segments: {{keys: [market, model]}}
metrics: {{cutoffs: [5, 10, 20]}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 5s}}
schedule: {{interval: 1s}}
export: {{host: 127.0.0.1, port: 0}}
logging: {{level: CRITICAL}}
"""


class MemoryStream:
    """One partition in memory, in place of the Kafka consumer: it holds only what has not
    been polled yet, so the bench's RSS is the service's, not the stream's."""

    def __init__(self) -> None:
        self.unread: list[SourceRecord] = []
        self.next_offset = 0
        self.broker_up = self.group_joined = True
        self.errors: dict[str, int] = {}
        self.unreadable: dict[int, UnreadableBatch] = {}
        self._assigned = False

    @property
    def assignment(self) -> frozenset[int]:
        return frozenset({0})

    def append(self, value: bytes, timestamp_ms: int) -> None:
        self.unread.append(SourceRecord("events", 0, self.next_offset, timestamp_ms, None, value))
        self.next_offset += 1

    def poll(self, timeout_ms: int = 1000) -> Poll:
        records, self.unread = self.unread, []
        assigned = frozenset() if self._assigned else self.assignment
        self._assigned = True
        return Poll(records, frozenset(), assigned)

    def take_unreadable(self) -> list[UnreadableBatch]:
        return []

    def commit(self, offsets: object) -> bool:
        return True

    def rewind(self, partitions: object) -> bool:
        return True

    def committed(self, partitions: Any) -> dict[int, int | None]:
        return dict.fromkeys(partitions)

    def lag(self, partition: int) -> int | None:
        return len(self.unread)

    def topic_partitions(self) -> frozenset[int] | None:
        return self.assignment

    def close(self) -> None:
        pass


class Discard:
    """A producer that drops what it is sent, and a windows topic with nothing to restore."""

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Any) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def read(self, take: Any, needs: Any = None) -> None:
        pass

    def tail(self) -> Discard:
        return self  # alone in its group: never followed

    def poll(self) -> list[Any]:
        return []


def service(directory: Path, queries: int) -> tuple[Monitor, MemoryStream, FakeClock]:
    lines = [f"q{i} 0 best{i} 3\nq{i} 0 good{i} 1\n" for i in range(queries)]
    (directory / "qrels.txt").write_text("".join(lines))
    (directory / "rankmon.yaml").write_text(CONFIG.format())
    clock, stream, discard = FakeClock(T0), MemoryStream(), Discard()
    monitor = Monitor(
        load_config(directory / "rankmon.yaml", environ={}),
        io=MonitorIo(clock=clock, source=stream, producer=discard, windows_topic=discard),
    )
    monitor.start()
    return monitor, stream, clock


def finalize(monitor: Monitor, clock: FakeClock, steps: int = 40) -> None:
    for _ in range(steps):
        monitor.step()
        clock.advance(100)
    clock.advance(300_000)
    for _ in range(steps):
        monitor.step()
        clock.advance(100)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return bytes(answer.read())


def sizes_scenario(kind: str, queries: int) -> dict[str, Any]:
    """One window of honest or hostile events through the service; sizes and peak RSS."""
    with tempfile.TemporaryDirectory() as folder:
        monitor, stream, clock = service(Path(folder), queries)
        long_id = "x" * 500
        for i in range(queries):
            event: dict[str, Any]
            if kind == "honest":
                event = {
                    "event_id": f"e{i}",
                    "query_id": f"q{i % queries}",
                    "ranking": [f"best{i}", f"good{i}", "d1", "d2", "d3"],
                    "segment": {"model": f"v{i % 10}", "market": f"m{i % 7}"},
                }
            else:
                event = {
                    "event_id": f"{i:012d}{long_id}",
                    "query_id": f"q{i % queries}",
                    "ranking": [f"{i:06d}{d:06d}{long_id}" for d in range(1000)],
                    "segment": {"model": f"{i:06d}" + "v" * 122, "market": f"{i:06d}" + "m" * 122},
                }
            event["event_time"] = T0 + (i % WINDOW_MS)
            stream.append(orjson.dumps(event), T0 + (i % WINDOW_MS))
            if i % 20 == 19:
                monitor.step()
        finalize(monitor, clock)
        base = monitor.metrics_url.replace("/metrics", "")
        result = {
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "metrics_kb": len(get(f"{base}/metrics")) / 1024,
            "page_kb": len(get(f"{base}/")) / 1024,
            "segments_kb": len(get(f"{base}/api/v1/segments")) / 1024,
        }
        monitor.close()
        return result


def probes_scenario(queries: int, clients: int, probes: int) -> dict[str, list[float]]:
    """`/healthz` latencies without load and while clients loop on a large explanation."""
    with tempfile.TemporaryDirectory() as folder:
        monitor, stream, clock = service(Path(folder), queries)
        for window in range(2):  # two windows: the second is explained against the first
            for i in range(queries):
                ranking = [f"best{i}", f"good{i}", "d1"] if window == 0 else ["d1", f"good{i}"]
                event = {
                    "event_id": f"{window}-{i}",
                    "query_id": f"q{i}",
                    "ranking": ranking,
                    "segment": {"model": "v1", "market": "de"},
                    "event_time": T0 + window * WINDOW_MS + (i % 5_000),
                }
                stream.append(orjson.dumps(event), T0 + window * WINDOW_MS + (i % 5_000))
        finalize(monitor, clock, steps=80)
        base = monitor.metrics_url.replace("/metrics", "")
        explain = (
            f"{base}/explain?segment=market%3Dde%2Cmodel%3Dv1&measure=ndcg%4010"
            f"&window={T0 + WINDOW_MS}"
        )
        get(explain)  # it answers, and warms up

        def latencies() -> list[float]:
            taken = []
            for _ in range(probes):
                began = time.perf_counter()
                get(f"{base}/healthz")
                taken.append((time.perf_counter() - began) * 1000)
                time.sleep(0.01)
            return taken

        quiet = latencies()
        stop = threading.Event()
        served = [0]

        def client() -> None:
            while not stop.is_set():
                get(explain)
                served[0] += 1

        threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        loaded = latencies()
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        monitor.close()
        return {"quiet": quiet, "loaded": loaded, "explanations": [float(served[0])]}


def reader_scenario() -> dict[str, float]:
    """Seconds to stream-code a run whose lines end in '\\r' only, at three sizes."""
    index = EvaluationSet.from_judgments({"q1": {"d1": 1}}).judgment_index()
    assert index is not None, "the C accelerators are not built"
    line = b"q1 Q0 d1 1 0.5 run\r"
    chunk = line * (4 * 1024 * 1024 // len(line))
    seconds = {}
    for mib in (64, 128, 256):
        coder = native.speedups.run_coder(index, False, 1000, 1000)
        began = time.perf_counter()
        for _ in range(mib // 4):
            coder.feed(chunk)
        coder.finish()
        seconds[f"{mib}"] = time.perf_counter() - began
    return seconds


def child(args: list[str]) -> Any:
    done = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"p50 {statistics.median(ordered):7.2f}  p99 {p99:7.2f}  max {ordered[-1]:7.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--child", choices=["honest", "hostile", "probes", "reader"])
    args = parser.parse_args()
    if args.child in ("honest", "hostile"):
        print(json.dumps(sizes_scenario(args.child, 1_000)))
        return
    if args.child == "probes":
        print(json.dumps(probes_scenario(args.queries, args.clients, args.probes)))
        return
    if args.child == "reader":
        print(json.dumps(reader_scenario()))
        return

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print("1. one window of 1,000 events, honest against the worst the defaults admit")
    honest, hostile = child(["--child", "honest"]), child(["--child", "hostile"])
    for key, unit in (("rss_mb", "MB"), ("metrics_kb", "KB"), ("page_kb", "KB")):
        ratio = hostile[key] / honest[key]
        print(f"   {key:12} honest {honest[key]:9.1f} {unit}  worst {hostile[key]:9.1f} {unit}"
              f"  ratio {ratio:5.2f}")  # fmt: skip
    ratio = hostile["segments_kb"] / honest["segments_kb"]
    print(f"   {'segments_kb':12} honest {honest['segments_kb']:9.1f} KB  "
          f"worst {hostile['segments_kb']:9.1f} KB  ratio {ratio:5.2f}")  # fmt: skip
    print(f"2. /healthz, {args.probes} probes: quiet, then {args.clients} clients looping on "
          f"/explain of a {args.queries}-query window")  # fmt: skip
    probes = child(["--child", "probes", "--queries", str(args.queries),
                    "--clients", str(args.clients), "--probes", str(args.probes)])  # fmt: skip
    print(f"   quiet   {percentiles(probes['quiet'])}")
    print(f"   loaded  {percentiles(probes['loaded'])}  "
          f"({int(probes['explanations'][0])} explanations served meanwhile)")  # fmt: skip
    print("3. the streaming run reader, one line spanning every 4 MiB chunk ('\\r' line ends)")
    reader = child(["--child", "reader"])
    sizes = sorted(reader, key=int)
    for before, after in itertools.pairwise(sizes):
        print(f"   {before:>4} MiB {reader[before]:6.2f} s -> {after:>4} MiB {reader[after]:6.2f} s"
              f"  x{reader[after] / reader[before]:.2f} per doubling")  # fmt: skip


if __name__ == "__main__":
    main()
