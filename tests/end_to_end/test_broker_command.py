"""`rankmon broker` starts the embedded broker on its own, on the port asked for: clients
produce and consume through it, SIGTERM stops it with exit 0 and no process left, and a port
already taken is one line naming it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer

from monitor.demo.broker import free_port, port_in_use

pytestmark = [pytest.mark.broker]

RANKMON = [sys.executable, "-m", "monitor.cli"]


def _first_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    assert ready, "rankmon broker printed nothing"
    return process.stdout.readline()


def test_the_broker_command_serves_clients_on_its_port_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    port = free_port()
    with subprocess.Popen(
        [*RANKMON, "broker", "--port", str(port), "--topic", "events:2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as process:
        code, errors = _serve_then_stop(process, port)
    assert code == 0, errors
    deadline = time.monotonic() + 10
    while port_in_use("127.0.0.1", port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not port_in_use("127.0.0.1", port), "the broker outlived its command"


def _serve_then_stop(process: subprocess.Popen[str], port: int) -> tuple[int, str]:
    try:
        line = _first_line(process, 60)
        assert f"listening on 127.0.0.1:{port}" in line
        assert "events (2 partitions)" in line
        bootstrap = f"127.0.0.1:{port}"
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        producer.send("events", key=b"q1", value=b'{"hello": 1}').get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(
            "events",
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            consumer_timeout_ms=20_000,
        )
        try:
            assert consumer.partitions_for_topic("events") == {0, 1}
            values = [next(iter(consumer)).value]
        finally:
            consumer.close()
        assert values == [b'{"hello": 1}']
        # A second broker on the same port is refused before it starts anything.
        again = subprocess.run(
            [*RANKMON, "broker", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert again.returncode == 2
        assert f"127.0.0.1:{port} is in use" in again.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=30)
    return process.returncode, errors
