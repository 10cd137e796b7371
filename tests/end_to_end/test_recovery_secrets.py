"""A SASL password never leaves the process: not in `rankmon run`'s output (its own logs at
debug level, and the warnings and errors kafka-python prints, while every connection attempt
fails and is retried), not in `/metrics`, not in the shutdown's output.

Tansu cannot authenticate (tests/support/realparts.py), which is the point here: failing
handshakes are where clients are tempted to print what they sent. The config's own masking
is tested in test_config.py, test_kafka_options.py and test_check_config.py.
"""

from __future__ import annotations

import base64
import signal
import time
from pathlib import Path

import pytest

from monitor.demo.broker import EmbeddedBroker
from tests.support.recovery_support import SERVICE_STOP_S, ServiceProcess, wait_until, write_config

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PASSWORD = "pw-9f3Kq!sEcReT-7781"


def test_sasl_password_appears_in_no_log_line_metric_or_error_of_a_running_service(
    tansu: EmbeddedBroker, tmp_path: Path
) -> None:
    config = write_config(tmp_path, tansu.bootstrap_servers, "secret-events", "secret")
    text = config.read_text().replace(
        "  max_poll_records: 50\n",
        "  max_poll_records: 50\n"
        "  security:\n"
        "    protocol: SASL_PLAINTEXT\n"
        "    sasl: {mechanism: SCRAM-SHA-256, username: rankmon, password_env: KAFKA_PW}\n",
    )
    config.write_text(text + "logging: {level: debug, format: json}\n")
    service = ServiceProcess(config, "service", env={"KAFKA_PW": PASSWORD})
    try:
        wait_until(lambda: "rankmon_broker_up" in service.metrics(), 30, "the metrics endpoint")
        time.sleep(2)  # handshakes fail meanwhile (kafka-python retries them quickly)
        metrics = service.metrics()
        service.process.send_signal(signal.SIGTERM)
        status = service.process.wait(SERVICE_STOP_S)
    finally:
        service.kill()

    output = service.log_path.read_text(errors="replace")
    assert status == 0, output[-3000:]
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    for form in (PASSWORD, encoded, PASSWORD.encode().hex()):
        assert form not in output
        assert form not in metrics
    assert "rankmon stopped" in output
