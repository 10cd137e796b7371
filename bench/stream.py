"""Stream throughput and memory: events/s from a Tansu topic through finalized windows.

    .venv/bin/python bench/stream.py                 # the issue's 1M events
    .venv/bin/python bench/stream.py --events 100000 # a quicker run
    .venv/bin/python bench/stream.py --comparison    # with and without a comparison
    .venv/bin/python bench/stream.py --samples       # with and without ranking samples
    .venv/bin/python bench/stream.py --measures bpref  # with and without more measures

In one run, on one topic (one partition) holding N ranking events of 100 documents each
(1000 evaluation-set queries, ~20 judged documents each, two model segments, every event in
one 1-hour window):

1. raw kafka-python: a plain KafkaConsumer reads all N records (the baseline);
2. rankmon: a `Monitor` on the same topic polls, decodes, validates, scores nDCG@5/10/20
   (linear and exp), precision/recall/judged@5/10/20, MRR and MAP, windows every event,
   then finalizes and publishes the window; events/s counts from the first poll to the
   published window. rankmon's consumer reads the fetched record batches in C
   (monitor/kafka/records.py); the baseline is kafka-python as shipped, its own reader.

Both are measured `--rounds` times (default 3), alternating, each rankmon round with its own
consumer group and output topics; the raw rate on this shared 2-core machine varies by a
third from run to run, so it prints every round and compares the medians. It prints both
rates and their ratio (target >= 0.7, and >= 45k events/s), and the process's resident memory
after 10k events and after all N in the one window, in the first round (target: within 50 MB:
state grows with queries x windows x segments, never with events, except the dedupe ids of
open windows, which are part of what is measured).

`--comparison`: each round runs rankmon twice, without and with one comparison configured
(v2 against v1 on nDCG@10, `comparisons:`), in an order swapped every round, and prints the
two medians and their ratio (target: within 10 %). `--samples`: the same, without and with
the explanations' ranking samples (`export.explain.max_rankings: 0` against the default).
`--measures bpref,set_P`: the same, without and with those measures streamed too
(`metrics.measures`).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import orjson
from kafka import KafkaConsumer, KafkaProducer

from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.service import Monitor

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a window start
QUERIES = 1000
DEPTH = 100


def rss_mb() -> float:
    """Resident set size of this process, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def write_qrels(path: Path, rng: random.Random) -> None:
    lines = [
        f"q{q} 0 d{q}_{j} {rng.choice((0, 0, 1, 1, 2, 3))}\n"
        for q in range(QUERIES)
        for j in range(20)
    ]
    path.write_text("".join(lines))


def produce(bootstrap: str, topic: str, events: int, rng: random.Random) -> float:
    """Write `events` ranking events (all in the window [T0, T0 + 1h)); returns seconds."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1 << 20, acks=1)
    unjudged = [f"u{j}" for j in range(2000)]
    started = time.perf_counter()
    for n in range(events):
        q = rng.randrange(QUERIES)
        judged = [f"d{q}_{j}" for j in rng.sample(range(20), 15)]
        ranking = judged + rng.sample(unjudged, DEPTH - len(judged))
        rng.shuffle(ranking)
        value = orjson.dumps(
            {
                "event_id": f"e{n}",
                "query_id": f"q{q}",
                "ranking": ranking,
                "event_time": T0 + n * 3_000_000 // events,
                "segment": {"model": "v1" if n % 2 else "v2"},
            }
        )
        producer.send(topic, key=f"q{q}".encode(), value=value)
    # a closer past the window's end moves the watermark so that the window finalizes
    closer = {
        "event_id": "closer",
        "query_id": "q0",
        "ranking": ["d0_0"],
        "event_time": T0 + 3_700_000,
    }
    producer.send(topic, key=b"q0", value=orjson.dumps(closer))
    producer.flush()
    producer.close()
    return time.perf_counter() - started


def raw_consume(bootstrap: str, topic: str, expected: int) -> float:
    """Seconds a plain KafkaConsumer takes to read `expected` records."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        max_poll_records=500,
    )
    seen = 0
    started = None
    while seen < expected:
        batches = consumer.poll(timeout_ms=1000)
        if started is None and batches:
            started = time.perf_counter()
        seen += sum(len(records) for records in batches.values())
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.close()
    return elapsed


COMPARISON = """
comparisons:
  - {name: v2-vs-v1, baseline: {model: v1}, candidate: {model: v2}, measures: [ndcg@10]}
"""


NO_SAMPLES = "export: {host: 127.0.0.1, port: 0, explain: {max_rankings: 0}}\n"


def monitor_config(
    workdir: Path, bootstrap: str, topic: str, run: int = 0, extra: str = ""
) -> Path:
    config = workdir / f"rankmon-{run}.yaml"
    config.write_text(
        f"""
kafka:
  bootstrap_servers: ["{bootstrap}"]
  topic: {topic}
  dead_letter_topic: {topic}.dlq-{run}
  windows_topic: {topic}.windows-{run}
  group_id: bench-{topic}-{run}
  session_timeout_ms: 6000
  max_poll_records: 5000
evaluation_set: {{path: {workdir / "qrels.txt"}, reload: {{watch: false}}}}
metrics: {{cutoffs: [5, 10, 20], gains: [linear, exp]}}
windows: {{size: 1h, allowed_lateness: 1s, idle_timeout: 1h}}
schedule: {{interval: 1h}}
segments: {{keys: [model]}}
export: {{host: 127.0.0.1, port: 0}}
logging: {{level: WARNING}}
alerts: {{log: false}}
{extra}"""
    )
    for section, default in (("export:", "export: {host"), ("metrics:", "metrics: {cutoffs")):
        if extra.startswith(section):  # the extra's section replaces the default one
            lines = config.read_text().splitlines(keepends=True)
            first = next(n for n, line in enumerate(lines) if line.startswith(default))
            config.write_text("".join(lines[:first] + lines[first + 1 :]))
    return config


