"""A monitor with a comparison configured, on in-memory IO: the records go to the windows
topic before the window's shares, become gauges and alerts, and survive a restart."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from monitor.alerting.state import Status
from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.share import WindowShare
from monitor.comparisons.record import ComparisonRecord
from monitor.config.loader import Config, load_config
from monitor.testing.clock import FakeClock
from tests.support.fake_monitor import monitor_on
from tests.support.fakes import FakeProducer, FakeServer, FakeStream

T0 = 1_767_225_600_000
TOPIC = "events"
QUERIES = 12
CONFIG = f"""
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: {TOPIC}}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
segments: {{keys: [model]}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 5s}}
schedule: {{interval: 1s}}
logging: {{level: WARNING}}
comparisons:
  - {{name: v2-vs-v1, baseline: {{model: v1}}, candidate: {{model: v2}}, measures: [ndcg@10],
      min_queries: 5}}
alerts:
  log: false
  rules:
    - {{name: v2-worse, comparison: {{name: v2-vs-v1, direction: worse, margin: 0.02}}}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Config:
    # every query: d1 grade 2, d2 grade 1. v1 serves d1 first (ideal), v2 d2 first.
    lines = [f"q{i} 0 d1 2\nq{i} 0 d2 1\n" for i in range(QUERIES)]
    (tmp_path / "qrels.txt").write_text("".join(lines))
    (tmp_path / "rankmon.yaml").write_text(CONFIG)
    return load_config(tmp_path / "rankmon.yaml", environ={})


class Loop:
    def __init__(self, config: Config, producer: FakeProducer) -> None:
        self.clock = FakeClock(T0)
        self.stream = FakeStream(TOPIC)
        self.registry = CollectorRegistry()
        self.monitor = monitor_on(
            config, self.clock, self.stream, producer, registry=self.registry, server=FakeServer()
        )
        self.monitor.start()

    def serve_window(
        self, start_ms: int, number: int, v2: Callable[[int], list[str]] = lambda i: ["d2", "d1"]
    ) -> None:
        """Both models serve every query once; v1 ranks (d1, d2), v2 as `v2(query index)`."""
        for i in range(QUERIES):
            for model, ranking in (("v1", ["d1", "d2"]), ("v2", v2(i))):
                event = {
                    "event_id": f"{model}-{number}-{i}",
                    "query_id": f"q{i}",
                    "ranking": ranking,
                    "segment": {"model": model},
                    "event_time": start_ms + 100 + i,
                }
                self.stream.append(0, orjson.dumps(event), start_ms + 100 + i)

    def run_for(self, ms: int, step_ms: int = 100) -> None:
        for _ in range(ms // step_ms):
            self.monitor.step()
            self.clock.advance(step_ms)

    def gauge(self, name: str) -> float | None:
        labels = {
            "comparison": "v2-vs-v1",
            "measure": "ndcg",
            "k": "10",
            "gain": "linear",
            "window": "10s",
        }
        return self.registry.get_sample_value(f"rankmon_comparison_{name}", labels)


def serve(loop: Loop, windows: range) -> None:
    for number in windows:
        loop.serve_window(T0 + number * 10_000, number)
    loop.run_for(500)


# nDCG@10 of (d2, d1) against grades d1=2, d2=1, linear gain: (1 + 2/log2 3) / (2 + 1/log2 3)
WORSE = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)) - 1.0


def test_comparison_records_are_published_before_the_windows_shares_and_become_gauges(
    config: Config,
) -> None:
    producer = FakeProducer()
    loop = Loop(config, producer)
    serve(loop, range(3))
    loop.clock.advance(200_000)  # quiet: the last window closes on processing time
    loop.run_for(7_000)
    records = producer.records(f"{TOPIC}.windows")
    assert not any(isinstance(r, ProgressRecord) for r in records)  # alone: no progress sent
    kinds = [
        (type(r).__name__, r.start_ms if isinstance(r, ComparisonRecord) else r.summary.start_ms)
        for r in records
        if not isinstance(r, ProgressRecord)
    ]
    for start in {start for _, start in kinds}:
        first = next(kind for kind, s in kinds if s == start)
        assert first == "ComparisonRecord", kinds  # the record leads its window's shares
    assert loop.gauge("delta") == pytest.approx(WORSE)
    assert loop.gauge("queries") == QUERIES
    assert loop.gauge("ci_lower") == pytest.approx(WORSE) == loop.gauge("ci_upper")  # no spread
    loop.monitor.close()


