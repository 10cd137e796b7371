"""The judging loop on the real broker: a ranker change that only surfaces documents nobody
judged notifies a discovery and pages no one; its pairs appear on the to-judge topic; the
judgments sent back on the judgments topic become a new evaluation-set version and the bounds
close; then a real regression pages within 2 windows. `rankmon judgments export` writes the
merged qrels with the provenance of each grade.

    tumbling 10s, lateness 1s, tick 1s                          T = 2026-01-01T00:00:00Z
    windows 0-3   the judged documents, best first               the baseline
    window 4      a new document nobody judged first, per query  discovery (info), no page
    (judgments for those documents sent, the new version takes effect from window 6: the
    closer of window 4 had opened window 5)
    window 5-6    the same rankings                              window 6: upper == nDCG@10
    window 7-8    the best document pushed down                  ndcg-drop pages
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from monitor.cli import main
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.explain.store import KeptWindow
from monitor.service import Monitor
from tests.support.judging_monitor import discovered, fillers, known
from tests.support.realparts import monitor_thread, produce_records, write_service_config
from tests.support.recovery_support import read_topic, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.slow]

T0 = 1_767_225_600_000
QUERIES = 30
V1 = (("model", "v1"),)
EXTRA = """
judging: {{enabled: true, tojudge_topic: {topic}.tojudge, judgments_topic: {topic}.judgments}}
alerts:
  log: false
  rules:
    - {{name: ndcg-drop, measure: ndcg@10, severity: critical, segment: {{model: v1}},
       drop: {{relative: 0.05, baseline_windows: 3, significance: 0.05, min_queries: 10}}}}
    - {{name: ndcg-discovery, measure: ndcg@10, segment: {{model: v1}},
       discovery: {{relative: 0.05, baseline_windows: 3, significance: 0.05, min_queries: 10}}}}
"""


def regressed(i: int) -> list[str]:
    return [f"good{i}", *fillers(i)[:3], f"best{i}"]


QRELS = {
    f"q{i}": {f"best{i}": 3, f"good{i}": 1, **dict.fromkeys(fillers(i), 0)} for i in range(QUERIES)
}


def window(index: int, ranker: Callable[[int], list[str]]) -> list[tuple[bytes, bytes]]:
    """One window of v1's rankings, and a closer of another segment in the next window."""
    start = T0 + index * 10_000
    records = [
        (f"q{i}".encode(), orjson.dumps({
            "event_id": f"w{index}-q{i}", "query_id": f"q{i}", "ranking": ranker(i),
            "event_time": start + 100 + i, "segment": {"model": "v1"}}))
        for i in range(QUERIES)
    ]  # fmt: skip
    closer = {"event_id": f"closer-{index}", "query_id": "q0", "ranking": ["best0"],
              "event_time": start + 12_000, "segment": {"model": "other"}}  # fmt: skip
    return [*records, (b"q0", orjson.dumps(closer))]


class Run:
    def __init__(self, monitor: Monitor, broker: EmbeddedBroker, topic: str) -> None:
        self.monitor, self.broker, self.topic = monitor, broker, topic
        self.sent = 0

    def window(self, ranker: Callable[[int], list[str]]) -> None:
        produce_records(self.broker.bootstrap_servers, self.topic, window(self.sent, ranker))
        self.sent += 1
        wait_until(lambda: len(self.windows()) >= self.sent, 30, f"window {self.sent - 1}")

    def windows(self) -> list[KeptWindow]:
        return self.monitor.explain_store.windows(V1)

    def newest(self, measure: str) -> float:
        return float(self.monitor.explain_store.windows(V1)[-1].summary.means[measure])

    def firing(self) -> dict[str, str]:
        alerts = self.monitor.snapshot().alerts
        return {
            a.rule.name: a.rule.severity
            for a in alerts
            if a.status.value == "firing" and a.segment == V1
        }


@pytest.fixture
def run(tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path) -> Iterator[Run]:
    topic = new_topic(1)
    for suffix in (".tojudge", ".judgments"):
        tansu.create_topic(topic + suffix, 1)
    config = write_service_config(tmp_path, tansu, topic, QRELS, EXTRA.format(topic=topic))
    with monitor_thread(Monitor(load_config(config, environ={}))) as monitor:
        yield Run(monitor, tansu, topic)


def test_a_discovery_is_asked_for_judged_and_closed_and_a_regression_still_pages(
    run: Run, tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    bootstrap = tansu.bootstrap_servers
    for _ in range(4):
        run.window(known)
    version = run.monitor.snapshot().evaluation_set_version
    run.window(discovered)
    wait_until(lambda: "ndcg-discovery" in run.firing(), 10, "the discovery")
    assert run.firing() == {"ndcg-discovery": "info"}
    assert run.newest("ndcg_upper@10:linear") > run.newest("ndcg@10:linear")

    wait_until(
        lambda: len(read_topic(bootstrap, f"{run.topic}.tojudge")) >= QUERIES, 10, "the pairs"
    )
    asked = [orjson.loads(r.value) for r in read_topic(bootstrap, f"{run.topic}.tojudge")]
    assert sorted((p["query_id"], p["doc_id"]) for p in asked) == sorted(
        (f"q{i}", f"new{i}") for i in range(QUERIES)
    )
    produce_records(
        bootstrap,
        f"{run.topic}.judgments",
        [
            (orjson.dumps([p["query_id"], p["doc_id"]]), orjson.dumps({
                "query_id": p["query_id"], "doc_id": p["doc_id"], "grade": 3,
                "source": "human"}))
            for p in asked
        ],
    )  # fmt: skip
    wait_until(
        lambda: run.monitor.snapshot().evaluation_set_version != version, 10, "the new version"
    )
    run.window(discovered)  # open already (a closer's event is in it): the old version
    run.window(discovered)
    newest = run.windows()[-1].summary
    assert newest.evaluation_set_version != version
    assert run.newest("ndcg_upper@10:linear") == run.newest("ndcg@10:linear") == 1.0
    assert "ndcg-drop" not in run.firing()

    run.window(regressed)
    if "ndcg-drop" not in run.firing():
        run.window(regressed)
    assert run.firing().get("ndcg-drop") == "critical"

    merged = tmp_path / "merged.qrels"
    config = str(tmp_path / "rankmon.yaml")
    assert main(["judgments", "export", "--config", config, "--output", str(merged)]) == 0
    lines = merged.read_text().splitlines()
    assert len(lines) == QUERIES * 11 and "q0 0 new0 3" in lines
    provenance_file = Path(f"{merged}.provenance.jsonl")
    provenance = [orjson.loads(line) for line in provenance_file.read_bytes().splitlines()]
    sources = {(row["doc_id"], row["source"]) for row in provenance if row["query_id"] == "q0"}
    assert ("new0", "human") in sources and ("best0", "qrels") in sources
