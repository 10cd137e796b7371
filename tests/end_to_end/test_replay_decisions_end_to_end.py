"""Decisions that hold, on the real broker: a fixed evaluation set of 300 queries replayed
by a deterministic ranker for 200 windows.

- v2 against v1: rankings drawn from the same distribution, so no difference in the
  population of queries, while these 300 queries do differ (the set interval, exact for a
  deterministic ranker, excludes 0): no comparison alert in 200 windows. The old sequence
  narrowed around the set's difference and fired on most such sets.
- v3 against v1: v1 with the best document moved to the bottom on 30 of the 300 queries,
  a real drop: the comparison alert pages within 2 windows (v3 serves the first 3 windows
  only: that is all the claim needs, and a third fewer events keeps the test short).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest

from monitor.alerting.state import Status
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.service import Monitor
from tests.end_to_end.test_comparisons_end_to_end import comparison_records
from tests.support.realparts import monitor_thread, produce_records, write_service_config

pytestmark = [pytest.mark.broker, pytest.mark.slow]

T0 = 1_767_225_600_000
QUERIES = 300
WINDOWS = 200
DROPPED = 30
DROP_WINDOWS = 3  # v3 serves these first windows only
GRADES = {"d0": 3, "d1": 2, "d2": 1, "d3": 0, "d4": 0}
CONFIG = """
metrics: {cutoffs: [10], gains: [linear]}
comparisons:
  - {name: v2-vs-v1, baseline: {model: v1}, candidate: {model: v2}, measures: [ndcg@10]}
  - {name: v3-vs-v1, baseline: {model: v1}, candidate: {model: v3}, measures: [ndcg@10]}
alerts:
  log: false
  rules:
    - {name: v2-worse, comparison: {name: v2-vs-v1, direction: worse}}
    - {name: v2-better, comparison: {name: v2-vs-v1, direction: better}}
    - {name: v3-worse, comparison: {name: v3-vs-v1, direction: worse}}
"""


def replayed_rankings(seed: int) -> dict[str, dict[str, list[str]]]:
    """model -> query -> ranking, the same every window (a deterministic ranker)."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, list[str]]] = {"v1": {}, "v2": {}, "v3": {}}
    for q in range(QUERIES):
        query = f"q{q}"
        v1 = [f"d{d}" for d in rng.permutation(5)]
        out["v1"][query] = v1
        out["v2"][query] = [f"d{d}" for d in rng.permutation(5)]  # same distribution as v1
        v3 = list(v1)
        if q < DROPPED:
            v3.remove("d0")
            v3.append("d0")
        out["v3"][query] = v3
    return out


def test_a_replayed_set_without_a_population_difference_never_pages_and_a_real_drop_does(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(1)
    qrels = {f"q{q}": GRADES for q in range(QUERIES)}
    config = write_service_config(tmp_path, tansu, topic, qrels, CONFIG)
    served = replayed_rankings(seed=3)
    records = []
    for number in range(WINDOWS):
        for model, rankings in served.items():
            if model == "v3" and number >= DROP_WINDOWS:
                continue
            for i, (query, ranking) in enumerate(rankings.items()):
                event = {
                    "event_id": f"{model}-{number}-{query}",
                    "query_id": query,
                    "ranking": ranking,
                    "event_time": T0 + number * 10_000 + 20 * i,
                    "segment": {"model": model},
                }
                records.append((query.encode(), orjson.dumps(event)))
    closer = {"event_id": "closer", "query_id": "q0", "ranking": ["d0"],
              "event_time": T0 + WINDOWS * 10_000 + 5_000, "segment": {"model": "v1"}}  # fmt: skip
    records.append((b"q0", orjson.dumps(closer)))

    with monitor_thread(Monitor(load_config(config, environ={}))) as monitor:
        produce_records(tansu.bootstrap_servers, topic, records)
        published = comparison_records(
            tansu.bootstrap_servers, topic + ".windows", 2 * WINDOWS, timeout_s=180.0
        )  # v3-vs-v1 too: a record without a verdict once v3 is not served
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            v3 = monitor.alerts.find("v3-worse", (("model", "v3"),))
            v2 = monitor.alerts.find("v2-worse", (("model", "v2"),))
            if (
                v3 is not None
                and v2 is not None
                and v2.window
                == (
                    T0 + (WINDOWS - 1) * 10_000,
                    T0 + WINDOWS * 10_000,
                )
            ):
                break
            time.sleep(0.2)
        alerts = {
            name: monitor.alerts.find(name, (("model", model),))
            for name, model in (("v2-worse", "v2"), ("v2-better", "v2"), ("v3-worse", "v3"))
        }

    null = [r.measures[0] for r in published if r.name == "v2-vs-v1"]
    drop = [r.measures[0] for r in published if r.name == "v3-vs-v1"]
    assert len(null) == len(drop) == WINDOWS
    assert all(m.note for m in drop[DROP_WINDOWS:])  # no verdict without v3
    last = null[-1]
    assert last.design == "replay" and last.compared_units == QUERIES
    # these 300 queries differ: the set interval (width 0 for a deterministic ranker)
    # excludes 0; the population of queries shows no difference, and no window paged
    assert last.set_lower == last.set_upper != 0.0
    assert last.population_lower < 0.0 < last.population_upper
    for name in ("v2-worse", "v2-better"):
        alert = alerts[name]
        assert alert is not None and alert.fired_at_ms is None, name
        assert alert.status is Status.INACTIVE
    # the real drop on 30 of 300 queries pages within 2 windows
    fired = alerts["v3-worse"]
    assert fired is not None and fired.fired_at_ms is not None
    assert fired.fired_at_ms <= T0 + 2 * 10_000
    assert drop[1].decision("population")[1] < 0.0
