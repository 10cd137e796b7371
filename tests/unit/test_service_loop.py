"""The service loop on in-memory IO and a fake clock: liveness, the tick schedule, quiet streams.

`Monitor` with `tests.support.fakes` in place of Kafka: every poll, tick and commit happens on the
test's thread (or, for a stuck poll, on one the test controls), in milliseconds.

    windows 10s tumbling, lateness 1s, idle 5s, tick 1s, liveness 4s
"""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from monitor.clock import TickSchedule
from monitor.config.loader import Config, load_config
from monitor.testing.clock import FakeClock
from tests.support.fake_monitor import monitor_on
from tests.support.fakes import FakeProducer, FakeServer, FakeStream

T0 = 1_767_225_600_000
TOPIC = "events"
CONFIG = f"""
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: {TOPIC}}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 5s}}
schedule: {{interval: 1s, liveness_timeout: 4s}}
export: {{host: 127.0.0.1, port: 0}}
logging: {{level: WARNING}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Config:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\n")
    path = tmp_path / "rankmon.yaml"
    path.write_text(CONFIG)
    return load_config(path, environ={})


class Loop:
    """A monitor on fakes, started (HTTP served), and closed at the end."""

    def __init__(self, config: Config) -> None:
        self.clock = FakeClock(T0)
        self.stream = FakeStream(TOPIC)
        self.producer = FakeProducer()
        self.monitor = monitor_on(config, self.clock, self.stream, self.producer)
        self.ticks = 0
        tick = self.monitor.tick

        def counted_tick() -> None:
            self.ticks += 1
            tick()

        self.monitor.tick = counted_tick  # type: ignore[method-assign]
        self.monitor.start()

    def event(self, event_id: str, query: str, time_ms: int) -> None:
        value = {"event_id": event_id, "query_id": query, "ranking": ["d1", "d2"]}
        self.stream.append(0, orjson.dumps({**value, "event_time": time_ms}), time_ms)

    def run_for(self, ms: int, step_ms: int = 100) -> None:
        for _ in range(ms // step_ms):
            self.monitor.step()
            self.clock.advance(step_ms)

    def published(self) -> list[int]:
        return [s.summary.start_ms for s in self.producer.shares(f"{TOPIC}.windows")]

    def healthz(self) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"{self.monitor.server.url}/healthz", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


@pytest.fixture
def loop(config: Config) -> Iterator[Loop]:
    running = Loop(config)
    yield running
    running.stream.release()
    running.monitor.close()


def test_a_poll_that_never_returns_makes_healthz_fail_until_the_loop_moves_again(
    loop: Loop,
) -> None:
    loop.run_for(1_000)
    assert loop.healthz() == (200, "ok\n")
    loop.stream.stall()
    stuck = threading.Thread(target=loop.monitor.step, daemon=True)
    stuck.start()
    assert loop.stream.stalled.wait(5)
    loop.clock.advance(3_900)  # within the 4 s liveness timeout
    assert loop.healthz()[0] == 200
    loop.clock.advance(200)
    status, body = loop.healthz()
    assert status == 503 and "no progress for 4 s" in body
    loop.stream.release()
    stuck.join(5)
    assert loop.healthz()[0] == 200
    progress = loop.monitor.registry.get_sample_value("rankmon_loop_progress_timestamp_seconds")
    assert progress == loop.clock.now_ms() / 1000


def test_ticks_keep_their_interval_when_the_wall_clock_steps_back_or_forward(loop: Loop) -> None:
    loop.run_for(5_000)  # steps at 0.0 .. 4.9 s: ticks at 1, 2, 3, 4 s
    assert loop.ticks == 4
    loop.clock.step_wall(-3_600_000)  # an hour back: NTP, a restored VM
    loop.run_for(5_000)
    assert loop.ticks == 9
    loop.clock.step_wall(7_200_000)  # two hours forward: no burst of catch-up ticks
    loop.run_for(3_000)
    assert loop.ticks == 12


def test_a_loop_held_up_for_many_intervals_gets_one_tick_not_a_burst() -> None:
    clock = FakeClock(T0)
    schedule = TickSchedule(1.0, clock)
    clock.advance(1_000)
    assert schedule.due() and not schedule.due()
    clock.advance(7_500)
    assert schedule.due() and not schedule.due()
    clock.advance(999)
    assert not schedule.due()
    clock.advance(1)
    assert schedule.due()


def test_the_last_window_of_a_burst_closes_on_processing_time_once_the_stream_is_quiet(
    loop: Loop,
) -> None:
    # A burst at 2..4 s into the window [T0, T0 + 10 s), then silence.
    loop.clock.set(T0 + 2_000)
    for n in range(3):
        loop.event(f"e{n}", "q1", T0 + 2_000 + n * 1_000)
        loop.run_for(1_000)
    # Idle from T0 + 4 s + 5 s; the window's end plus lateness is T0 + 11 s.
    loop.run_for(6_000)  # now T0 + 11 s: quiet since 9 s, but 11 s is not yet past the end
    assert loop.published() == []
    loop.run_for(1_100)  # the next tick after T0 + 11 s
    assert loop.published() == [T0]
    assert loop.stream.commits[-1] == {0: 3}


def test_a_quiet_stream_does_not_close_windows_while_the_broker_is_away(loop: Loop) -> None:
    loop.clock.set(T0 + 2_000)
    loop.event("e0", "q1", T0 + 2_000)
    loop.run_for(1_000)
    loop.stream.broker_up = False  # an outage: records may be waiting on the broker
    loop.run_for(20_000)
    assert loop.published() == []
    loop.stream.broker_up = True
    loop.run_for(1_100)
    assert loop.published() == [T0]


def test_a_monitor_on_fakes_runs_its_loop_ticks_and_publishes_without_opening_a_socket(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_sockets(*args: object, **kwargs: object) -> None:
        raise AssertionError("a monitor on fakes opened a socket")

    monkeypatch.setattr(socket.socket, "connect", no_sockets)
    monkeypatch.setattr(socket.socket, "bind", no_sockets)
    clock, stream, producer, server = FakeClock(T0), FakeStream(TOPIC), FakeProducer(), FakeServer()
    monitor = monitor_on(config, clock, stream, producer, server=server)
    monitor.start()
    for n in range(30):  # 30 events over 30 s of event time: the first windows close
        event = {"event_id": f"e{n}", "query_id": "q1", "ranking": ["d1", "d2"]}
        stream.append(0, orjson.dumps({**event, "event_time": T0 + 1_000 * n}), T0 + 1_000 * n)
        monitor.step()
        clock.advance(1_000)
    monitor.close()
    published = producer.shares(f"{TOPIC}.windows")
    # T0 is on a 10 s boundary; the third window is still open (nothing closes early on close)
    assert [(s.summary.start_ms, s.summary.events) for s in published] == [
        (T0, 10),
        (T0 + 10_000, 10),
    ]
    assert (server.started, server.stopped) == (1, 1)
