"""One decision for the group, on in-memory IO: three members that share the events topic's
partitions decide exactly what one instance owning them all decides.

The events are the same for both: 30 queries on 3 partitions (by query), two models, a
drop on two thirds of v2's queries from the fifth window. The single instance decides on its
own windows; of the group, the owner of partition 0 merges every member's shares once the
members' progress records say a window is whole, and the others decide nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from monitor.alerting.state import Status
from monitor.comparisons.record import ComparisonRecord
from monitor.config.loader import Config, load_config
from monitor.group.decider import ALONE, DECIDES, MEMBER
from monitor.testing.clock import FakeClock
from tests.support.fake_monitor import monitor_on
from tests.support.fakes import FakeProducer, FakeServer, FakeStream

T0 = 1_767_225_600_000
TOPIC = "events"
WINDOWS_TOPIC = f"{TOPIC}.windows"
QUERIES = 30
PARTITIONS = (0, 1, 2)
WINDOWS = 8
WORSE_FROM = 4  # v2 drops on two thirds of its queries from this window on
CONFIG = f"""
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: {TOPIC}}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
segments: {{keys: [model]}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 5s}}
schedule: {{interval: 1s}}
logging: {{level: WARNING}}
comparisons:
  - {{name: v2-vs-v1, baseline: {{model: v1}}, candidate: {{model: v2}}, measures: [ndcg@10],
      min_queries: 5, design: replay}}
alerts:
  log: false
  min_queries: 5
  rules:
    - {{name: v2-worse, comparison: {{name: v2-vs-v1, direction: worse}}}}
    - name: ndcg-drop
      measure: ndcg@10
      drop: {{relative: 0.05, baseline_windows: 3, min_queries: 5}}
    - {{name: ndcg-floor, measure: ndcg@10, below: 0.9}}
"""
RULES = ("v2-worse", "ndcg-drop", "ndcg-floor")


@pytest.fixture
def config(tmp_path: Path) -> Config:
    lines = [f"q{i} 0 d1 2\nq{i} 0 d2 1\nq{i} 0 d3 1\n" for i in range(QUERIES)]
    (tmp_path / "qrels.txt").write_text("".join(lines))
    (tmp_path / "rankmon.yaml").write_text(CONFIG)
    return load_config(tmp_path / "rankmon.yaml", environ={})


def ranking(model: str, window: int, query: int) -> list[str]:
    if model == "v2" and window >= WORSE_FROM and query % 3:
        return ["d3", "d2", "d1"]
    return ["d1", "d2", "d3"] if (query + window) % 4 else ["d2", "d1", "d3"]


class Member:
    """One monitor on fakes: `owned` partitions of the topic's three."""

    def __init__(
        self,
        config: Config,
        producer: FakeProducer,
        owned: Iterable[int],
        *,
        after: Member | None = None,
    ) -> None:
        """`after`: a crashed member whose process this is again, its partitions read from
        their committed offsets."""
        if after is None:
            self.clock = FakeClock(T0 + 3_600_000)  # the events are an hour old
            self.stream = FakeStream(TOPIC, owned, topic_partitions=PARTITIONS)
        else:
            self.clock = FakeClock(after.clock.now_ms())
            self.stream = after.stream
            self.stream.restart()
        self.registry = CollectorRegistry()
        self.monitor = monitor_on(
            config,
            self.clock,
            self.stream,
            producer,
            windows_topic=WINDOWS_TOPIC,
            registry=self.registry,
            server=FakeServer(),
        )
        self.monitor.start()

    def take(self, partition: int, value: bytes, timestamp_ms: int) -> None:
        if partition in self.stream.log:
            self.stream.append(partition, value, timestamp_ms)

    def step(self, ms: int = 100) -> None:
        self.monitor.step()
        self.clock.advance(ms)

    def comparison_gauges(self) -> dict[str, float]:
        return {
            sample.name: sample.value
            for metric in self.registry.collect()
            if metric.name.startswith("rankmon_comparison_")
            for sample in metric.samples
        }


def serve(members: list[Member], window: int) -> None:
    start = T0 + window * 10_000
    for query in range(QUERIES):
        for model in ("v1", "v2"):
            event = {
                "event_id": f"{model}-{window}-{query}",
                "query_id": f"q{query}",
                "ranking": ranking(model, window, query),
                "segment": {"model": model},
                "event_time": start + 100 + query,
            }
            for member in members:
                member.take(query % len(PARTITIONS), orjson.dumps(event), start + 100 + query)