def test_the_worse_rule_fires_and_a_restart_continues_the_sequence_and_the_gauges(
    config: Config,
) -> None:
    producer = FakeProducer()
    loop = Loop(config, producer)
    serve(loop, range(4))
    loop.clock.advance(200_000)
    loop.run_for(7_000)
    # every query lost the same amount: the differences have no spread and no standard
    # error, so the always-valid sequence takes nothing and the rule stays unknown
    assert loop.monitor.alerts.find("v2-worse", (("model", "v2"),)) is not None
    records = producer.comparisons(f"{TOPIC}.windows")
    assert [r.measures[0].sequence.windows for r in records] == [0] * len(records)
    loop.monitor.close()

    restarted = Loop(config, producer)
    restarted.run_for(300)
    assert restarted.gauge("delta") == pytest.approx(WORSE)  # restored from the topic
    assert restarted.gauge("queries") == QUERIES
    restarted.monitor.close()


def test_a_spread_of_losses_fires_the_worse_rule_through_the_always_valid_interval(
    config: Config, tmp_path: Path
) -> None:
    # v2 loses on half the queries and keeps the other half: mean loss WORSE / 2
    producer = FakeProducer()
    loop = Loop(config, producer)
    for number in range(12):

        def v2(i: int, n: int = number) -> list[str]:
            return ["d2", "d1"] if (i + n) % 2 else ["d1", "d2"]

        loop.serve_window(T0 + number * 10_000, number, v2)
        loop.run_for(500)
    loop.clock.advance(200_000)
    loop.run_for(7_000)
    records = producer.comparisons(f"{TOPIC}.windows")
    last = records[-1].measures[0]
    # the same 12 queries every window: a replay, judged query by query
    assert last.design == "replay"
    assert {m.count for m in last.units.values()} == {len(records)}
    assert last.population_upper < -0.03  # the true loss: WORSE / 2 = -0.07
    assert last.sequence.pooled_count == QUERIES * len(records)
    alert = loop.monitor.alerts.find("v2-worse", (("model", "v2"),))
    assert alert is not None and alert.status is Status.FIRING
    assert loop.gauge("sequence_upper") == pytest.approx(last.sequence_upper)
    loop.monitor.close()

    restarted = Loop(config, producer)
    restarted.run_for(300)
    alert = restarted.monitor.alerts.find("v2-worse", (("model", "v2"),))
    assert alert is not None and alert.status is Status.FIRING  # restored, still firing
    restarted.monitor.close()


def test_shares_are_still_readable_as_before_with_comparisons_on_the_topic(config: Config) -> None:
    producer = FakeProducer()
    loop = Loop(config, producer)
    serve(loop, range(2))
    loop.run_for(1_000)
    assert all(isinstance(s, WindowShare) for s in producer.shares(f"{TOPIC}.windows"))
    loop.monitor.close()


def test_a_comparison_record_too_large_for_one_record_goes_without_its_query_moments(
    tmp_path: Path,
) -> None:
    # 16,384 bytes are kept for the key, headers and framing: 500 more leave no room for
    # the 12 queries' moments, so the record goes without them instead of being refused by
    # the broker (which would hold every window and commit for good)
    lines = [f"q{i} 0 d1 2\nq{i} 0 d2 1\n" for i in range(QUERIES)]
    (tmp_path / "qrels.txt").write_text("".join(lines))
    small = CONFIG.replace(f"topic: {TOPIC}}}", f"topic: {TOPIC}, max_record_bytes: 16884}}")
    (tmp_path / "rankmon.yaml").write_text(small)
    producer = FakeProducer()
    loop = Loop(load_config(tmp_path / "rankmon.yaml", environ={}), producer)
    serve(loop, range(3))
    loop.clock.advance(200_000)
    loop.run_for(7_000)
    records = producer.comparisons(f"{TOPIC}.windows")
    assert len(records) == 3 and all(not r.measures[0].units for r in records)
    assert all(isinstance(s, WindowShare) for s in producer.shares(f"{TOPIC}.windows"))
    assert loop.monitor.checkpoint.held == 0  # nothing held: the windows were committed
    trimmed = loop.registry.get_sample_value(
        "rankmon_window_shares_trimmed_total", {"dropped": "comparison_units"}
    )
    assert trimmed == 3
    loop.monitor.close()
