"""The real parts the tests run against: Tansu, moto S3, Prometheus, Alertmanager, promtool.

Every part is a real process on a free loopback port with its storage in a temp directory,
started in about 0.1 s, polled until ready (bounded), and killed on teardown. When a binary is
missing the test FAILS under `CI=true` and is skipped elsewhere (`require_binary`).

Fixtures (registered in `tests/conftest.py`):

- `tansu` (session): an `EmbeddedBroker` (memory storage). Tests share it; each gets fresh
  topics from `new_topic`.
- `new_topic(partitions=1) -> str`: creates a uniquely named topic on `tansu`.
- `kafka_outage`: use it (`@pytest.mark.usefixtures("kafka_outage")`) in a test that kills
  the broker under running kafka-python clients: it absorbs kafka-python's unclosed sockets
  of failed reconnects, which would otherwise fail the session. Close the clients in the test.
- `moto_s3` (function): a `MotoS3` server with a bucket; `moto_s3.broker_env` and
  `moto_s3.storage` make an `EmbeddedBroker` whose data survives a restart.
- `start_prometheus(targets, *, rule_files=(), scheme="http", alertmanagers=())
  -> PrometheusServer`: scrapes the targets every second (TLS targets without verification);
  `.query(expr)` runs an instant query, `.wait_for(expr)` polls until it returns a series.
- `start_alertmanager(webhook_url, *, group_wait="0s") -> AlertmanagerServer`: every alert
  goes to the webhook (send_resolved); `.url`, `.post_alerts(alerts)`, `.alerts()`.
- `webhook_receiver -> WebhookReceiver`: an HTTP server recording each POSTed JSON body;
  `.url`, `.bodies`, `.wait_for(predicate, timeout_s)`.
- `promtool -> Promtool`: `.check_metrics(text)`, `.check_rules(*paths)`,
  `.test_rules(*paths)`; each returns a `ToolResult(ok, output)`.

Tansu, measured here: a consumer-group join waits half the session timeout (tests set
`session_timeout_ms` to about 6000; production keeps Kafka's default); `end_offsets()`,
`offsets_for_times()` and commit metadata answer wrongly, so nothing may depend on them; TLS
and SASL cannot be exercised against it. Its S3 store is not crash-safe for an idempotent
producer: it stores the producer's new sequence number, then the high watermark, then the
batch, so a kill -9 between them loses a batch whose resend the broker then answers as a
duplicate (which clients count as written). Tests kill it only while nothing is produced.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka import KafkaProducer

from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.replay.replayer import Replayer
from monitor.replay.runner import ReplayReport
from monitor.service import Monitor

READY_TIMEOUT_S = 20.0


def require_binary(name: str) -> str:
    """The path of an installed binary; fails the test in CI, skips it elsewhere, if missing."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (Debian: scripts/ensure-system-deps)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs {message}")
        pytest.skip(message)
    return path


def missing_part(message: str) -> None:
    """Fail in CI, skip elsewhere: for a real part that is unavailable."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI needs {message}")
    pytest.skip(message)


def http_get(url: str, timeout_s: float = 2.0) -> bytes:
    """GET a URL and return the body (raises `urllib.error.URLError` on failure)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        body: bytes = response.read()
        return body


def wait_until_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll a readiness URL until it answers 200; fail with the process log otherwise."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{process.args!r} exited: {log.read_text()[-2000:]}")
        try:
            http_get(url, timeout_s=1.0)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.05)
    pytest.fail(f"{url} not ready in {READY_TIMEOUT_S}s: {log.read_text()[-2000:]}")


