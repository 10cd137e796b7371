"""The streaming monitor end to end on the real Tansu broker.

Known ranking events go to a topic; `Monitor` runs as in production (its own consumer group,
scheduler, producer and HTTP endpoint); what it publishes and serves on `/metrics` must equal
an independent computation with the reference measures of `monitor.scoring.measures`.

    tumbling 10s, lateness 1s, one partition          T = 2026-01-01T00:00:00Z
    time (s)    0 ......... 10 ......... 20 ... 25
    v1 events   q1 q2 q3     q1 q2                       + closer at 25 (window [20, 30))
    v2 events   q1 q4        q3 q4 q4
    windows     [0 ------ 10)[10 ----- 20)               closer moves the watermark to 24
"""

from __future__ import annotations

import math
import statistics
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka import KafkaConsumer
from prometheus_client.parser import text_string_to_metric_families

from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.scoring.gain import EXP, LINEAR
from monitor.service import Monitor
from monitor.windows.summary import WindowSummary
from tests.support import oracle
from tests.support.realparts import (
    PrometheusServer,
    Promtool,
    monitor_thread,
    produce_records,
    write_service_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]

T0 = 1_767_225_600_000
QRELS = {
    "q1": {"d1": 3, "d2": 1, "d3": 0, "d9": 2},
    "q2": {"d1": 1, "d4": 2},
    "q3": {"d5": 0, "d6": -1},  # no relevant document: every measure is 0
    "q4": {"d7": 2, "d8": 2, "d2": 1},
}
# (event id, model, query, ranking, seconds after T0)
EVENTS = [
    ("e1", "v1", "q1", ["d1", "d3", "d2", "x1"], 1),
    ("e2", "v1", "q2", ["x2", "d4", "d1"], 2),
    ("e3", "v1", "q3", ["d5", "d6"], 3),
    ("e4", "v1", "q1", ["d3", "x1", "d9"], 4),
    ("e5", "v2", "q1", ["d9", "d1"], 5),
    ("e6", "v2", "q4", ["d2", "x3", "d7", "d8"], 6),
    ("e7", "v1", "q1", ["d2", "d1"], 11),
    ("e8", "v1", "q2", ["d4"], 12),
    ("e9", "v2", "q3", ["d6", "x9"], 13),
    ("e10", "v2", "q4", ["d7", "d8", "d2"], 14),
    ("e11", "v2", "q4", ["x1", "d8"], 15),
]
CLOSER = ("e12", "v1", "q2", ["d1"], 25)
CUTOFFS = (5, 10, 20)


def _event(event_id: str, model: str, query: str, ranking: list[str], seconds: int) -> bytes:
    return orjson.dumps(
        {
            "event_id": event_id,
            "query_id": query,
            "ranking": ranking,
            "event_time": T0 + seconds * 1000,
            "segment": {"model": model, "user": "ignored"},
        }
    )


def _expected(window_start_s: int, model: str) -> dict[str, float]:
    """Mean over queries of per-query means, computed with the reference measures."""
    per_query: dict[str, list[dict[str, float]]] = {}
    for _, m, query, ranking, seconds in EVENTS:
        if m != model or not window_start_s <= seconds < window_start_s + 10:
            continue
        judged = QRELS[query]
        grades = [judged.get(doc) for doc in ranking]
        ideal = [g for g in judged.values() if g >= 0]
        num_rel = sum(1 for g in ideal if g >= 1)
        values = {"mrr": oracle.reciprocal_rank(grades)}
        values["map"] = oracle.average_precision(grades, num_rel)
        for k in CUTOFFS:
            values[f"ndcg@{k}:linear"] = oracle.ndcg(grades, ideal, k, LINEAR)
            values[f"ndcg@{k}:exp"] = oracle.ndcg(grades, ideal, k, EXP)
            values[f"ndcg_condensed@{k}:linear"] = oracle.ndcg_condensed(grades, ideal, k, LINEAR)
            values[f"precision@{k}"] = oracle.precision(grades, k)
            values[f"recall@{k}"] = oracle.recall(grades, num_rel, k)
        per_query.setdefault(query, []).append(values)
    query_means = [
        {key: statistics.fmean(v[key] for v in rows) for key in rows[0]}
        for rows in per_query.values()
    ]
    return {key: statistics.fmean(q[key] for q in query_means) for key in query_means[0]}


