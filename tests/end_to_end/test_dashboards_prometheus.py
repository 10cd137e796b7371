"""The quality dashboard's queries against a real Prometheus scraping a real rankmon.

rankmon runs as in production (`Monitor` on the Tansu broker, its own consumer group, scheduler
and /metrics); events of two models with past event times and a closer finalize one window;
Prometheus scrapes every second. Each query of the quality panels (the alert rules' floors,
quality over time, the evaluation set), with Grafana's variables at "All" and k = 10, must
return a series for each model, and the merged means must equal the single instance's gauges.
The drop panels are left out: their trailing median needs more windows of history than a
test of a few seconds has.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from monitor.config.loader import load_config
from monitor.dashboards import build_dashboards, load_spec
from monitor.demo.broker import EmbeddedBroker
from monitor.service import Monitor
from tests.support.realparts import (
    PrometheusServer,
    monitor_thread,
    produce_records,
    write_service_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.prometheus]

T0 = 1_767_225_600_000
QRELS = {"q1": {"d1": 3, "d2": 1}, "q2": {"d3": 2, "d4": 1}, "q3": {"d5": 1}}
# (model, query, ranking, seconds after T0): window [0, 10) of both models, then a closer.
EVENTS = [
    ("v1", "q1", ["d1", "d2"], 1),
    ("v1", "q2", ["x", "d3"], 2),
    ("v2", "q1", ["d2", "x", "d1"], 3),
    ("v2", "q3", ["d5"], 4),
    ("v1", "q3", ["x"], 25),  # moves the watermark past [0, 10)
]
RULES = """
alerts:
  rules:
    - {name: ndcg10-floor, measure: ndcg@10, below: 0.55}
    - {name: mrr-floor, measure: mrr, below: 0.3}
    - {name: ndcg10-drop, measure: ndcg@10, drop: {relative: 0.05, baseline_windows: 12}}
"""
# Grafana's values: "All" of a multi-select is `.*`; the nDCG@k panels repeat per k.
VARIABLES = {"window": "10s", "model": ".*", "k": "10", "gain": ".*"}
QUALITY_ROWS = ("Alert rules", "Quality over time (per segment and cutoff)", "Evaluation set")


def event(number: int, model: str, query: str, ranking: list[str], seconds: int) -> bytes:
    return orjson.dumps(
        {
            "event_id": f"e{number}",
            "query_id": query,
            "ranking": ranking,
            "event_time": T0 + seconds * 1000,
            "segment": {"model": model},
        }
    )


def quality_queries(config: Path) -> dict[str, list[str]]:
    """Panel title -> its queries with the variables filled in, for the quality rows."""
    quality = json.loads(build_dashboards(load_spec(config))[0].to_json())
    found: dict[str, list[str]] = {}
    row = ""
    for panel in quality["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
        elif row in QUALITY_ROWS and " drop versus " not in panel["title"]:
            found[panel["title"]] = [
                re.sub(r"\$\{?(\w+)\}?", lambda m: VARIABLES[m.group(1)], target["expr"])
                for target in panel["targets"]
            ]
    return found


Answers = dict[str, list[list[dict[str, Any]]]]


def answered(title: str, result: list[dict[str, Any]]) -> bool:
    """A panel query answered for both models (the version table: at all; it has no model)."""
    if title.startswith("Evaluation set version"):
        return bool(result)
    return {series["metric"].get("model") for series in result} == {"v1", "v2"}


def wait_for_answers(prometheus: PrometheusServer, queries: dict[str, list[str]]) -> Answers:
    """Run every query until all are answered, or 10 s passed (one tick sets the gauges of
    both models one after the other, and a scrape can fall between them)."""
    deadline = time.monotonic() + 10
    while True:
        answers = {title: [prometheus.query(e) for e in exprs] for title, exprs in queries.items()}
        done = all(answered(t, r) for t, results in answers.items() for r in results)
        if done or time.monotonic() > deadline:
            return answers
        time.sleep(0.2)


def test_quality_panels_return_each_models_series_from_a_scraped_rankmon(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    start_prometheus: Callable[..., PrometheusServer],
) -> None:
    topic = new_topic(1)
    config = write_service_config(tmp_path, tansu, topic, QRELS, RULES)
    queries = quality_queries(config)
    assert {"nDCG@$k", "MRR", "Coverage", "Judged@k"} <= set(queries)
    assert any(title.startswith("ndcg10-floor:") for title in queries)
    records = [(q.encode(), event(i, m, q, r, s)) for i, (m, q, r, s) in enumerate(EVENTS)]
    with monitor_thread(Monitor(load_config(config, environ={}))) as monitor:
        produce_records(tansu.bootstrap_servers, topic, records)
        deadline = time.monotonic() + 10
        while monitor.server.url.endswith(":0") and time.monotonic() < deadline:  # `run` binds
            time.sleep(0.05)
        prometheus = start_prometheus([monitor.server.url.removeprefix("http://")])
        gauges = prometheus.wait_for('count(rankmon_ndcg{k="10",gain="linear"}) == 2', 20)
        assert gauges, "Prometheus never scraped both models' nDCG@10"
        answers = wait_for_answers(prometheus, queries)
        gauge = {
            (s["metric"]["model"], s["metric"]["gain"]): float(s["value"][1])
            for s in prometheus.query('rankmon_ndcg{k="10"}')
        }

    for title, exprs in queries.items():
        for expr, result in zip(exprs, answers[title], strict=True):
            assert answered(title, result), f"{title}: {expr} returned {result}"
    # One instance: the merged mean over queries is that instance's gauge.
    merged = {
        (s["metric"]["model"], s["metric"]["gain"]): float(s["value"][1])
        for s in answers["nDCG@$k"][0]
    }
    assert merged == pytest.approx(gauge)
    assert {model for model, _ in merged} == {"v1", "v2"}
