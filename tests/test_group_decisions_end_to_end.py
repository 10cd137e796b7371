"""One decision for the group, on the real broker: a group of three `Monitor`s sharing an
events topic of three partitions gives the comparison records, comparison gauges and alerts
that one instance (its own consumer group and windows topic) gives on the same events.

The group forms before any event is produced, so every window is finalized by its
partitions' owners; the owner of partition 0 follows the group's windows topic, merges the
shares once the members' progress records close a window, and decides. v2 drops on two
thirds of its 60 queries from window 10: the comparison alert, the drop rule and the floor
page, in the same windows for both.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import orjson
import pytest

from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.group.decider import DECIDES, MEMBER
from monitor.service import Monitor
from tests.realparts import monitor_thread, produce_records, write_service_config
from tests.test_comparisons_end_to_end import comparison_records

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


@contextmanager
def running(monitors: list[Monitor]) -> Iterator[list[Monitor]]:
    with ExitStack() as stack:
        yield [stack.enter_context(monitor_thread(m)) for m in monitors]


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


def test_a_group_of_three_on_the_broker_decides_what_one_instance_decides(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path, kafka_rebalances: None
) -> None:
    topic = new_topic(3)
    qrels = {f"q{q}": GRADES for q in range(QUERIES)}
    alone_config = write_service_config(tmp_path, tansu, topic, qrels, RULES)
    text = alone_config.read_text()
    for suffix in (".group-dlq", ".group-windows"):
        tansu.create_topic(topic + suffix, 1)
    group_config = tmp_path / "group.yaml"
    group_config.write_text(
        text.replace(f"group_id: g-{topic}", f"group_id: g-{topic}-group")
        .replace(f"{topic}.windows", f"{topic}.group-windows")
        .replace(f"{topic}.dlq", f"{topic}.group-dlq")
    )
    alone = Monitor(load_config(alone_config, environ={}))
    group = [Monitor(load_config(group_config, environ={})) for _ in range(3)]

    with running([alone, *group]):
        wait_for(
            lambda: (
                sorted(p for m in group for p in m.source.assignment) == [0, 1, 2]
                and all(m.source.assignment and m.group.role != "alone" for m in group)
            ),
            timeout_s=60,
            what="the group of three to share the partitions",
        )
        produce_records(tansu.bootstrap_servers, topic, events())
        expected = comparison_records(
            tansu.bootstrap_servers, f"{topic}.windows", WINDOWS, timeout_s=120
        )
        published = comparison_records(
            tansu.bootstrap_servers, f"{topic}.group-windows", WINDOWS, timeout_s=120
        )
        deciders = [m for m in group if m.group.role == DECIDES]
        assert len(deciders) == 1 and sorted(m.group.role for m in group).count(MEMBER) == 2
        decider = deciders[0]
        wait_for(
            lambda: all(
                (a := decider.alerts.find(rule, segment)) is not None
                and a.window == (alone.alerts.find(rule, segment) or a).window
                for rule, segment in RULE_SEGMENTS
            ),
            timeout_s=30,
            what=lambda: (
                "the decider's alerts to reach the single instance's windows: "
                + repr(
                    [(key, window_of(alone, key), window_of(decider, key)) for key in RULE_SEGMENTS]
                )
            ),
        )
        alerts = {
            key: (alone.alerts.find(*key), decider.alerts.find(*key)) for key in RULE_SEGMENTS
        }
        gauges = comparison_gauges(alone), comparison_gauges(decider)
        others = [comparison_gauges(m) for m in group if m is not decider]
        other_alerts = [m.alerts.active() for m in group if m is not decider]

    assert [r.start_ms for r in published] == [r.start_ms for r in expected]
    assert [r.start_ms for r in published] == [T0 + n * 10_000 for n in range(WINDOWS)]
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
    assert gauges[0] and gauges[0].keys() == gauges[1].keys()
    assert all(same(gauges[0][key], value) for key, value in gauges[1].items())
    assert others == [{}, {}] and other_alerts == [[], []]
    paged = 0
    for key, (want, got) in alerts.items():
        assert want is not None and got is not None, key
        assert (got.status, got.fired_at_ms, got.window) == (
            want.status,
            want.fired_at_ms,
            want.window,
        ), key
        paged += want.fired_at_ms is not None
    assert paged >= 3  # v2's comparison, drop and floor: the test is not vacuous
