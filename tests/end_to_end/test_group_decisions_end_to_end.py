"""One decision for the group, on the real broker: a group of three `Monitor`s sharing an
events topic of three partitions gives the comparison records, comparison gauges and alerts
that one instance (its own consumer group and windows topic) gives on the same events.

The group forms before any event is produced, so every window is finalized by its
partitions' owners; the owner of partition 0 follows the group's windows topic, merges the
shares once the members' progress records close a window, and decides. v2 drops on two
thirds of its 60 queries from window 10: the comparison alert, the drop rule and the floor
page, in the same windows for both. In the second test the decider leaves half-way: another
member takes partition 0 over, restores from the windows topic and decides the rest; every
window is still compared once, with the single instance's numbers, and its alerts end as
the single instance's.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from monitor.comparisons.record import ComparisonRecord
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.group.decider import ALONE, DECIDES, MEMBER
from monitor.service import Monitor
from tests.end_to_end.test_comparisons_end_to_end import comparison_records
from tests.support.realparts import produce_records, write_service_config

pytestmark = [pytest.mark.broker, pytest.mark.slow]

T0 = 1_767_225_600_000
QUERIES = 60
WINDOWS = 24
WORSE_FROM = 10
GRADES = {"d1": 2, "d2": 1, "d3": 1}
RULES = """
comparisons:
  - {name: v2-vs-v1, baseline: {model: v1}, candidate: {model: v2}, measures: [ndcg@10]}
alerts:
  log: false
  rules:
    - {name: v2-worse, comparison: {name: v2-vs-v1, direction: worse}}
    - {name: ndcg-drop, measure: ndcg@10, drop: {relative: 0.05, baseline_windows: 4}}
    - {name: ndcg-floor, measure: ndcg@10, below: 0.9}
"""
RULE_SEGMENTS = [
    ("v2-worse", (("model", "v2"),)),  # a comparison's alert is in its candidate's segment
    *(
        (rule, (("model", model),))
        for rule in ("ndcg-drop", "ndcg-floor")
        for model in ("v1", "v2")
    ),
]


def ranking(model: str, window: int, query: int) -> list[str]:
    if model == "v2" and window >= WORSE_FROM and query % 3:
        return ["d3", "d2", "d1"]
    return ["d1", "d2", "d3"] if (query + window) % 5 else ["d2", "d1", "d3"]


def events() -> list[tuple[bytes, bytes]]:
    records = []
    for window in range(WINDOWS):
        for query in range(QUERIES):
            for model in ("v1", "v2"):
                event = {
                    "event_id": f"{model}-{window}-{query}",
                    "query_id": f"q{query}",
                    "ranking": ranking(model, window, query),
                    "event_time": T0 + window * 10_000 + 50 * query,
                    "segment": {"model": model},
                }
                records.append((f"q{query}".encode(), orjson.dumps(event)))
    for query in range(QUERIES):  # one closer per query: every partition's watermark moves
        closer = {
            "event_id": f"closer-{query}",
            "query_id": f"q{query}",
            "ranking": ["d1"],
            "event_time": T0 + WINDOWS * 10_000 + 5_000,
            "segment": {"model": "v1"},
        }
        records.append((f"q{query}".encode(), orjson.dumps(closer)))
    return records


def wait_for(
    condition: Callable[[], bool], timeout_s: float, what: str | Callable[[], str]
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, (
            f"timed out waiting for {what if isinstance(what, str) else what()}"
        )
        time.sleep(0.1)


def window_of(monitor: Monitor, key: tuple[str, tuple[tuple[str, str], ...]]) -> object:
    alert = monitor.alerts.find(*key)
    return None if alert is None else alert.window


def comparison_gauges(monitor: Monitor) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for metric in monitor.registry.collect()
        if metric.name.startswith("rankmon_comparison_")
        for sample in metric.samples
    }


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@dataclass
class Setup:
    topic: str
    alone: Monitor
    group: list[Monitor]


def setup(tansu: EmbeddedBroker, topic: str, directory: Path) -> Setup:
    """A single instance (its own group and windows topic) and a group of three."""
    qrels = {f"q{q}": GRADES for q in range(QUERIES)}
    alone_config = write_service_config(directory, tansu, topic, qrels, RULES)
    for suffix in (".group-dlq", ".group-windows"):
        tansu.create_topic(topic + suffix, 1)
    group_config = directory / "group.yaml"
    group_config.write_text(
        alone_config.read_text()
        .replace(f"group_id: g-{topic}", f"group_id: g-{topic}-group")
        .replace(f"{topic}.windows", f"{topic}.group-windows")
        .replace(f"{topic}.dlq", f"{topic}.group-dlq")
    )
    alone = Monitor(load_config(alone_config, environ={}))
    group = [Monitor(load_config(group_config, environ={})) for _ in range(3)]
    return Setup(topic, alone, group)


class Threads:
    """Each monitor's `run` in a thread, stopped one by one or all at the end."""

    def __init__(self) -> None:
        self.running: dict[int, tuple[threading.Event, threading.Thread]] = {}

    def start(self, monitor: Monitor) -> None:
        stop = threading.Event()
        thread = threading.Thread(target=monitor.run, args=(stop,), daemon=True)
        thread.start()
        self.running[id(monitor)] = (stop, thread)

    def stop(self, monitor: Monitor) -> None:
        stop, thread = self.running.pop(id(monitor))
        stop.set()
        thread.join(30)
        assert not thread.is_alive(), "a monitor did not stop within 30 s"

    def stop_all(self) -> None:
        for stop, _ in self.running.values():
            stop.set()
        for _, thread in self.running.values():
            thread.join(30)
        self.running.clear()


