"""The replay's HTTP/1.1 connection (`monitor.replay.connection`) against a scripted server on
loopback that writes exactly the bytes each test gives it: every framing of an answer, a
connection kept or closed, and the answers a broken or hostile ranker gives."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import trustme

from monitor.declare import read_settings
from monitor.replay.connection import (
    MAX_HEAD_BYTES,
    ProtocolError,
    RankerConnection,
    Response,
    TooLargeError,
)
from monitor.replay.ranker import RankerClient
from monitor.replay.settings import RankerSettings
from monitor.replay.topics import Query
from monitor.sections import ConfigSection

REQUEST = b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
OK = b'HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{"hits":[]}'


class ScriptedServer:
    """Accepts connections on loopback; for each request read, writes the next of `replies`
    (bytes, or a list of (bytes, pause) pieces written apart), then closes the connection if
    the reply is followed by None in the script."""

    def __init__(self, replies: Sequence[object], *, context: ssl.SSLContext | None = None):
        self.replies = list(replies)
        self.connections = 0
        self.requests: list[bytes] = []
        self._context = context
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self.replies:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            if self._context is not None:
                try:
                    sock = self._context.wrap_socket(sock, server_side=True)
                except (OSError, ssl.SSLError):
                    sock.close()
                    continue
            with sock:
                try:
                    self._converse(sock)
                except OSError:  # the client hung up (a reset, mid-answer)
                    continue

    def _converse(self, sock: socket.socket) -> None:
        buffer = b""
        while self.replies:
            while b"\r\n\r\n" not in buffer:
                data = sock.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, rest = buffer.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(rest) < length:
                rest += sock.recv(65536)
            self.requests.append(head + b"\r\n\r\n" + rest[:length])
            buffer = rest[length:]
            reply = self.replies.pop(0)
            if isinstance(reply, bytes):
                sock.sendall(reply)
            else:
                for piece, pause in reply:  # type: ignore[attr-defined]
                    sock.sendall(piece)
                    time.sleep(pause)
            if self.replies and self.replies[0] is None:
                self.replies.pop(0)
                return

    def close(self) -> None:
        self.replies.clear()
        self._listener.close()


class Loopback:
    """The servers and connections of one test, closed after it."""

    def __init__(self) -> None:
        self.servers: list[ScriptedServer] = []
        self.connections: list[RankerConnection] = []

    def server(
        self, replies: Sequence[object], *, context: ssl.SSLContext | None = None
    ) -> ScriptedServer:
        self.servers.append(ScriptedServer(replies, context=context))
        return self.servers[-1]

    def connect(self, server: ScriptedServer) -> RankerConnection:
        self.connections.append(RankerConnection("127.0.0.1", server.port))
        return self.connections[-1]


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    made = Loopback()
    yield made
    for connection in made.connections:
        connection.close()
    for server in made.servers:
        server.close()


def exchange(
    connection: RankerConnection, *, limit: int = 1 << 20, timeout: float = 5.0
) -> Response:
    connection.send(REQUEST, time.monotonic() + timeout)
    return connection.receive(limit)


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
        b'{"hits":[]}',
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b'\r\n4;ext=1\r\n{"hi\r\n7\r\nts":[]}\r\n0\r\nX-Trailer: t\r\n\r\n',
        b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"hits":[]}',
    ],
    ids=["content-length", "chunked", "to-close"],
)
def test_an_answer_is_read_whole_whatever_frames_its_body(loopback: Loopback, reply: bytes) -> None:
    server = loopback.server([reply, None])
    response = exchange(loopback.connect(server))
    assert response.status == 200
    assert response.body == b'{"hits":[]}'
    assert response.headers["content-type"] == "application/json"


def test_a_kept_alive_connection_carries_the_next_request_and_a_closing_one_is_reopened(
    loopback: Loopback,
) -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    old = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    server = loopback.server([OK, OK, closing, None, old, None, OK])
    connection = loopback.connect(server)
    bodies = [exchange(connection).body for _ in range(5)]
    assert bodies == [b'{"hits":[]}', b'{"hits":[]}', b"{}", b"{}", b'{"hits":[]}']
    # two answers on the first connection; a Connection: close and an HTTP/1.0 answer each
    # end theirs
    assert server.connections == 3
    assert [request.split(b"\r\n")[0] for request in server.requests] == [
        b"POST /search HTTP/1.1"
    ] * 5


def test_an_interim_answer_is_skipped_for_the_real_one(loopback: Loopback) -> None:
    server = loopback.server([b"HTTP/1.1 100 Continue\r\n\r\n" + OK])
    response = exchange(loopback.connect(server))
    assert (response.status, response.body) == (200, b'{"hits":[]}')


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n" + b"x" * 4096,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"400\r\n"
        + b"x" * 1024
        + b"\r\n"
        + b"400\r\n"
        + b"x" * 1024
        + b"\r\n",
        b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 300_000,
    ],
    ids=["content-length", "chunked", "to-close"],
)
def test_a_body_past_the_limit_is_too_large_and_the_connection_is_dropped(
    loopback: Loopback, reply: bytes
) -> None:
    server = loopback.server([reply, OK])
    connection = loopback.connect(server)
    with pytest.raises(TooLargeError):
        exchange(connection, limit=1500)
    assert connection.sock is None
    # the next request opens a new connection and is answered
    assert exchange(connection).body == b'{"hits":[]}'
    assert server.connections == 2


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 2OO OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"y" * (MAX_HEAD_BYTES + 10) + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ],
    ids=[
        "not-http",
        "bad-status",
        "bad-header",
        "head-too-long",
        "bad-chunk-size",
        "bad-length",
        "switching",
    ],
)
def test_bytes_that_are_not_an_http_answer_are_a_protocol_error(
    loopback: Loopback, reply: bytes
) -> None:
    server = loopback.server([reply])
    connection = loopback.connect(server)
    with pytest.raises(ProtocolError):
        exchange(connection)
    assert connection.sock is None


def test_an_answer_cut_short_by_the_server_is_a_connection_error(
    loopback: Loopback,
) -> None:
    server = loopback.server([b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"hi', None])
    with pytest.raises(OSError) as raised:
        exchange(loopback.connect(server))
    assert not isinstance(raised.value, TimeoutError)


def test_a_dripping_answer_times_out_at_the_attempts_deadline(
    loopback: Loopback,
) -> None:
    drip = [(b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n", 0.05)]
    drip += [(b"x", 0.05)] * 40  # 2 s in all, each byte well within a socket timeout
    server = loopback.server([drip])
    connection = loopback.connect(server)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        exchange(connection, timeout=0.4)
    assert time.monotonic() - started < 1.5  # the deadline, not the last byte, ended it


def test_a_ranker_over_tls_is_asked_with_the_systems_trust_and_its_name_checked(
    loopback: Loopback, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    authority = trustme.CA()
    certificate = authority.issue_cert("localhost")
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(server_context)
    answer = b'{"hits": [{"id": "d1", "score": 2.0}, {"id": "d2", "score": 1.0}]}'
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer)
    server = loopback.server([reply, reply], context=server_context)
    ca_file = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # the system's trust, as configured

    def client(host: str) -> RankerClient:
        url = f"https://{host}:{server.port}/search"
        settings = read_settings(RankerSettings, ConfigSection({"url": url}, "r", {}))
        return RankerClient(settings, 10)

    trusted = client("localhost")
    answered = trusted.ask(Query("q1", "text"))
    trusted.close()
    assert (answered.outcome, answered.ids) == ("ranked", ("d1", "d2"))
    assert server.requests[0].startswith(b"POST /search HTTP/1.1\r\nHost: localhost:")
    # the certificate names localhost, not 127.0.0.1: the handshake fails, as a connection
    wrong_name = client("127.0.0.1")
    refused = wrong_name.ask(Query("q1", "text"))
    wrong_name.close()
    assert (refused.outcome, refused.reason) == ("error", "connection")