def run(members: list[Member], ms: int) -> None:
    for _ in range(ms // 100):
        for member in members:
            member.step()


def play(members: list[Member]) -> None:
    for window in range(WINDOWS):
        serve(members, window)
        run(members, 1_500)
    for member in members:
        member.clock.advance(120_000)  # quiet: the last windows close on processing time
    run(members, 8_000)


def single_records(member: Member) -> list[ComparisonRecord]:
    producer = member.monitor._producer
    assert isinstance(producer, FakeProducer)
    return producer.comparisons(WINDOWS_TOPIC)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def test_a_group_of_three_decides_the_comparisons_and_alerts_one_instance_decides(
    config: Config,
) -> None:
    alone = Member(config, FakeProducer(), PARTITIONS)
    shared = FakeProducer()
    group = [Member(config, shared, [p]) for p in PARTITIONS]
    play([alone, *group])

    assert alone.monitor.group.role == ALONE
    assert [m.monitor.group.role for m in group] == [DECIDES, MEMBER, MEMBER]
    decider = group[0].monitor
    # every window compared once, by the decider, with the single instance's numbers
    single = alone.monitor._producer
    assert isinstance(single, FakeProducer)
    expected = single.comparisons(WINDOWS_TOPIC)
    published = shared.comparisons(WINDOWS_TOPIC)
    assert [r.start_ms for r in published] == [r.start_ms for r in expected]
    assert len(published) == WINDOWS
    for mine, theirs in zip(published, expected, strict=True):
        assert mine.partitions == frozenset(PARTITIONS)
        a, b = mine.measures[0], theirs.measures[0]
        for field in ("delta", "p_value", "ci_lower", "ci_upper"):
            assert same(getattr(a.result, field), getattr(b.result, field)), field
        assert a.result.queries == b.result.queries == QUERIES
        for mine_end, their_end in zip(
            a.decision("population"), b.decision("population"), strict=True
        ):
            assert same(mine_end, their_end)
        assert a.units.keys() == b.units.keys()
    # the gauges: the decider's are the single instance's; the other members export none
    gauges = alone.comparison_gauges()
    assert gauges and gauges.keys() == group[0].comparison_gauges().keys()
    assert all(same(gauges[k], v) for k, v in group[0].comparison_gauges().items())
    assert not group[1].comparison_gauges() and not group[2].comparison_gauges()
    # every rule fired (or not) at the same window, in the same segments
    fired = 0
    for rule in RULES:
        for model in ("v1", "v2"):
            segment = (("model", model),)
            want, got = alone.monitor.alerts.find(rule, segment), decider.alerts.find(rule, segment)
            assert (want is None) == (got is None), (rule, model)
            if want is not None and got is not None:
                assert (got.status, got.fired_at_ms, got.window) == (
                    want.status,
                    want.fired_at_ms,
                    want.window,
                ), (rule, model)
                fired += want.fired_at_ms is not None
    assert fired >= 2  # the comparison and the drop on v2 paged: the test is not vacuous
    for member in group[1:]:
        assert member.monitor.alerts.active() == []
        assert member.monitor.alerts.find("ndcg-floor", (("model", "v2"),)) is None


def test_members_publish_their_progress_and_the_decider_waits_for_the_slowest(
    config: Config,
) -> None:
    shared = FakeProducer()
    group = [Member(config, shared, [p]) for p in PARTITIONS]
    for window in range(3):  # the third window's events close the first (lateness 1 s)
        serve(group, window)
    run(group[:2], 3_000)  # the third member has not polled: its windows are open
    decider = group[0].monitor
    assert decider.group.decider is not None and decider.group.decider.decided == 0
    assert shared.comparisons(WINDOWS_TOPIC) == []
    progress = shared.progress(WINDOWS_TOPIC)
    assert {p for r in progress for p in r.partitions} == {0, 1}
    run(group, 3_000)
    assert decider.group.decider.decided == 1  # window 0; window 1 waits for later events
    records = shared.comparisons(WINDOWS_TOPIC)
    assert [r.start_ms for r in records] == [T0]
    assert isinstance(records[0], ComparisonRecord) and records[0].measures[0].result.queries == 30
    alert = decider.alerts.find("ndcg-floor", (("model", "v1"),))
    assert alert is not None and alert.status is Status.INACTIVE


def test_a_new_decider_takes_over_from_the_windows_topic_and_counts_no_window_twice(
    config: Config,
) -> None:
    alone = Member(config, FakeProducer(), PARTITIONS)
    shared = FakeProducer()
    group = [Member(config, shared, [p]) for p in PARTITIONS]
    everyone = [alone, *group]
    for window in range(WORSE_FROM + 3):  # v2's drop has paged before the crash
        serve(everyone, window)
        run(everyone, 1_500)
    crashed = group[0]  # the decider dies (never stepped again); its process restarts
    assert crashed.monitor.group.decider is not None and crashed.monitor.group.decider.decided >= 5
    floor = crashed.monitor.alerts.find("ndcg-floor", (("model", "v2"),))
    assert floor is not None and floor.status is Status.FIRING
    restarted = Member(config, shared, crashed.stream.log, after=crashed)
    group[0] = restarted
    everyone = [alone, *group]
    for window in range(WORSE_FROM + 3, WINDOWS):
        serve(everyone, window)
        run(everyone, 1_500)
    for member in everyone:
        member.clock.advance(120_000)
    run(everyone, 8_000)

    assert restarted.monitor.group.role == DECIDES
    expected = single_records(alone)
    published = shared.comparisons(WINDOWS_TOPIC)
    assert [r.start_ms for r in published] == [r.start_ms for r in expected]  # each once
    for mine, theirs in zip(published, expected, strict=True):
        a, b = mine.measures[0], theirs.measures[0]
        assert same(a.result.delta, b.result.delta)
        assert a.units == b.units  # the per-query moments continued, not restarted
    for model in ("v1", "v2"):
        for rule in RULES:
            key = (rule, (("model", model),))
            want, got = alone.monitor.alerts.find(*key), restarted.monitor.alerts.find(*key)
            assert (want is None) == (got is None), key
            if want is not None and got is not None:
                assert (got.status, got.fired_at_ms, got.window) == (
                    want.status,
                    want.fired_at_ms,
                    want.window,
                ), key
