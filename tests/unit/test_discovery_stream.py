"""The monitor tells a discovery from a regression (on fakes), with a drop rule set to
`unjudged: hold`: a new model that ranks documents nobody judged above the known good ones
sends an `info` discovery and no page; a model that ranks the judged documents worse pages
the drop rule at the first bad window."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.fake_monitor import OnFakes, on_fakes

QUERIES = 40
CONFIG = """
kafka: {bootstrap_servers: ["127.0.0.1:1"], topic: events}
evaluation_set: {path: qrels.txt, reload: {watch: false}}
metrics: {cutoffs: [10]}
windows: {size: 10s, allowed_lateness: 1s, idle_timeout: 5s}
schedule: {interval: 1s}
export: {host: 127.0.0.1, port: 0}
logging: {level: WARNING}
alerts:
  log: false
  rules:
    - {name: ndcg-drop, measure: ndcg@10, severity: critical,
       drop: {relative: 0.05, baseline_windows: 3, significance: 0.05, min_queries: 10,
              unjudged: hold}}
    - {name: ndcg-discovery, measure: ndcg@10,
       discovery: {relative: 0.05, baseline_windows: 3, significance: 0.05, min_queries: 10}}
"""
Ranker = Callable[[int], list[str]]


class Stream:
    """A monitor on fakes; `window(ranker)` sends one window of every query's ranking."""

    def __init__(self, fakes: OnFakes) -> None:
        self.fakes = fakes
        self.clock, self.monitor = fakes.clock, fakes.monitor
        self.sent = 0

    def window(self, ranker: Ranker) -> None:
        start = -(-self.clock.now_ms() // 10_000) * 10_000  # the next window of the clock
        for i in range(QUERIES):
            event = {"event_id": f"e{self.sent}", "query_id": f"q{i}", "ranking": ranker(i),
                     "event_time": start + 100 + i}  # fmt: skip
            self.sent += 1
            self.fakes.send(event)
        self.fakes.finalize()

    def firing(self) -> dict[str, str]:
        """Firing rule -> its severity."""
        alerts = self.monitor.snapshot().alerts
        return {a.rule.name: a.rule.severity for a in alerts if a.status.value == "firing"}

    def note(self, name: str) -> str:
        alert = next(a for a in self.monitor.snapshot().alerts if a.rule.name == name)
        return "" if alert.verdict is None else alert.verdict.note


@pytest.fixture
def stream(tmp_path: Path) -> Iterator[Stream]:
    lines = [f"q{i} 0 best{i} 3\nq{i} 0 good{i} 1\n" for i in range(QUERIES)]
    lines += [f"q{i} 0 {doc} 0\n" for i in range(QUERIES) for doc in fillers(i)]
    with on_fakes(tmp_path, CONFIG, lines) as fakes:
        yield Stream(fakes)


def fillers(i: int) -> list[str]:
    """Documents of query i judged not relevant (grade 0)."""
    return [f"f{i}.{j}" for j in range(8)]


def known(i: int) -> list[str]:
    return [f"best{i}", f"good{i}", *fillers(i)]


def test_unjudged_documents_above_the_good_ones_are_a_discovery_and_page_no_one(
    stream: Stream,
) -> None:
    for _ in range(4):
        stream.window(known)
    assert stream.firing() == {}
    stream.window(lambda i: [f"new{i}", *known(i)[:9]])  # one document nobody judged, first
    assert stream.firing() == {"ndcg-discovery": "info"}
    assert "about 40 documents nobody judged are in the top 10 of 40 queries" in stream.note(
        "ndcg-discovery"
    )


def test_judged_documents_ranked_worse_page_at_the_first_bad_window(stream: Stream) -> None:
    for _ in range(4):
        stream.window(known)
    stream.window(lambda i: [f"good{i}", *fillers(i)[:3], f"best{i}"])  # best fell to 5
    assert stream.firing() == {"ndcg-drop": "critical"}
