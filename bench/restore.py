"""Restore cost against the windows topic's history: 1 hour, 1 day and 7 days of shares.

    .venv/bin/python bench/restore.py                 # 1h, 1d, 7d
    .venv/bin/python bench/restore.py --days 1        # 1h and 1d only

An embedded Tansu broker (memory storage). For each history, a windows topic is seeded with
the shares one instance would have published: 5-minute windows, 10 model segments, 300
queries each with all 17 measures of the default config, gzipped by rankmon's own producer,
each with its through offset. The events partition's committed offset sits in the newest
window, as after a crash. Then, in a fresh process each (so peak RSS is the restore's own),
the restore an assignment runs: the tail the restore needs (`RestoreNeeds`: the committed
offset, and the 25 windows the config's drop rule looks back on), marks and the alert
engine's restore; and, as the baseline in the same run, the whole topic read as before.

Prints, per history: shares on the topic, shares read, seconds and peak RSS above the
process's start, for the tail read and for the whole-topic baseline. The target: 1 day and
7 days each within 1 s and 50 MB of the 1-hour figure.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time

from monitor.checkpoint.share import WindowShare, publish_shares
from monitor.demo.broker import EmbeddedBroker
from monitor.kafka.producer import RecordProducer
from monitor.scoring.catalog import monitor_keys
from monitor.windows.summary import WindowSummary

WINDOW_MS = 300_000
SEGMENTS = 10
QUERIES = 300
EVENTS_PER_WINDOW = 1_000  # per segment: the through offsets advance by this
START_MS = 1_767_225_600_000
DROP_RULE = {"name": "drop", "measure": "ndcg@10", "drop": {"relative": 0.05}}


def seed(broker: EmbeddedBroker, topic: str, windows: int) -> int:
    """Publish `windows` x SEGMENTS shares; return the committed offset to restore from."""
    broker.create_topic(topic, 1)
    keys = [str(key) for key in monitor_keys((5, 10, 20), ("linear", "exp"))]
    rng = random.Random(7)
    producer = RecordProducer(bootstrap_servers=broker.bootstrap_servers, compression_type="gzip")
    offset = 0
    for window in range(windows):
        start = START_MS + window * WINDOW_MS
        shares = []
        for segment in range(SEGMENTS):
            offset += EVENTS_PER_WINDOW
            means = {f"q{q}": {k: rng.random() for k in keys} for q in range(QUERIES)}
            summary = WindowSummary(
                window="5m",
                start_ms=start,
                end_ms=start + WINDOW_MS,
                segment=(("model", f"m{segment}"),),
                evaluation_set_version="v1",
                events=EVENTS_PER_WINDOW,
                queries=QUERIES,
                evaluation_set_queries=QUERIES,
                means={k: 0.5 for k in keys},
                sums={k: 150.0 for k in keys},
                event_means={k: 0.5 for k in keys},
                query_means=means,
            )
            shares.append(WindowShare(summary, frozenset({0}), {0: offset}))
        publish_shares(producer, topic, shares)
    producer.close()
    return offset - EVENTS_PER_WINDOW // 2  # inside the newest window: as after a crash


CHILD = """
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
from monitor.alerting import AlertEngine
from monitor.config.alerts import parse_alerting_config
from monitor.clock import SystemClock
from monitor.checkpoint.restore import ShareRestore
from monitor.checkpoint.share_reader import RestoreNeeds, read_shares
from monitor.windows.spec import WindowSpec
from monitor.windows.engine import EventWindows
bootstrap, topic, committed, how, rule = sys.argv[1:6]
committed, whole, rule = int(committed), how == "whole", json.loads(rule)
alerting = parse_alerting_config({"rules": [rule]}, cutoffs=(5, 10, 20), gains=("linear", "exp"),
                                 segment_keys=("model",), window="5m")
keep = max(r.restore_windows for r in alerting.rules)
windows = EventWindows(WindowSpec.tumbling(300_000), ["ndcg@10:linear"], SystemClock())
engine = AlertEngine(alerting, start_ms=0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
restore = ShareRestore(windows, {0}, keep, {r.measure for r in alerting.rules})
needs = None if whole else RestoreNeeds({0: committed}, keep, 300_000)
read_shares(bootstrap_servers=bootstrap, topic=topic, timeout_s=600, take=restore.take, needs=needs)
engine.restore(restore.owned_summaries())
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"read": restore.read, "seconds": seconds, "peak_mb": (peak - before) / 1024}))
"""


def restore_in_child(bootstrap: str, topic: str, committed: int, whole: bool) -> dict[str, float]:
    """The restore in a fresh process; its figures."""
    how = "whole" if whole else "tail"
    done = subprocess.run(
        # -P: the installed package, not a source tree in the working directory
        [
            sys.executable,
            "-P",
            "-c",
            CHILD,
            bootstrap,
            topic,
            str(committed),
            how,
            json.dumps(DROP_RULE),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if done.returncode:
        raise SystemExit(f"the restore failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=7, help="the longest history (default 7)")
    args = parser.parse_args()
    histories = [("1 hour", 12), ("1 day", 288)] + ([("7 days", 2016)] if args.days >= 7 else [])
    results = []
    with EmbeddedBroker() as broker:
        for name, windows in histories:
            topic = f"windows-{windows}"
            began = time.monotonic()
            committed = seed(broker, topic, windows)
            seeded = time.monotonic() - began
            tail = restore_in_child(broker.bootstrap_servers, topic, committed, whole=False)
            whole = restore_in_child(broker.bootstrap_servers, topic, committed, whole=True)
            results.append((name, windows * SEGMENTS, tail, whole))
            print(f"seeded {name}: {windows * SEGMENTS} shares in {seeded:.0f} s", flush=True)
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(bench process peak RSS {own_rss:.0f} MB)")
    print(
        f"{'history':>8} {'shares':>7} | {'tail read':>9} {'seconds':>8} {'peak MB':>8}"
        f" | {'whole read':>10} {'seconds':>8} {'peak MB':>8}"
    )
    for name, shares, tail, whole in results:
        print(
            f"{name:>8} {shares:>7} | {tail['read']:>9.0f} {tail['seconds']:>8.2f}"
            f" {tail['peak_mb']:>8.1f} | {whole['read']:>10.0f} {whole['seconds']:>8.2f}"
            f" {whole['peak_mb']:>8.1f}"
        )
    hour = results[0][2]
    met = True
    for name, _, tail, _ in results[1:]:
        extra_s, extra_mb = tail["seconds"] - hour["seconds"], tail["peak_mb"] - hour["peak_mb"]
        ok = extra_s <= 1.0 and extra_mb <= 50.0
        met &= ok
        print(
            f"{name} vs 1 hour: +{extra_s:.2f} s, +{extra_mb:.1f} MB"
            f" (target <= 1 s and <= 50 MB): {'met' if ok else 'MISSED'}"
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