def run_monitor(config: Path, events: int) -> tuple[float, float, float]:
    """Seconds from the first poll to the published window; RSS after 10k and after all."""
    monitor = Monitor(load_config(config, environ={}))
    monitor.start()
    totals = monitor.snapshot
    rss_10k: float | None = None
    started = None
    try:
        while True:
            monitor.step()
            accepted = totals().outcomes.get("accepted", 0)
            if started is None and accepted:
                started = time.perf_counter()
            if rss_10k is None and accepted >= 10_000:
                rss_10k = rss_mb()
            if accepted >= events + 1:
                break
        rss_all = rss_mb()
        monitor.tick()  # finalize and publish the window
        elapsed = time.perf_counter() - (started or time.perf_counter())
        if not totals().history:
            raise SystemExit("the window did not finalize")
    finally:
        monitor.close()
    return elapsed, rss_10k if rss_10k is not None else rss_all, rss_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--comparison", action="store_true", help="rankmon without and with one comparison"
    )
    parser.add_argument(
        "--samples", action="store_true", help="rankmon without and with ranking samples"
    )
    parser.add_argument(
        "--measures", help="rankmon without and with these streamed too (comma-separated keys)"
    )
    args = parser.parse_args()
    if args.measures:
        names = ", ".join(f'"{name.strip()}"' for name in args.measures.split(","))
        streamed = f"metrics: {{cutoffs: [5, 10, 20], gains: [linear, exp], measures: [{names}]}}"
        compare_rounds(args, ("default measures", ""), (f"with {args.measures}", streamed))
        return
    if args.comparison:
        compare_rounds(args, ("without comparisons", ""), ("with one comparison", COMPARISON))
        return
    if args.samples:
        compare_rounds(args, ("without samples", NO_SAMPLES), ("with samples", ""))
        return
    rng = random.Random(args.seed)
    total = args.events + 1
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker() as broker:
        workdir = Path(tmp)
        write_qrels(workdir / "qrels.txt", rng)
        topic = "bench-events"
        broker.create_topic(topic, 1)
        for run in range(args.rounds):
            broker.create_topic(f"{topic}.dlq-{run}", 1)
            broker.create_topic(f"{topic}.windows-{run}", 1)
        seconds = produce(broker.bootstrap_servers, topic, args.events, rng)
        print(f"produced {total:,} events in {seconds:.1f} s")
        raw_rates: list[float] = []
        rates: list[float] = []
        memory: tuple[float, float] | None = None
        for run in range(args.rounds):
            raw_rates.append(total / raw_consume(broker.bootstrap_servers, topic, total))
            config = monitor_config(workdir, broker.bootstrap_servers, topic, run)
            elapsed, rss_10k, rss_all = run_monitor(config, args.events)
            rates.append(total / elapsed)
            memory = memory or (rss_10k, rss_all)
            print(
                f"round {run + 1}: raw kafka-python {raw_rates[-1]:>9,.0f} events/s, "
                f"rankmon {rates[-1]:>9,.0f} events/s"
            )
        raw_rate, rate = statistics.median(raw_rates), statistics.median(rates)
        print(f"raw kafka-python consume:   {raw_rate:>10,.0f} events/s (median)")
        print(f"rankmon through windows:    {rate:>10,.0f} events/s (median; target >= 45,000)")
        print(f"ratio rankmon / raw:        {rate / raw_rate:10.2f}   (target >= 0.70)")
        assert memory is not None
        rss_10k, rss_all = memory
        print(f"RSS after 10k events:       {rss_10k:10.1f} MB")
        print(f"RSS after {args.events:,} events:  {rss_all:8.1f} MB")
        print(f"RSS growth:                 {rss_all - rss_10k:10.1f} MB   (target <= 50)")


def compare_rounds(
    args: argparse.Namespace, before: tuple[str, str], after: tuple[str, str]
) -> None:
    """rankmon with the config extras `before` and `after` (label, YAML), alternating."""
    rng = random.Random(args.seed)
    total = args.events + 1
    extras = {"without": before[1], "with": after[1]}
    rates: dict[str, list[float]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker() as broker:
        workdir = Path(tmp)
        write_qrels(workdir / "qrels.txt", rng)
        topic = "bench-events"
        broker.create_topic(topic, 1)
        for run in range(2 * args.rounds):
            broker.create_topic(f"{topic}.dlq-{run}", 1)
            broker.create_topic(f"{topic}.windows-{run}", 1)
        seconds = produce(broker.bootstrap_servers, topic, args.events, rng)
        print(f"produced {total:,} events in {seconds:.1f} s")
        run = 0
        for number in range(args.rounds):
            order = ("without", "with") if number % 2 == 0 else ("with", "without")
            for kind in order:
                config = monitor_config(workdir, broker.bootstrap_servers, topic, run, extras[kind])
                elapsed, _, _ = run_monitor(config, args.events)
                rates[kind].append(total / elapsed)
                run += 1
            print(
                f"round {number + 1}: {before[0]} {rates['without'][-1]:>9,.0f} events/s, "
                f"{after[0]} {rates['with'][-1]:>9,.0f} events/s"
            )
        without, with_ = statistics.median(rates["without"]), statistics.median(rates["with"])
        print(f"rankmon {before[0]}: {without:>10,.0f} events/s (median)")
        print(f"rankmon {after[0]}: {with_:>10,.0f} events/s (median)")
        print(f"ratio:  {with_ / without:10.3f}   (target >= 0.90)")


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