def shared_partitions(group: list[Monitor]) -> bool:
    owned = [m.source.assignment for m in group]
    return sorted(p for parts in owned for p in parts) == [0, 1, 2] and all(
        parts and m.group.role != ALONE for parts, m in zip(owned, group, strict=True)
    )


def decided_alike(alone: Monitor, decider: Monitor) -> None:
    wait_for(
        lambda: all(
            (a := decider.alerts.find(rule, segment)) is not None
            and a.window == (alone.alerts.find(rule, segment) or a).window
            for rule, segment in RULE_SEGMENTS
        ),
        timeout_s=30,
        what=lambda: (
            "the decider's alerts to reach the single instance's windows: "
            + repr([(key, window_of(alone, key), window_of(decider, key)) for key in RULE_SEGMENTS])
        ),
    )


def assert_same_decisions(
    expected: list[ComparisonRecord], published: list[ComparisonRecord]
) -> None:
    assert [r.start_ms for r in expected] == [T0 + n * 10_000 for n in range(WINDOWS)]
    assert [r.start_ms for r in published] == [r.start_ms for r in expected]  # each once
    for mine, theirs in zip(published, expected, strict=True):
        assert mine.partitions == frozenset({0, 1, 2})
        a, b = mine.measures[0], theirs.measures[0]
        assert a.result.queries == b.result.queries == QUERIES
        for name in ("delta", "p_value", "ci_lower", "ci_upper"):
            assert same(getattr(a.result, name), getattr(b.result, name)), name
        for mine_end, their_end in zip(
            a.decision("population"), b.decision("population"), strict=True
        ):
            assert same(mine_end, their_end)


def assert_same_alerts(alone: Monitor, decider: Monitor) -> None:
    paged = 0
    for key in RULE_SEGMENTS:
        want, got = alone.alerts.find(*key), decider.alerts.find(*key)
        assert want is not None and got is not None, key
        assert (got.status, got.fired_at_ms, got.window) == (
            want.status,
            want.fired_at_ms,
            want.window,
        ), key
        paged += want.fired_at_ms is not None
    assert paged >= 3  # v2's comparison, drop and floor: the test is not vacuous


def test_a_group_of_three_on_the_broker_decides_what_one_instance_decides(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path, kafka_rebalances: None
) -> None:
    run = setup(tansu, new_topic(3), tmp_path)
    alone, group, threads = run.alone, run.group, Threads()
    try:
        for monitor in [alone, *group]:
            threads.start(monitor)
        wait_for(lambda: shared_partitions(group), 60, "the group of three to share the partitions")
        produce_records(tansu.bootstrap_servers, run.topic, events())
        bootstrap = tansu.bootstrap_servers
        expected = comparison_records(bootstrap, f"{run.topic}.windows", WINDOWS, timeout_s=120)
        published = comparison_records(
            bootstrap, f"{run.topic}.group-windows", WINDOWS, timeout_s=120
        )
        roles = sorted(m.group.role for m in group)
        assert roles == [DECIDES, MEMBER, MEMBER]
        decider = next(m for m in group if m.group.role == DECIDES)
        decided_alike(alone, decider)
        gauges = comparison_gauges(alone), comparison_gauges(decider)
        others = [(comparison_gauges(m), m.alerts.active()) for m in group if m is not decider]
    finally:
        threads.stop_all()

    assert_same_decisions(expected, published)
    assert gauges[0] and gauges[0].keys() == gauges[1].keys()
    assert all(same(gauges[0][key], value) for key, value in gauges[1].items())
    assert others == [({}, []), ({}, [])]
    assert_same_alerts(alone, decider)


def test_when_the_decider_leaves_another_member_takes_over_and_decides_the_same(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path, kafka_rebalances: None
) -> None:
    run = setup(tansu, new_topic(3), tmp_path)
    alone, group, threads = run.alone, run.group, Threads()
    records = events()
    half = len(records) // 2  # windows 0 to 11: v2's drop (from window 10) pages before
    try:
        for monitor in [alone, *group]:
            threads.start(monitor)
        wait_for(lambda: shared_partitions(group), 60, "the group of three to share the partitions")
        produce_records(tansu.bootstrap_servers, run.topic, records[:half])
        topic = f"{run.topic}.group-windows"
        comparison_records(tansu.bootstrap_servers, topic, WINDOWS // 2 - 2, timeout_s=120)
        first = next(m for m in group if m.group.role == DECIDES)
        threads.stop(first)  # leaves the group: partition 0 moves to another member
        rest = [m for m in group if m is not first]
        wait_for(lambda: any(m.group.role == DECIDES for m in rest), 60, "a new decider")
        produce_records(tansu.bootstrap_servers, run.topic, records[half:])
        bootstrap = tansu.bootstrap_servers
        expected = comparison_records(bootstrap, f"{run.topic}.windows", WINDOWS, timeout_s=120)
        published = comparison_records(bootstrap, topic, WINDOWS, timeout_s=120)
        decider = next(m for m in rest if m.group.role == DECIDES)
        decided_alike(alone, decider)
    finally:
        threads.stop_all()

    assert_same_decisions(expected, published)
    assert_same_alerts(alone, decider)