@pytest.fixture
def running_monitor(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> Iterator[tuple[Monitor, str]]:
    topic = new_topic(1)
    config_file = write_service_config(
        tmp_path,
        tansu,
        topic,
        QRELS,
        "metrics: {cutoffs: [5, 10, 20], gains: [linear, exp]}\n",
    )
    with monitor_thread(Monitor(load_config(config_file, environ={}))) as monitor:
        yield monitor, topic


def _consume_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 30) -> list[Any]:
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < expected and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records.extend(batch)
    consumer.close()
    return records


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def _scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = _get(url)
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_published_windows_and_metrics_equal_an_independent_computation(
    running_monitor: tuple[Monitor, str],
    tansu: EmbeddedBroker,
    promtool: Promtool,
    start_prometheus: Callable[..., PrometheusServer],
) -> None:
    monitor, topic = running_monitor
    bootstrap = tansu.bootstrap_servers
    records = [(e[2].encode(), _event(*e)) for e in EVENTS]
    records += [
        (b"q1", b"not json at all"),
        (b"qX", _event("e20", "v1", "unknown-query", ["d1"], 3)),
        (b"q1", _event("e7", "v1", "q1", ["d1"], 12)),  # duplicate id, its window is open
    ]
    records.append((CLOSER[2].encode(), _event(*CLOSER)))
    records.append((b"q1", _event("e21", "v1", "q1", ["d1"], 1)))  # late: [0, 10) closed
    produce_records(bootstrap, topic, records)

    published = [
        WindowSummary.from_json(r.value) for r in _consume_all(bootstrap, topic + ".windows", 4)
    ]
    by_window = {(s.start_ms, dict(s.segment)["model"]): s for s in published}
    assert sorted(by_window) == [(T0, "v1"), (T0, "v2"), (T0 + 10_000, "v1"), (T0 + 10_000, "v2")]
    for (start_ms, model), summary in by_window.items():
        expected = _expected((start_ms - T0) // 1000, model)
        for key, value in expected.items():
            assert summary.means[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
        assert summary.segment == (("model", model),)

    dead = _consume_all(bootstrap, topic + ".dlq", 4)
    reasons = sorted(dict(r.headers)["rankmon-outcome"].decode() for r in dead)
    assert reasons == ["duplicate", "invalid", "late", "unknown_query"], reasons
    assert b"not json at all" in [r.value for r in dead]

    scraped = _scrape_until(monitor.metrics_url, ("rankmon_events_total", "late"))
    version = monitor.evaluation.current.version
    latest = {"v1": _expected(10, "v1"), "v2": _expected(10, "v2")}
    for model, expected in latest.items():
        base = {"window": "10s", "version": version, "model": model}
        for key, value in expected.items():
            name, labels = _series(key, base)
            assert scraped[(name, frozenset(labels.items()))] == pytest.approx(
                value, rel=1e-12, abs=1e-15
            ), key
        events = scraped[("rankmon_window_events", frozenset(base.items()))]
        assert events == sum(1 for e in EVENTS if e[1] == model and e[4] >= 10)

    def outcome(name: str, reason: str = "") -> float:
        key = ("rankmon_events_total", frozenset({("outcome", name), ("reason", reason)}))
        return scraped.get(key, math.nan)

    assert outcome("accepted") == len(EVENTS) + 1
    lint = promtool.check_metrics(_get(monitor.metrics_url))
    assert lint.ok, lint.output

    prometheus = start_prometheus([monitor.server.url.removeprefix("http://")])
    result = prometheus.wait_for('rankmon_ndcg{k="10",gain="linear"}')
    by_model = {series["metric"]["model"]: float(series["value"][1]) for series in result}
    assert by_model == pytest.approx({m: latest[m]["ndcg@10:linear"] for m in latest}, rel=1e-12)
    assert outcome("invalid", "invalid_json") == 1
    assert outcome("unknown_query") == 1


def _scrape_until(
    url: str, wanted: tuple[str, str], timeout_s: float = 10
) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Scrape until a sample of `wanted` (name, outcome) shows: the tick that publishes a
    window sets its gauges right after, and the late record may come one poll later."""
    deadline = time.monotonic() + timeout_s
    while True:
        scraped = _scrape(url)
        present = any(
            name == wanted[0] and ("outcome", wanted[1]) in labels for name, labels in scraped
        )
        if present or time.monotonic() > deadline:
            return scraped
        time.sleep(0.2)


def _series(key: str, base: dict[str, str]) -> tuple[str, dict[str, str]]:
    kind, _, rest = key.partition("@")
    if not rest:
        return f"rankmon_{kind}", base
    k, _, gain = rest.partition(":")
    labels = {"k": k, **base}
    if gain:
        labels["gain"] = gain
    return f"rankmon_{kind}", labels
