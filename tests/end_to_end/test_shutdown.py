"""SIGTERM and SIGINT stop `rankmon run` cleanly: no window finalized early, the dead letters
flushed, the safe offsets committed, exit status 0, within the shutdown bound; also when the
broker is gone at that moment.

The schedule's interval is an hour, so no tick runs: whatever is committed and dead-lettered
was done by the shutdown itself.

    offsets   0   1   2   3  4  5 ...
              bad bad bad e  e  e ...       every window still open
    committed after SIGTERM: 3, the first record of the oldest open window
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest

from monitor.commands.run import SHUTDOWN_TIMEOUT_S
from monitor.demo.broker import EmbeddedBroker
from monitor.testing.mixed_traffic import INVALID_VALUES, TrafficRecord
from tests.support.recovery_support import (
    TRAFFIC,
    Published,
    ServiceProcess,
    committed,
    create_topics,
    produce,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]

# The wait for the exit: the service's own bound plus process start-up and slack.
EXIT_WITHIN_S = SHUTDOWN_TIMEOUT_S + 10


def invalid_then_valid() -> list[TrafficRecord]:
    bad = [TrafficRecord(b"k", value, "invalid", 0) for value in INVALID_VALUES]
    valid = [
        TrafficRecord(r.key, r.value, r.intended, r.event_time_ms)
        for r in TRAFFIC.records(seed=41, count=60)
        if r.intended == "accepted"
    ]
    return bad + valid


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_stop_signal_commits_the_safe_offsets_flushes_dead_letters_and_finalizes_nothing(
    stop_signal: signal.Signals, tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    bootstrap, topic = tansu.bootstrap_servers, f"stop-{uuid.uuid4().hex[:10]}"
    create_topics(tansu, topic, 1)
    records = invalid_then_valid()
    config = write_config(tmp_path, bootstrap, topic, "stop", interval="1h")
    service = ServiceProcess(config, "service")
    try:
        service.wait_ready()
        produce(bootstrap, topic, records)
        wait_until(
            lambda: (
                f'rankmon_events_total{{outcome="accepted",reason=""}} {len(records) - 3}.0'
                in service.metrics()
            ),
            30,
            "every record taken in",
        )
        service.process.send_signal(stop_signal)
        status = service.process.wait(EXIT_WITHIN_S)
    finally:
        service.kill()

    assert status == 0, service.log()
    assert committed(bootstrap, "stop", topic, 1) == {0: len(INVALID_VALUES)}
    published = Published.read(bootstrap, topic)
    assert published.windows == []
    assert published.dead_letters == {(0, offset, "invalid") for offset in range(3)}


def test_stop_signal_with_the_broker_gone_exits_cleanly_within_the_bound(
    tmp_path: Path,
) -> None:
    broker = EmbeddedBroker().start()
    try:
        bootstrap = broker.bootstrap_servers
        create_topics(broker, "events", 1)
        config = write_config(tmp_path, bootstrap, "events", "gone", interval="1h")
        service = ServiceProcess(config, "service")
        try:
            service.wait_ready()
            produce(bootstrap, "events", invalid_then_valid())
            wait_until(lambda: 'outcome="accepted"' in service.metrics(), 30, "records taken in")
            broker.kill()
            wait_until(lambda: "rankmon_broker_up 0.0" in service.metrics(), 30, "broker down")
            service.process.send_signal(signal.SIGTERM)
            status = service.process.wait(EXIT_WITHIN_S)
        finally:
            service.kill()
    finally:
        broker.stop()

    assert status == 0, service.log()
    assert "rankmon stopped" in service.log()
