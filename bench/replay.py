"""Replay throughput: queries/s of `rankmon replay` against a local HTTP ranker.

    .venv/bin/python bench/replay.py                  # 10,000 queries at concurrency 1, 16, 64
    .venv/bin/python bench/replay.py --queries 2000   # a quicker run

The ranker is the demo's synthetic ranker over HTTP (`monitor.demo.http_ranker`), in a process
of its own (so its work does not share this process's interpreter), answering each query with
20 documents. At each concurrency, in one run, alternating `--rounds` times:

1. baseline: the same client loop with no rankmon work: a thread pool of that many workers,
   each with its kept-alive `http.client` connection, sending the same POST bodies and reading
   the answers, nothing more;
2. rankmon: `run_replay` with `RankerClient` (request templates, answer parsing, outcome per
   query, retries armed, each document's title and snippet kept unless `--no-fields`)
   publishing every record and the end markers to a Tansu topic through the replayer's own
   `KafkaPublisher.connect` (acks=all, lz4 as `replay.compression`'s default), with the
   progress bar `rankmon replay --once` shows on a terminal (drawn to /dev/null).

It prints both medians in queries/s and their ratio (rankmon / baseline): what rankmon's own
work costs a replay, at the concurrency a team would use. The machine has 2 cores: the ranker
process and this one share them, so the absolute figures are this machine's, the ratio the
point.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection

from rich.console import Console
from rich.progress import Progress

from monitor.declare import read_settings
from monitor.demo.broker import EmbeddedBroker
from monitor.demo.http_ranker import RankerServer, topic_text
from monitor.demo.ranker import ModelVersion
from monitor.demo.synthetic import generate_corpus
from monitor.kafka.settings import KafkaConfig
from monitor.replay.publish import KafkaPublisher
from monitor.replay.ranker import RankerClient
from monitor.replay.runner import run_replay
from monitor.replay.settings import RankerSettings
from monitor.replay.topics import Query
from monitor.sections import ConfigSection

DEPTH = 20
SEED = 5


def serve(queries: int, ready: Connection) -> None:
    """The ranker process: serve until killed."""
    corpus = generate_corpus(SEED, queries=queries, judged_per_query=20, unjudged_per_query=40)
    server = RankerServer(corpus, ModelVersion("v1", 1.0)).start()
    ready.send(server.url)
    threading.Event().wait()


def baseline(url: str, texts: list[str], concurrency: int) -> float:
    """Queries/s of the plain client loop."""
    parts = urllib.parse.urlsplit(url)
    local = threading.local()

    def ask(text: str) -> int:
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = local.connection = http.client.HTTPConnection(
                parts.hostname or "127.0.0.1", parts.port, timeout=30
            )
        body = json.dumps({"query": text, "size": DEPTH}).encode()
        connection.request(
            "POST", parts.path, body=body, headers={"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        return len(response.read())

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        total = sum(pool.map(ask, texts))
    elapsed = time.perf_counter() - started
    assert total > 0
    return len(texts) / elapsed


def rankmon(
    url: str,
    queries: list[Query],
    concurrency: int,
    broker: EmbeddedBroker,
    topic: str,
    *,
    fields: bool = True,
) -> float:
    """Queries/s of a whole replay, published to the broker; `fields`: with what a judge
    reads of each document (the preset's title and snippet) in the records."""
    tree: dict[str, object] = {"url": url, "concurrency": concurrency, "timeout": "30s"}
    if not fields:
        tree["fields"] = {}
    settings = read_settings(RankerSettings, ConfigSection(tree, "r", {}))
    client = RankerClient(settings, DEPTH)
    kafka = KafkaConfig(bootstrap_servers=(broker.bootstrap_servers,), topic=topic)
    publisher = KafkaPublisher.connect(kafka, "lz4")  # replay.compression's default
    # The progress bar `rankmon replay --once` shows on a terminal, drawn to nowhere.
    with open(os.devnull, "w") as nowhere:
        bar = Progress(transient=True, console=Console(file=nowhere, force_terminal=True))
        task = bar.add_task("replay", total=len(queries))
        bar.start()
        started = time.perf_counter()
        report = run_replay(
            queries,
            client,
            publisher,
            replay_id=f"bench-{topic}",
            segment={},
            concurrency=concurrency,
            on_answer=lambda query, answer: bar.advance(task),
        )
        elapsed = time.perf_counter() - started
        bar.stop()
    client.close()
    publisher.close()
    assert report.outcomes["ranked"] == len(queries), report.line()
    return len(queries) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument(
        "--no-fields",
        action="store_true",
        help="leave out what a judge reads (the answers' titles and snippets) from the records",
    )
    args = parser.parse_args()
    ours, theirs = multiprocessing.Pipe(duplex=False)
    ranker = multiprocessing.Process(target=serve, args=(args.queries, theirs), daemon=True)
    ranker.start()
    url = ours.recv()
    corpus_ids = list(generate_corpus(SEED, queries=args.queries, judged_per_query=1).query_ids)
    texts = [topic_text(q) for q in corpus_ids]
    queries = [Query(q, t) for q, t in zip(corpus_ids, texts, strict=True)]
    print(f"{args.queries} queries, {DEPTH} documents each, ranker at {url}")
    print(f"{'concurrency':>11} {'baseline q/s':>13} {'rankmon q/s':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory(), EmbeddedBroker() as broker:
        for concurrency in args.concurrency:
            plain, replayed = [], []
            for round_ in range(args.rounds):
                topic = f"replay-{concurrency}-{round_}"
                broker.create_topic(topic, 3)
                plain.append(baseline(url, texts, concurrency))
                replayed.append(
                    rankmon(url, queries, concurrency, broker, topic, fields=not args.no_fields)
                )
            base, ours_rate = statistics.median(plain), statistics.median(replayed)
            print(f"{concurrency:>11} {base:>13,.0f} {ours_rate:>12,.0f} {ours_rate / base:>6.2f}")
    ranker.kill()


if __name__ == "__main__":
    main()
