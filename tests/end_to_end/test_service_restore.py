"""The service restores alert baselines from the windows topic when its partitions arrive.

`Monitor` on the real Tansu broker. The windows topic is seeded with the shares a previous
life published for partition 0; the restarted service reads them back at its first
assignment and its drop rule starts with their baseline (the engine's own restore is
unit-tested in test_alert_engine.py; this pins the wiring in `Monitor._learn_published`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from monitor.checkpoint.share import WindowShare
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.service import Monitor
from monitor.testing.alert_simulation import StreamModel, simulate_windows
from tests.support.realparts import monitor_thread, produce_records, write_service_config

pytestmark = [pytest.mark.broker]

T0 = 1_767_225_600_000
V1 = (("model", "v1"),)
QUERIES = {f"q{i}": {f"q{i}-d{j}": 3 - j % 4 for j in range(8)} for i in range(6)}
BASELINE_WINDOWS = 6

ALERTS = f"""
alerts:
  log: false
  rules:
    - name: ndcg10-drop
      measure: ndcg@10
      drop: {{relative: 0.05, baseline_windows: {BASELINE_WINDOWS}, min_queries: 5}}
"""


def test_a_started_service_restores_its_drop_baseline_from_the_shares_of_its_partitions(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(1)
    config = write_service_config(tmp_path, tansu, topic, QUERIES, ALERTS)
    monitor = Monitor(load_config(config, environ={}))
    version = monitor.evaluation.current.version
    model = StreamModel(queries=40, window="10s", window_ms=10_000, segment=V1)
    published = [
        replace(summary, evaluation_set_version=version)
        for summary in simulate_windows(model, 8, seed=5, start_ms=T0)
    ]
    shares = [WindowShare(summary, frozenset({0})) for summary in published]
    produce_records(
        tansu.bootstrap_servers, f"{topic}.windows", [(s.key, s.to_json()) for s in shares]
    )

    with monitor_thread(monitor):
        deadline = time.monotonic() + 30
        while (alert := monitor.alerts.find("ndcg10-drop", V1)) is None:
            assert time.monotonic() < deadline, "the windows topic was not restored"
            time.sleep(0.1)

    history = alert.track.history
    assert history is not None
    assert len(history) == BASELINE_WINDOWS
    newest = published[-BASELINE_WINDOWS:]
    assert history.median() == statistics.median(s.means["ndcg@10:linear"] for s in newest)
