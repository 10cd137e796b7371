"""A monitor with the judging loop on fakes (a fake stream, producer, clock and topics), which
sends one window of `QUERIES` queries at a time: the judging loop's tests, its page's and its
documents' share it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import orjson
from prometheus_client import CollectorRegistry

from monitor.config.loader import load_config
from monitor.testing.clock import FakeClock
from tests.support.fake_monitor import monitor_on
from tests.support.fakes import FakeFeed, FakeProducer, FakeStream, finalize_all

T0 = 1_767_225_600_000
QUERIES = 40
CONFIG = """
kafka: {bootstrap_servers: ["127.0.0.1:1"], topic: events}
evaluation_set: {path: qrels.txt, reload: {watch: false}EVALSET}
metrics: {cutoffs: [10]}
windows: {size: 10s, allowed_lateness: 1s, idle_timeout: 5s}
schedule: {interval: 1s}
export: {host: 127.0.0.1, port: 0}
logging: {level: WARNING}
judging: {enabled: true, budget_per_hour: BUDGET, audit_pairs: 20, grades: [0, 1, 2, 3],
          min_audited_queries: 10JUDGING}
alerts:
  log: false
  rules:
    - {name: ndcg-drop, measure: ndcg@10, severity: critical,
       drop: {relative: 0.05, baseline_windows: 3, significance: 0.05, min_queries: 10}}
    - {name: ndcg-discovery, measure: ndcg@10,
       discovery: {relative: 0.05, baseline_windows: 3, significance: 0.05, min_queries: 10}}
    - {name: judge, severity: warning, judge: {min_kappa: 0.6, min_pairs: 20}}
"""
Ranker = Callable[[int], list[str]]


def fillers(i: int) -> list[str]:
    return [f"f{i}.{j}" for j in range(8)]


def known(i: int) -> list[str]:
    return [f"best{i}", f"good{i}", *fillers(i)]


def discovered(i: int) -> list[str]:
    return [f"new{i}", *known(i)[:9]]


class Stream:
    """A monitor on fakes with the judging loop; `window(ranker)` sends one window."""

    def __init__(
        self,
        tmp_path: Path,
        producer: FakeProducer,
        budget: int = 1000,
        *,
        judging: str = "",
        evaluation_set: str = "",
        extra: str = "",
    ) -> None:
        """`judging` and `evaluation_set`: more keys of those sections (`page: true, ...`);
        `extra`: more sections of the config."""
        lines = [f"q{i} 0 best{i} 3\nq{i} 0 good{i} 1\n" for i in range(QUERIES)]
        lines += [f"q{i} 0 {doc} 0\n" for i in range(QUERIES) for doc in fillers(i)]
        (tmp_path / "qrels.txt").write_text("".join(lines))
        more = judging and ", " + judging
        config = CONFIG.replace("BUDGET", str(budget)).replace("JUDGING", more)
        config = config.replace("EVALSET", evaluation_set and ", " + evaluation_set)
        (tmp_path / "rankmon.yaml").write_text(config + extra)
        self.clock, self.stream, self.producer = FakeClock(T0), FakeStream("events"), producer
        self.registry = CollectorRegistry()
        self.feeds = (
            FakeFeed(producer, "events.tojudge", self.clock),
            FakeFeed(producer, "events.judgments", self.clock),
        )
        self.monitor = monitor_on(
            load_config(tmp_path / "rankmon.yaml", environ={}),
            self.clock,
            self.stream,
            producer,
            registry=self.registry,
            judging_feeds=self.feeds,
        )
        self.sent = 0

    def window(
        self,
        ranker: Ranker,
        documents: Callable[[int], Mapping[str, Mapping[str, str]]] | None = None,
    ) -> None:
        """One window of every query ranked by `ranker`; `documents(i)`: what query i's event
        says of its documents (its `documents` field)."""
        start = -(-self.clock.now_ms() // 10_000) * 10_000
        for i in range(QUERIES):
            event: dict[str, object] = {
                "event_id": f"e{self.sent}",
                "query_id": f"q{i}",
                "ranking": ranker(i),
                "event_time": start + 100 + i,
            }
            if documents is not None:
                event["documents"] = documents(i)
            self.sent += 1
            self.stream.append(0, orjson.dumps(event), start + 100 + i)
        finalize_all(self.monitor, self.clock)

    def firing(self) -> dict[str, str]:
        alerts = self.monitor.snapshot().alerts
        return {a.rule.name: a.rule.severity for a in alerts if a.status.value == "firing"}

    def asked(self) -> list[dict[str, object]]:
        return [orjson.loads(v) for _, v, _ in self.producer.sent.get("events.tojudge", [])]

    def judge(self, judgments: list[dict[str, object]]) -> None:
        for judgment in judgments:
            key = orjson.dumps([judgment["query_id"], judgment["doc_id"]])
            self.producer.send("events.judgments", key, orjson.dumps(judgment), [])

    def newest(self, measure: str) -> float:
        summary = self.monitor.explain_store.windows(())[-1].summary
        return summary.means[measure]

    def sample(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)
