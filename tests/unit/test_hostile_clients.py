"""Hostile clients, round two: probes and scrapes against slow routes, idle floods, readers
that never read, and request targets that are no URL. Against the real HTTP server.

No test here times the server: each holds a route blocked on an event, and checks that what
must not wait for it (a probe, a scrape) is answered while it is blocked.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from http.client import HTTPException
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from monitor.config.loader import load_config
from monitor.export import http
from monitor.export.exporter import Exporter
from monitor.export.http import MetricsServer, Response, Route

BIG = 20 * 1024 * 1024


class Blocking:
    """A route that waits until released, as a slow explanation holds its thread."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def __call__(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        self.entered.release()
        self.release.wait(timeout=30)
        return Response("200 OK", "text/plain", b"slow\n")


@pytest.fixture
def blocking() -> Blocking:
    return Blocking()


@pytest.fixture
def server(blocking: Blocking) -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    exporter = Exporter(registry, process_metrics=False)

    def big(query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        return Response("200 OK", "text/plain", b"x" * BIG)

    routes: dict[str, Route] = {"/explain": blocking, "/big": big}
    with MetricsServer(
        registry, exporter.readiness.missing, host="127.0.0.1", port=0, routes=routes
    ) as served:
        yield served
    blocking.release.set()


def get(server: MetricsServer, path: str, timeout_s: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"{server.url}{path}", timeout=timeout_s) as answer:
            return int(answer.status), bytes(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, bytes(error.read())


def in_thread(server: MetricsServer, path: str) -> threading.Thread:
    def ask() -> None:
        # The server may be stopped under it at the end of the test: that is no failure.
        with contextlib.suppress(OSError, HTTPException):
            get(server, path, 60.0)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


def wait_until(predicate: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def raw(server: MetricsServer, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_probes_and_scrapes_are_answered_while_pages_are_being_computed(
    server: MetricsServer, blocking: Blocking
) -> None:
    clients = [in_thread(server, "/explain") for _ in range(4)]
    assert blocking.entered.acquire(timeout=10)  # one computes, the others wait their turn
    assert get(server, "/healthz") == (200, b"ok\n")
    assert get(server, "/readyz")[0] in (200, 503)
    status, body = get(server, "/metrics")
    assert status == 200 and b"rankmon_broker_up" in body
    blocking.release.set()
    for client in clients:
        client.join(timeout=30)
        assert not client.is_alive()


def test_past_max_waiting_a_page_is_answered_503_at_once_and_probes_still_pass(
    server: MetricsServer, blocking: Blocking, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "MAX_WAITING", 2)
    clients = [in_thread(server, "/explain") for _ in range(2)]
    assert blocking.entered.acquire(timeout=10)
    wait_until(lambda: server.waiting == 2)  # one computing, one waiting for the worker
    assert get(server, "/explain") == (503, b"busy: retry in a second\n")
    assert server.busy >= 1
    assert get(server, "/healthz") == (200, b"ok\n")
    blocking.release.set()
    for client in clients:
        client.join(timeout=30)


def test_a_flood_of_idle_connections_does_not_shut_out_probes_or_scrapes(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "MAX_CONNECTIONS", 5)
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    try:
        time.sleep(0.2)  # all five are open and waiting for their requests
        assert raw(server, b"GET /healthz HTTP/1.1\r\n\r\n").endswith(b"ok\n")
        assert b"rankmon_broker_up" in raw(server, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert server.evicted == 1  # the second found room: the first one had finished
        assert server.refused == 0
    finally:
        for conn in idle:
            conn.close()


def test_export_max_connections_bounds_the_connections_the_configured_server_keeps(
    tmp_path: Path,
) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "c.yaml").write_text(
        "kafka: {topic: events}\nevaluation_set: {path: q.txt}\n"
        "export: {host: 127.0.0.1, port: 0, max_connections: 3}\n"
    )
    registry = CollectorRegistry()
    exporter = Exporter(registry, process_metrics=False)
    settings = load_config(tmp_path / "c.yaml", {}).export
    with MetricsServer.from_settings(settings, registry, exporter.readiness.missing) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        try:
            time.sleep(0.2)  # all three are open and waiting for their requests
            assert raw(server, b"GET /healthz HTTP/1.1\r\n\r\n").endswith(b"ok\n")
            assert server.evicted == 1  # the fourth connection closed the oldest idle one
            assert server.refused == 0
        finally:
            for conn in idle:
                conn.close()


def test_clients_that_ask_for_big_answers_and_never_read_hold_a_bounded_amount(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "MAX_PENDING_BYTES", 2 * BIG + BIG // 2)
    readers = []
    try:
        for _ in range(4):
            conn = socket.create_connection(("127.0.0.1", server.port))
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            conn.sendall(b"GET /big HTTP/1.1\r\n\r\n")  # and never read
            readers.append(conn)
        deadline = time.monotonic() + 20
        while server.busy < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        # The first two bodies fit the budget; the next ones are refused, not held.
        assert server.busy == 2
        assert get(server, "/healthz") == (200, b"ok\n")
    finally:
        for conn in readers:
            conn.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and get(server, "/big", 30)[0] != 200:
        time.sleep(0.1)
    assert get(server, "/big", 30) == (200, b"x" * BIG)


@pytest.mark.parametrize(
    "target",
    [b"http://[::1/", b"http://[zz]/metrics", b"//[/healthz"],
    ids=["bracket", "ipv6", "net"],
)
def test_a_request_target_that_is_no_url_gets_400_and_no_traceback(
    server: MetricsServer, target: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    answer = raw(server, b"GET " + target + b" HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]
    assert not [r for r in caplog.records if r.exc_info]
    assert raw(server, b"GET /healthz HTTP/1.1\r\n\r\n").endswith(b"ok\n")
