"""A comparison end to end on the real Tansu broker: two models on one evaluation set, v2
truly better by a known amount; the comparison gauges appear, the interval holds the known
difference, and `rankmon compare` on the same rankings written as TREC runs agrees.

    60 queries, d0..d4 graded 3, 2, 1, 0, 0; v1 ranks them in a random order; v2 is v1 with
    d0 moved to the top on every query whose number is even: the known difference is the mean
    over queries of nDCG@10(v2) - nDCG@10(v1). Tumbling 10 s windows, three of them.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest
from kafka import KafkaConsumer
from prometheus_client.parser import text_string_to_metric_families

from monitor.cli import main
from monitor.comparisons.record import ComparisonRecord
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.scoring.gain import LINEAR
from monitor.service import Monitor
from tests.support import oracle
from tests.support.realparts import monitor_thread, produce_records, write_service_config

pytestmark = [pytest.mark.broker, pytest.mark.slow]

T0 = 1_767_225_600_000
QUERIES = 60
GRADES = {"d0": 3, "d1": 2, "d2": 1, "d3": 0, "d4": 0}
COMPARISON = """
comparisons:
  - {name: v2-vs-v1, baseline: {model: v1}, candidate: {model: v2}, measures: [ndcg@10],
     min_queries: 20}
"""


def rankings(seed: int) -> dict[str, dict[str, list[str]]]:
    """model -> query -> ranking, for one window."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, list[str]]] = {"v1": {}, "v2": {}}
    for q in range(QUERIES):
        base = [f"d{d}" for d in rng.permutation(5)]
        better = list(base)
        if q % 2 == 0:
            better.remove("d0")
            better.insert(0, "d0")
        out["v1"][f"q{q}"], out["v2"][f"q{q}"] = base, better
    return out


def ndcg10(ranking: list[str]) -> float:
    return oracle.ndcg([GRADES[d] for d in ranking], list(GRADES.values()), 10, LINEAR)


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def comparison_records(
    bootstrap: str, topic: str, expected: int, timeout_s: float = 30.0
) -> list[ComparisonRecord]:
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    found: list[ComparisonRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(found) < expected and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            found += [
                ComparisonRecord.from_json(r.value) for r in batch if ComparisonRecord.is_key(r.key)
            ]
    consumer.close()
    return found


def write_run(path: Path, window: dict[str, list[str]], tag: str) -> None:
    lines = [
        f"{q} Q0 {doc} {r + 1} {100 - r} {tag}\n"
        for q, docs in window.items()
        for r, doc in enumerate(docs)
    ]
    path.write_text("".join(lines))


def test_two_models_compared_live_agree_with_the_known_difference_and_rankmon_compare(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = new_topic(1)
    qrels = {f"q{q}": GRADES for q in range(QUERIES)}
    config = write_service_config(tmp_path, tansu, topic, qrels, COMPARISON)
    windows = [rankings(seed) for seed in range(3)]
    records = []
    for number, window in enumerate(windows):
        for model, served in window.items():
            for i, (query, ranking) in enumerate(served.items()):
                event = {
                    "event_id": f"{model}-{number}-{query}",
                    "query_id": query,
                    "ranking": ranking,
                    "event_time": T0 + number * 10_000 + 10 * i,
                    "segment": {"model": model},
                }
                records.append((query.encode(), orjson.dumps(event)))
    closer = {"event_id": "closer", "query_id": "q0", "ranking": ["d0"], "event_time": T0 + 35_000,
              "segment": {"model": "v1"}}  # fmt: skip
    records.append((b"q0", orjson.dumps(closer)))

    with monitor_thread(Monitor(load_config(config, environ={}))) as monitor:
        produce_records(tansu.bootstrap_servers, topic, records)
        published = comparison_records(tansu.bootstrap_servers, topic + ".windows", 3)
        assert [r.start_ms for r in published] == [T0, T0 + 10_000, T0 + 20_000]
        deadline = time.monotonic() + 10
        series = {"comparison": "v2-vs-v1", "measure": "ndcg", "k": "10", "gain": "linear"}
        labels = frozenset({**series, "window": "10s"}.items())
        while time.monotonic() < deadline:
            scraped = scrape(monitor.metrics_url)
            if scraped.get(("rankmon_comparison_queries", labels)) == QUERIES:
                break
            time.sleep(0.2)

    for window, record in zip(windows, published, strict=True):
        (measure,) = record.measures
        known = np.mean([ndcg10(window["v2"][q]) - ndcg10(window["v1"][q]) for q in window["v1"]])
        assert known > 0.05  # v2 is truly better
        assert measure.result.delta == pytest.approx(known, abs=1e-12)
        assert measure.result.ci_lower < known < measure.result.ci_upper
        assert measure.result.queries == QUERIES
        assert measure.result.p_value < 0.001
    last = published[-1].measures[0]
    assert scraped[("rankmon_comparison_delta", labels)] == pytest.approx(
        last.result.delta, abs=1e-12
    )
    assert scraped[("rankmon_comparison_ci_lower", labels)] == pytest.approx(last.result.ci_lower)
    assert scraped[("rankmon_comparison_p_value", labels)] == pytest.approx(last.result.p_value)
    assert scraped[("rankmon_comparison_sequence_lower", labels)] > 0  # always-valid: better

    # the same rankings as TREC runs, offline
    write_run(tmp_path / "v1.run", windows[0]["v1"], "v1")
    write_run(tmp_path / "v2.run", windows[0]["v2"], "v2")
    qrels_file = str(tmp_path / "qrels.txt")
    assert (
        main(
            [
                "compare",
                "--format",
                "json",
                qrels_file,
                str(tmp_path / "v1.run"),
                str(tmp_path / "v2.run"),
            ]
        )
        == 0
    )
    (offline,) = json.loads(capsys.readouterr().out)["results"]
    first = published[0].measures[0]
    assert offline["delta"] == pytest.approx(first.result.delta, abs=1e-12)
    assert (offline["ci_lower"], offline["ci_upper"]) == pytest.approx(
        (first.result.ci_lower, first.result.ci_upper), abs=1e-12
    )
    assert offline["queries"] == first.result.queries
