"""Kill -9 `rankmon run` anywhere in a stream, restart it: the windows topic ends up holding,
record for record, what an uninterrupted run over the same input publishes.

One partition (so lateness is decided the same way in every run), a mixed stream (valid,
invalid, unknown-query, duplicate and late records) fed in chunks while the service runs, so
kills land between commits with windows open, published and unpublished:

    chunks     |--1--|--2--|--3--| ... |--8--|closer
    service    run ........ X (kill -9)     restart ............ SIGTERM
    compare    windows topic == the uninterrupted run's; dead letters: none lost

The crash points (`monitor.testing.crashpoints`) hit the moments an outside kill rarely hits:
half-way through publishing a tick's windows, and between the publish and the commit.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.demo.broker import EmbeddedBroker
from monitor.testing.crashpoints import CRASH_ENV
from monitor.testing.mixed_traffic import TrafficRecord
from tests.support.recovery_support import (
    Published,
    ServiceProcess,
    committed,
    create_topics,
    feed,
    stream,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]

COUNT = 320
CHUNKS = 8
PAUSE_S = 0.25
CATCH_UP_S = 60.0


@pytest.fixture(scope="module")
def records() -> list[TrafficRecord]:
    return stream(seed=11, count=COUNT)


@pytest.fixture(scope="module")
def uninterrupted(
    tansu: EmbeddedBroker, records: list[TrafficRecord], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Published]:
    yield run_through(tansu, tmp_path_factory.mktemp("reference"), records)


def run_through(
    broker: EmbeddedBroker,
    directory: Path,
    records: list[TrafficRecord],
    *,
    crash_at: str | None = None,
    kill_after_chunk: tuple[int, float] | None = None,
    expected_windows: int = 0,
) -> Published:
    """Feed `records` to a fresh topic while `rankmon run` consumes it; crash it once if asked
    (at a crash point, or by SIGKILL from here after a chunk and a delay), restart it, let it
    catch up to the closer, stop it with SIGTERM and read what it published."""
    bootstrap = broker.bootstrap_servers
    topic = f"rec-{uuid.uuid4().hex[:10]}"
    create_topics(broker, topic, 1)
    group = f"g-{topic}"
    config = write_config(directory, bootstrap, topic, group)
    env = {CRASH_ENV: crash_at} if crash_at else {}
    service = ServiceProcess(config, "first", env)
    service.wait_ready()

    def maybe_kill(chunk: int) -> None:
        if kill_after_chunk is not None and chunk == kill_after_chunk[0]:
            # After the first publish, or the restart would prove little on a slow machine.
            wait_until(lambda: bool(Published.read(bootstrap, topic).windows), 20, "a window")
            time.sleep(kill_after_chunk[1])
            service.kill()

    try:
        feed(bootstrap, topic, records, chunks=CHUNKS, pause_s=PAUSE_S, between=maybe_kill)
        if crash_at or kill_after_chunk:
            wait_until(lambda: not service.alive, 20, f"the crash at {crash_at}")
            assert service.process.returncode == -9, service.log()
            # Killed mid-stream: some windows out, some not (or the restart proves little).
            before = len(Published.read(bootstrap, topic).windows)
            assert 0 < before < expected_windows, before
            service = ServiceProcess(config, "restarted")
        closer = len(records) - 1
        wait_until(
            lambda: committed(bootstrap, group, topic, 1) == {0: closer},
            CATCH_UP_S,
            "the commit up to the closer",
        )
        assert service.terminate() == 0, service.log()
    finally:
        service.kill()
    return Published.read(bootstrap, topic)


def test_uninterrupted_run_publishes_windows_and_dead_letters_every_rejection(
    uninterrupted: Published, records: list[TrafficRecord]
) -> None:
    intended = {r.intended for r in records}
    assert intended == {"accepted", "invalid", "unknown_query", "duplicate", "late"}
    assert len(uninterrupted.windows) >= 20
    rejected = {
        (0, offset, r.intended) for offset, r in enumerate(records) if r.intended != "accepted"
    }
    assert uninterrupted.dead_letters == rejected


@pytest.mark.parametrize(
    ("crash_at"),
    ["after-window-publish:2", "after-publish:3", "after-commit:2", "after-intake:4"],
)
def test_crash_at_a_named_point_then_restart_publishes_what_an_uninterrupted_run_does(
    crash_at: str,
    tansu: EmbeddedBroker,
    records: list[TrafficRecord],
    uninterrupted: Published,
    tmp_path: Path,
) -> None:
    recovered = run_through(
        tansu, tmp_path, records, crash_at=crash_at, expected_windows=len(uninterrupted.windows)
    )
    assert recovered.windows == uninterrupted.windows
    assert recovered.dead_letters == uninterrupted.dead_letters


@pytest.mark.parametrize("seed", [1, 2])
def test_kill_at_a_random_moment_then_restart_publishes_what_an_uninterrupted_run_does(
    seed: int,
    tansu: EmbeddedBroker,
    records: list[TrafficRecord],
    uninterrupted: Published,
    tmp_path: Path,
) -> None:
    rng = random.Random(seed)
    moment = (rng.randrange(2, CHUNKS - 1), rng.uniform(0, PAUSE_S))
    recovered = run_through(
        tansu,
        tmp_path,
        records,
        kill_after_chunk=moment,
        expected_windows=len(uninterrupted.windows),
    )
    assert recovered.windows == uninterrupted.windows
    assert recovered.dead_letters == uninterrupted.dead_letters
