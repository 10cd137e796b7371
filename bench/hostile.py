"""What the worst producer and the worst clients the defaults admit cost, beside honest ones.

    .venv/bin/python bench/hostile.py [--queries 20000] [--clients 8] [--probes 200]

Six measurements, each printed beside its baseline measured in the same run:

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
4. The ranker's answer: `RankerClient` with the default limits (`replay.ranker`:
   `max_response_bytes` 32 MiB, `timeout` 5 s, `concurrency` 4) asks a loopback HTTP server
   40 queries: honest answers of 100 ids, against answers announcing 1 GiB each. Peak RSS of
   the replayer's process, and the outcomes.
5. The judging topics: the judgments one day at the default budget brings (4,800, 200 to-judge
   pairs an hour), against the worst the defaults admit: 500,000 distinct judgments (the book
   keeps `judging.max_judgments`, 250,000; the rest are refused) and 2,000,000 made-up pairs
   on the to-judge topic (`MAX_ASKED` kept). Peak RSS of the judging loop's book, its merged
   evaluation set and its pair queue.
6. Control records on the events topic: the service of (1) with one honest window, against the
   same window and the worst replay notices the defaults admit beside it: 4,096 end markers
   of 512-byte replay ids with 128-byte labels, and 100,000 failed queries of 512-byte event
   ids spread over the allowed future (`events.max_future`, 5 minutes: 30 windows). Peak RSS.
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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from monitor import native
from monitor.config.loader import load_config
from monitor.declare import read_settings
from monitor.judging.judgments import JudgmentBook, Refusal, decode_judgment
from monitor.judging.pairs import PairQueue
from monitor.judging.settings import JudgingConfig
from monitor.kafka.consumer import Poll, SourceRecord, UnreadableBatch
from monitor.limits import DEFAULT_LIMITS
from monitor.replay.ranker import RankerClient
from monitor.replay.settings import RankerSettings
from monitor.replay.topics import Query
from monitor.scoring.evalset import EvaluationSet
from monitor.sections import ConfigSection
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


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Answers(BaseHTTPRequestHandler):
    """An honest ranker (100 ids) or one announcing 1 GiB and streaming it until hung up."""

    protocol_version = "HTTP/1.1"
    huge = False

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if not self.huge:
            body = orjson.dumps({"hits": [{"id": f"doc{i}", "score": 1.0} for i in range(100)]})
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Content-Length", str(1 << 30))
        self.end_headers()
        block = b" " * (1 << 20)
        try:
            for _ in range(1024):
                self.wfile.write(block)
        except OSError:
            pass
        self.close_connection = True


def ranker_scenario(kind: str) -> dict[str, Any]:
    """40 queries through `RankerClient` with the default limits; peak RSS and outcomes."""
    handler = type("Answers", (_Answers,), {"huge": kind == "hostile"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/search"
    settings = read_settings(RankerSettings, ConfigSection({"url": url}, "replay.ranker", {}))
    client = RankerClient(settings, 100)
    with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
        answers = list(pool.map(client.ask, [Query(f"q{i}", f"text {i}") for i in range(40)]))
    client.close()
    server.shutdown()
    outcomes = Counter(f"{a.outcome} {a.reason}".strip() for a in answers)
    return {"rss_mb": peak_rss_mb(), "outcomes": dict(outcomes)}


def judging_scenario(kind: str) -> dict[str, Any]:
    """The judging loop's book, merged set and pair queue fed with the default settings."""
    config = JudgingConfig()
    queries = 1_000
    base = EvaluationSet.from_judgments(
        {f"q{i}": {f"best{i}": 3, f"good{i}": 1} for i in range(queries)}
    )
    book = JudgmentBook.for_config(config, base)
    queue = PairQueue(config.cutoff, "linear", config.budget_per_hour, config.max_pending)
    judgments, pairs = (4_800, 4_800) if kind == "honest" else (500_000, 2_000_000)
    now = T0 + 86_400_000
    outcomes: Counter[str] = Counter()
    for i in range(judgments):
        doc = f"doc{i:07d}" if kind == "honest" else f"{i:07d}" + "d" * 100
        value = {"query_id": f"q{i % queries}", "doc_id": doc, "grade": 1 + 2 * (i % 2),
                 "source": "llm:judge@v1", "judged_at": T0 + i}  # fmt: skip
        record = SourceRecord("j", 0, i, T0 + i, None, orjson.dumps(value))
        decoded = decode_judgment(record, DEFAULT_LIMITS, now)
        outcome = decoded if isinstance(decoded, Refusal) else book.add(decoded)
        outcomes[outcome.reason if isinstance(outcome, Refusal) else outcome] += 1
    for i in range(pairs):
        queue.was_asked((f"q{i % queries}", f"asked{i:08d}"), T0 + i)
    merged = book.merged()
    return {
        "rss_mb": peak_rss_mb(),
        "kept": book.kept,
        "asked": len(queue.asked),
        "judged_pairs": merged.num_judgments,
        "outcomes": dict(outcomes),
    }