class ServerProcess:
    """A child process with its log in `workdir`, terminated (then killed) on `stop()`."""

    def __init__(self, command: Sequence[str], workdir: Path, ready_url: str) -> None:
        self.log_path = workdir / "process.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                list(command), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        try:
            wait_until_ready(ready_url, self.process, self.log_path)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """SIGTERM, SIGKILL after 5 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class PrometheusServer:
    """A Debian `prometheus` scraping given targets every second."""

    url: str
    server: ServerProcess

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Run an instant query; returns the `data.result` list."""
        params = urllib.parse.urlencode({"query": expr})
        body = json.loads(http_get(f"{self.url}/api/v1/query?{params}"))
        if body.get("status") != "success":
            raise AssertionError(f"query {expr!r} failed: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for(self, expr: str, timeout_s: float = 15.0) -> list[dict[str, Any]]:
        """Poll `query(expr)` until it returns at least one series (bounded wait)."""
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.query(expr)
            if result or time.monotonic() > deadline:
                return result
            time.sleep(0.2)


def prometheus_config(
    targets: Sequence[str], scheme: str, rule_files: Sequence[Path], alertmanagers: Sequence[str]
) -> dict[str, Any]:
    """A scrape config: one job `rankmon`, 1 s intervals."""
    scrape: dict[str, Any] = {
        "job_name": "rankmon",
        "scheme": scheme,
        "static_configs": [{"targets": list(targets)}],
    }
    if scheme == "https":
        scrape["tls_config"] = {"insecure_skip_verify": True}
    config: dict[str, Any] = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [scrape],
        "rule_files": [str(path) for path in rule_files],
    }
    if alertmanagers:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": alertmanagers}]}]}
    return config


def start_prometheus_server(
    workdir: Path,
    targets: Sequence[str],
    *,
    scheme: str = "http",
    rule_files: Sequence[Path] = (),
    alertmanagers: Sequence[str] = (),
) -> PrometheusServer:
    """Start Prometheus in `workdir` (config and TSDB there) on a free loopback port."""
    binary = require_binary("prometheus")
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(targets, scheme, rule_files, alertmanagers)))
    port = free_port()
    command = [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'tsdb'}"]
    command += [f"--web.listen-address=127.0.0.1:{port}"]
    url = f"http://127.0.0.1:{port}"
    return PrometheusServer(url, ServerProcess(command, workdir, f"{url}/-/ready"))


@dataclass
class AlertmanagerServer:
    """A Debian `prometheus-alertmanager` routing every alert to one webhook."""

    url: str
    server: ServerProcess

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        """POST alerts to the v2 API (labels, annotations, startsAt, endsAt)."""
        request = urllib.request.Request(
            f"{self.url}/api/v2/alerts",
            data=json.dumps(alerts).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts Alertmanager holds (v2 API)."""
        result: list[dict[str, Any]] = json.loads(http_get(f"{self.url}/api/v2/alerts"))
        return result


def start_alertmanager_server(
    workdir: Path, webhook_url: str, *, group_wait: str = "0s"
) -> AlertmanagerServer:
    """Start Alertmanager (no clustering) in `workdir` on a free loopback port."""
    binary = require_binary("prometheus-alertmanager")
    config = {
        "route": {
            "receiver": "webhook",
            "group_by": ["..."],
            "group_wait": group_wait,
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [
            {"name": "webhook", "webhook_configs": [{"url": webhook_url, "send_resolved": True}]}
        ],
    }
    config_path = workdir / "alertmanager.yml"
    config_path.write_text(yaml.safe_dump(config))
    port = free_port()
    command = [binary, f"--config.file={config_path}", f"--storage.path={workdir / 'data'}"]
    command += [f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]
    url = f"http://127.0.0.1:{port}"
    return AlertmanagerServer(url, ServerProcess(command, workdir, f"{url}/-/ready"))


class WebhookReceiver:
    """An HTTP server on a free loopback port that records every POSTed JSON body."""

    def __init__(self) -> None:
        self.bodies: list[Any] = []
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                with receiver._changed:
                    receiver.bodies.append(body)
                    receiver._changed.notify_all()
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def wait_for(self, predicate: Callable[[list[Any]], bool], timeout_s: float = 15.0) -> bool:
        """Wait until `predicate(bodies)` holds; False after the (bounded) timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.bodies), timeout_s)

    def stop(self) -> None:
        """Shut the server down and join its thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@dataclass(frozen=True)
class ToolResult:
    """Whether a promtool check passed, and what it printed."""

    ok: bool
    output: str


class Promtool:
    """The Debian `promtool`: metric exposition lint, rule checks and rule unit tests."""

    def __init__(self, binary: str) -> None:
        self.binary = binary

    def check_metrics(self, text: str) -> ToolResult:
        """`promtool check metrics` on exposition text (it lints names, HELP, TYPE, units)."""
        return self._run(["check", "metrics"], stdin=text)

    def check_rules(self, *paths: Path) -> ToolResult:
        """`promtool check rules FILE...`."""
        return self._run(["check", "rules", *map(str, paths)])

    def test_rules(self, *paths: Path) -> ToolResult:
        """`promtool test rules FILE...` (rule unit tests)."""
        return self._run(["test", "rules", *map(str, paths)])

    def _run(self, args: list[str], stdin: str | None = None) -> ToolResult:
        done = subprocess.run(
            [self.binary, *args],
            check=False,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return ToolResult(done.returncode == 0, done.stdout + done.stderr)


class MotoS3:
    """A `moto_server` S3 with one bucket, for Tansu's durable `s3://` storage."""

    bucket = "tansu"

    def __init__(self, workdir: Path) -> None:
        moto_server = Path(sys.executable).parent / "moto_server"
        if not moto_server.exists():
            missing_part(f"moto_server (PyPI moto[server]) at {moto_server}")
        port = free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        command = [str(moto_server), "-H", "127.0.0.1", "-p", str(port)]
        self.server = ServerProcess(command, workdir, f"{self.endpoint}/moto-api/")
        request = urllib.request.Request(f"{self.endpoint}/{self.bucket}", method="PUT")
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()

    @property
    def storage(self) -> str:
        """The `--storage-engine` URL for Tansu."""
        return f"s3://{self.bucket}/"

    @property
    def broker_env(self) -> dict[str, str]:
        """The AWS variables Tansu's object store reads."""
        return {
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }


