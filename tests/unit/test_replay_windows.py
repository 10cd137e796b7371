"""A replay is judged as one unit: once every owned partition delivered its end marker, the
windows holding the replay close at the next tick, without waiting for the idle timeout; a
replay whose marker never comes waits for it as before.

The monitor runs on fakes (two partitions, a fake clock); the records are what
`monitor.replay.events` builds, so the replayer and the monitor agree on them here too.

    windows 10s tumbling, lateness 1s, idle 1h (never reached), tick 1s
"""

from __future__ import annotations

import json
import math
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.config.loader import Config, load_config
from monitor.replay.events import end_marker, query_event, start_marker
from monitor.replay.ranker import Answer
from monitor.replay.topics import Query
from monitor.testing.clock import FakeClock
from monitor.windows.replay_ends import MAX_OPEN_REPLAYS, ReplayEnds
from monitor.windows.spec import WindowSpec
from monitor.windows.summary import WindowSummary
from tests.support.fake_monitor import monitor_on
from tests.support.fakes import FakeProducer, FakeStream

T0 = 1_767_225_600_000
TOPIC = "events"
CONFIG = f"""
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: {TOPIC}}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 1h}}
schedule: {{interval: 1s}}
segments: {{keys: [model]}}
export: {{host: 127.0.0.1, port: 0}}
logging: {{level: WARNING}}
"""
QUERIES = ("q1", "q2", "q3", "q4")


@pytest.fixture
def config(tmp_path: Path) -> Config:
    lines = [f"{q} 0 d1 2\n{q} 0 d2 1\n" for q in QUERIES]
    (tmp_path / "qrels.txt").write_text("".join(lines))
    path = tmp_path / "rankmon.yaml"
    path.write_text(CONFIG)
    return load_config(path, environ={})