def notices_scenario(kind: str, queries: int) -> dict[str, Any]:
    """One honest window through the service, alone or beside the worst replay notices."""
    with tempfile.TemporaryDirectory() as folder:
        monitor, stream, clock = service(Path(folder), queries)
        for i in range(queries):
            event = {"event_id": f"e{i}", "query_id": f"q{i}", "ranking": [f"best{i}", "d1"],
                     "segment": {"model": "v1", "market": "de"}, "event_time": T0 + i}  # fmt: skip
            stream.append(orjson.dumps(event), T0 + i)
        if kind == "hostile":
            long = "r" * 500
            labels = {"model": "v" * 128, "market": "m" * 128}
            for i in range(4_096):
                replay = {"id": f"{i:012d}{long}", "end": True, "events": 0, "started": T0}
                stream.append(orjson.dumps({"segment": labels, "replay": replay}), T0 + 1_000)
            for i in range(100_000):
                at = T0 + (i % 30) * WINDOW_MS + 1_000
                failed = {"event_id": f"{i:012d}{long}", "query_id": f"q{i % queries}",
                          "segment": labels, "event_time": at,
                          "replay": {"id": f"{i % 4_096:012d}{long}", "outcome": "error",
                                     "reason": "timeout"}}  # fmt: skip
                stream.append(orjson.dumps(failed), at)
                if i % 2_000 == 1_999:
                    monitor.step()
        finalize(monitor, clock)
        monitor.close()
        return {"rss_mb": peak_rss_mb(), "outcomes": dict(monitor.snapshot().outcomes)}


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
    parser.add_argument(
        "--child",
        choices=["honest", "hostile", "probes", "reader", "ranker", "judging", "notices"],
    )
    parser.add_argument("--kind", choices=["honest", "hostile"], default="honest")
    args = parser.parse_args()
    scenarios = {"ranker": ranker_scenario, "judging": judging_scenario}
    if args.child in scenarios:
        print(json.dumps(scenarios[args.child](args.kind)))
        return
    if args.child == "notices":
        print(json.dumps(notices_scenario(args.kind, 1_000)))
        return
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
    titles = {
        "ranker": "4. the ranker's answer: 40 queries, 100 ids each against 1 GiB each",
        "judging": "5. the judging topics: a day at the default budget against the worst admitted",
        "notices": "6. one window of 1,000 events, alone against beside the worst replay notices",
    }
    for scenario, title in titles.items():
        print(title)
        honest = child(["--child", scenario, "--kind", "honest"])
        worst = child(["--child", scenario, "--kind", "hostile"])
        print(f"   rss_mb       honest {honest['rss_mb']:9.1f} MB  worst {worst['rss_mb']:9.1f} MB"
              f"  ratio {worst['rss_mb'] / honest['rss_mb']:5.2f}")  # fmt: skip
        for key in sorted(set(worst) - {"rss_mb"}):
            print(f"   {key:12} honest {honest[key]}  worst {worst[key]}")


if __name__ == "__main__":
    main()