@contextmanager
def monitor_thread(monitor: Monitor, stop_timeout_s: float = 30.0) -> Iterator[Monitor]:
    """Run `monitor.run` in a thread for the `with` block; stop it and check it stopped."""
    stop = threading.Event()
    thread = threading.Thread(target=monitor.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield monitor
    finally:
        stop.set()
        thread.join(timeout=stop_timeout_s)
    assert not thread.is_alive(), f"the monitor did not stop within {stop_timeout_s} s"


def produce_records(bootstrap: str, topic: str, records: Sequence[tuple[bytes, bytes]]) -> None:
    """Produce (key, value) records to `topic` and wait until the broker has them (in large
    batches: per-record requests made a 180k-record test spend 14 s here)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=1_000_000)
    for key, value in records:
        producer.send(topic, key=key, value=value)
    producer.flush()
    producer.close()


def replay_once(config: Path) -> ReplayReport:
    """One replay by the `replay:` section of the service config `config`, published to its
    events topic (as `rankmon replay --once`, in this process)."""
    settings = load_config(config, environ={})
    assert settings.replay is not None
    replayer = Replayer(settings.replay, settings.kafka, settings.evaluation_set.path)
    try:
        return replayer.once()
    finally:
        replayer.close()


def write_service_config(
    directory: Path,
    broker: EmbeddedBroker,
    topic: str,
    qrels: Mapping[str, Mapping[str, int]],
    extra_yaml: str = "",
) -> Path:
    """A service config for `topic` on `broker` (its .dlq and .windows topics created): the
    given qrels, 10 s tumbling windows with 1 s lateness, a 1 s tick, `model` as segment, a
    free metrics port; `extra_yaml` adds top-level sections."""
    for suffix in (".dlq", ".windows"):
        broker.create_topic(topic + suffix, 1)
    qrels_file = directory / "qrels.txt"
    qrels_file.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    config = directory / "rankmon.yaml"
    config.write_text(
        f"""
kafka:
  bootstrap_servers: ["{broker.bootstrap_servers}"]
  topic: {topic}
  group_id: g-{topic}
  dead_letter_topic: {topic}.dlq
  windows_topic: {topic}.windows
  session_timeout_ms: 6000
evaluation_set: {{path: {qrels_file}}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 1h}}
schedule: {{interval: 1s}}
segments: {{keys: [model]}}
export: {{host: 127.0.0.1, port: 0}}
{extra_yaml}"""
    )
    return config