class Replays:
    """A monitor on fakes owning partitions 0 and 1, fed what a replayer publishes."""

    def __init__(self, config: Config) -> None:
        self.clock = FakeClock(T0)
        self.stream = FakeStream(TOPIC, partitions=(0, 1))
        self.producer = FakeProducer()
        self.monitor = monitor_on(config, self.clock, self.stream, self.producer)

    def begin(self, replay_id: str, started_ms: int, *, model: str = "v1") -> None:
        """A replay's start markers, on both partitions."""
        _, value = start_marker(replay_id, started_ms=started_ms, segment={"model": model})
        for partition in (0, 1):
            self.stream.append(partition, value, started_ms + 1)

    def replay(
        self,
        replay_id: str,
        started_ms: int,
        *,
        ends: tuple[int, ...] = (0, 1),
        failing: frozenset[str] = frozenset(),
        model: str = "v1",
    ) -> None:
        """One replay's records (partition by query) of segment `model`, then its markers
        on `ends`; the ranker times out on the queries in `failing`."""
        counts = {0: 0, 1: 0}
        for n, query in enumerate(QUERIES):
            answer = Answer("ranked", ("d1", "d2") if n % 2 else ("d2", "d1"))
            if query in failing:
                answer = Answer("timeout", reason="timeout")
            _, value = query_event(
                replay_id, Query(query, query), answer, {"model": model}, started_ms
            )
            partition = n % 2
            counts[partition] += 1
            self.stream.append(partition, value, started_ms + 2_000)
        ranked = len(QUERIES) - len(failing)
        for partition in ends:
            _, value = end_marker(
                replay_id,
                events=counts[partition],
                queries=len(QUERIES),
                outcomes={"ranked": ranked, "timeout": len(failing)},
                started_ms=started_ms,
                ended_ms=started_ms + 2_500,
                segment={"model": model},
            )
            self.stream.append(partition, value, started_ms + 2_500)

    def run_for(self, ms: int, step_ms: int = 100) -> None:
        for _ in range(ms // step_ms):
            self.monitor.step()
            self.clock.advance(step_ms)

    def published(self) -> list[tuple[int, int, dict[str, float]]]:
        return [
            (s.summary.start_ms, s.summary.queries, dict(s.summary.means))
            for s in self.producer.shares(f"{TOPIC}.windows")
        ]


@pytest.fixture
def replays(config: Config) -> Iterator[Replays]:
    running = Replays(config)
    yield running
    running.monitor.close()


def test_a_replay_closes_its_window_at_the_first_tick_after_its_last_marker(
    replays: Replays,
) -> None:
    started = T0 + 3_000  # the window [T0, T0 + 10 s), long before its end
    replays.clock.advance(4_000)
    replays.replay("r1", started)
    replays.run_for(1_100)  # one tick after the markers were read
    [(start, queries, means)] = replays.published()
    assert (start, queries) == (T0, len(QUERIES))
    log3 = math.log2(3)
    assert means["ndcg@10:linear"] == pytest.approx((1.0 + (1 + 2 / log3) / (2 + 1 / log3)) / 2)
    assert replays.monitor.snapshot().outcomes.get("replay_notice") == 2
    assert replays.producer.sent.get(f"{TOPIC}.dlq", []) == []


def test_each_segments_window_names_the_replays_it_holds_and_only_those(
    replays: Replays,
) -> None:
    replays.clock.advance(4_000)
    replays.replay("r-v1", T0 + 3_000, model="v1")  # two rankers replayed in one window
    replays.replay("r-v2", T0 + 3_500, model="v2")
    replays.run_for(1_100)
    shares = replays.producer.shares(f"{TOPIC}.windows")
    named = {share.summary.segment: share.summary.replays for share in shares}
    assert named == {(("model", "v1"),): ("r-v1",), (("model", "v2"),): ("r-v2",)}
    # and the names survive the windows topic
    back = {WindowSummary.from_json(s.summary.to_json()).replays for s in shares}
    assert back == {("r-v1",), ("r-v2",)}


def test_a_replays_failed_queries_count_in_its_window_and_lower_its_coverage_not_its_means(
    replays: Replays,
) -> None:
    replays.clock.advance(4_000)
    replays.replay("r1", T0 + 3_000, failing=frozenset({"q2", "q4"}))  # the odd rankings
    replays.run_for(1_100)
    [share] = replays.producer.shares(f"{TOPIC}.windows")
    summary = share.summary
    assert (summary.queries, summary.failed_queries) == (2, 2)
    assert summary.coverage == 0.5 and summary.failure_share == 0.5
    # the mean is over q1 and q3 alone (both ranked d2 d1); q2 and q4 would have scored 1.0
    log3 = math.log2(3)
    assert summary.means["ndcg@10:linear"] == pytest.approx((1 + 2 / log3) / (2 + 1 / log3))
    assert replays.monitor.snapshot().outcomes.get("replay_notice") == 4  # 2 failed, 2 ends
    assert replays.producer.sent.get(f"{TOPIC}.dlq", []) == []
    # The on-call page and the API say which replay it was and what the ranker failed.
    replays.monitor.start()
    base = replays.monitor.metrics_url.replace("/metrics", "")
    with urllib.request.urlopen(base + "/", timeout=10) as answer:
        page = answer.read().decode()
    assert "replay r1" in page and "the ranker failed 2 more (errors or timeouts)" in page
    with urllib.request.urlopen(base + "/api/v1/windows?segment=model=v1", timeout=10) as answer:
        [window] = json.loads(answer.read())["windows"]
    assert (window["queries"], window["failed_queries"], window["replays"]) == (2, 2, ["r1"])


def test_a_replay_the_ranker_never_answered_still_has_its_window_and_pages_replay_errors(
    tmp_path: Path,
) -> None:
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 d1 2\n{q} 0 d2 1\n" for q in QUERIES))
    rules = (
        "alerts: {rules: [{name: ranker-failing, replay_errors: {max: 0.05}},"
        " {name: floor, measure: ndcg@10, below: 0.5}]}\n"
    )
    (tmp_path / "rankmon.yaml").write_text(CONFIG + rules)
    down = Replays(load_config(tmp_path / "rankmon.yaml", environ={}))
    try:
        down.clock.advance(4_000)
        down.replay("r1", T0 + 3_000, failing=frozenset(QUERIES))
        down.run_for(1_100)
        [share] = down.producer.shares(f"{TOPIC}.windows")
        assert (share.summary.queries, share.summary.failed_queries) == (0, 4)
        assert math.isnan(share.summary.means["ndcg@10:linear"])
        [alert] = [a for a in down.monitor.snapshot().alerts if a.status.value == "firing"]
        assert alert.rule.name == "ranker-failing"
        assert alert.verdict is not None and alert.verdict.value == 1.0
        assert "failed 4 of the 4 queries" in alert.verdict.note
    finally:
        down.monitor.close()


def test_a_failed_query_sent_twice_counts_once(replays: Replays) -> None:
    replays.clock.advance(4_000)
    _, failure = query_event(
        "r1", Query("q1", "q1"), Answer("error", reason="http_503"), {"model": "v1"}, T0 + 3_000
    )
    replays.stream.append(0, failure, T0 + 3_100)  # a replayer that re-sent after a crash
    replays.replay("r1", T0 + 3_000, failing=frozenset({"q1"}))
    replays.run_for(1_100)
    [share] = replays.producer.shares(f"{TOPIC}.windows")
    assert (share.summary.queries, share.summary.failed_queries) == (3, 1)


def test_a_replay_without_all_its_markers_waits_and_the_next_one_closes_both(
    replays: Replays,
) -> None:
    replays.clock.advance(4_000)
    replays.replay("r1", T0 + 3_000, ends=(0,))  # killed before partition 1's marker
    replays.run_for(3_000)
    assert replays.published() == []  # the idle timeout (1 h) is far away
    replays.clock.advance(20_000)
    replays.replay("r2", T0 + 23_000)
    replays.run_for(1_100)
    assert [start for start, _, _ in replays.published()] == [T0, T0 + 20_000]


def test_a_replay_killed_half_way_closes_on_the_idle_timeout_with_its_coverage(
    tmp_path: Path,
) -> None:
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 d1 2\n{q} 0 d2 1\n" for q in QUERIES))
    (tmp_path / "rankmon.yaml").write_text(CONFIG.replace("idle_timeout: 1h", "idle_timeout: 5s"))
    half = Replays(load_config(tmp_path / "rankmon.yaml", environ={}))
    try:
        half.clock.advance(4_000)
        for n, query in enumerate(QUERIES[:2]):  # two of four queries, then the replayer died
            answer = Answer("ranked", ("d1", "d2"))
            _, value = query_event("r1", Query(query, query), answer, {"model": "v1"}, T0 + 3_000)
            half.stream.append(n % 2, value, T0 + 5_000)
        half.run_for(4_000)
        assert half.published() == []  # no marker: it waits for the idle timeout
        half.run_for(10_000)
        [share] = half.producer.shares(f"{TOPIC}.windows")
        assert (share.summary.start_ms, share.summary.queries) == (T0, 2)
        assert share.summary.coverage == 0.5  # what is missing shows
    finally:
        half.monitor.close()


def test_the_floor_needs_every_owned_partition_and_is_the_end_of_the_last_window_holding_it() -> (
    None
):
    ends = ReplayEnds(WindowSpec(size_ms=10_000, hop_ms=5_000, allowed_lateness_ms=0))
    ends.add("r1", 0, 12_000)
    assert ends.floor(frozenset({0, 1})) is None
    ends.add("r1", 1, 12_000)
    assert ends.floor(frozenset({0, 1})) == 20_000  # windows [5, 15) and [10, 20) hold 12
    assert ends.floor(frozenset({0, 1})) is None  # forgotten once used
    ends.add("r2", 2, 40_000)
    assert ends.floor(frozenset({2})) == 50_000  # another member owns only partition 2
    assert ends.floor(frozenset()) is None


def test_markers_of_replays_that_never_end_are_bounded() -> None:
    ends = ReplayEnds(WindowSpec(size_ms=10_000, hop_ms=10_000, allowed_lateness_ms=0))
    for n in range(MAX_OPEN_REPLAYS + 10):
        ends.add(f"r{n}", 0, n * 10_000)
    assert len(ends) == MAX_OPEN_REPLAYS


def test_two_replayers_on_one_schedule_each_get_their_whole_window_whichever_ends_first(
    replays: Replays,
) -> None:
    # One replayer's markers used to close the window for every segment: the slower
    # replay's records came after and were late (53-88 of 141 queries kept in the issue).
    replays.clock.advance(4_000)
    replays.begin("r-v1", T0 + 3_000, model="v1")  # the same cron tick, two rankers
    replays.begin("r-v2", T0 + 3_000, model="v2")
    replays.replay("r-v1", T0 + 3_000, model="v1")  # v1 answers fast and ends
    replays.run_for(3_000)
    assert replays.published() == []  # v2 is still replaying into the window
    replays.replay("r-v2", T0 + 3_000, model="v2")
    replays.run_for(1_100)
    shares = replays.producer.shares(f"{TOPIC}.windows")
    whole = {s.summary.segment: (s.summary.queries, s.summary.replays) for s in shares}
    assert whole == {
        (("model", "v1"),): (len(QUERIES), ("r-v1",)),
        (("model", "v2"),): (len(QUERIES), ("r-v2",)),
    }
    assert replays.monitor.snapshot().outcomes.get("late") is None


def test_a_manual_replay_while_the_scheduled_one_runs_shares_its_window_and_nothing_is_late(
    replays: Replays,
) -> None:
    replays.clock.advance(4_000)
    replays.begin("scheduled", T0 + 3_000)
    replays.begin("manual", T0 + 4_000, model="v2")
    replays.replay("scheduled", T0 + 3_000)
    replays.run_for(2_000)
    replays.replay("manual", T0 + 4_000, model="v2")
    replays.run_for(1_100)
    assert sorted(q for _, q, _ in replays.published()) == [len(QUERIES)] * 2
    assert replays.monitor.snapshot().outcomes.get("late") is None


def test_a_replay_started_in_a_window_already_closed_counts_whole_in_the_next_none_late(
    replays: Replays, caplog: pytest.LogCaptureFixture
) -> None:
    # A manual --once after the scheduled replay of its window ended: every record was late
    # (207 of 207 in the issue), and the monitor said nothing.
    replays.clock.advance(4_000)
    replays.begin("scheduled", T0 + 3_000)
    replays.replay("scheduled", T0 + 3_000)
    replays.run_for(1_100)  # its window closed at its end
    replays.clock.advance(2_000)
    replays.begin("manual", T0 + 6_000, model="v2")
    with caplog.at_level("WARNING", logger="monitor.ingest.handoff"):
        replays.replay("manual", T0 + 6_000, model="v2", failing=frozenset({"q3"}))
        replays.run_for(1_100)
    shares = replays.producer.shares(f"{TOPIC}.windows")
    placed = {s.summary.replays: (s.summary.start_ms, s.summary.queries) for s in shares}
    assert placed == {("scheduled",): (T0, 4), ("manual",): (T0 + 10_000, 3)}
    manual = next(s.summary for s in shares if s.summary.replays == ("manual",))
    assert manual.failed_queries == 1  # its failed query moved with it
    assert replays.monitor.snapshot().outcomes.get("late") is None
    [warning] = [r for r in caplog.records if "already closed" in r.getMessage()]
    said = warning.__dict__["fields"]
    assert said["replay"] == "manual" and said["counted_at_ms"] == T0 + 10_000


def test_an_open_replay_holds_the_floor_until_it_ends_or_the_watermark_passes_it() -> None:
    ends = ReplayEnds(WindowSpec(size_ms=10_000, hop_ms=10_000, allowed_lateness_ms=0))
    ends.started("slow", 13_000)
    ends.add("fast", 0, 12_000)
    assert ends.floor(frozenset({0})) == 10_000  # [10, 20) stays open for "slow"
    ends.add("slow", 0, 13_000)
    assert ends.floor(frozenset({0})) == 20_000
    ends.started("killed", 23_000)
    ends.add("next", 0, 24_000)
    assert ends.floor(frozenset({0}), watermark_ms=25_000) == 20_000  # held by "killed"
    assert ends.floor(frozenset({0}), watermark_ms=30_000) == 30_000  # its window passed


def test_start_markers_of_replays_that_never_end_are_bounded_and_hold_nothing_for_ever() -> None:
    # A writer of the events topic may send start markers that no end follows: each holds
    # its window open, at most MAX_OPEN_REPLAYS of them, until the watermark passes it.
    ends = ReplayEnds(WindowSpec(size_ms=10_000, hop_ms=10_000, allowed_lateness_ms=0))
    for n in range(MAX_OPEN_REPLAYS + 500):
        ends.started(f"hostile-{n}", 12_000)
    assert ends.holding() == MAX_OPEN_REPLAYS and not ends.moved()
    ends.add("honest", 0, 13_000)
    assert ends.floor(frozenset({0}), watermark_ms=5_000) == 10_000  # held by them
    assert ends.floor(frozenset({0}), watermark_ms=20_000) == 20_000  # their window passed
