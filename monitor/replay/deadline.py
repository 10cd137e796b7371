"""`http.client` connections whose every attempt has one deadline, body included: the judge
worker's chat client (`monitor.judge.chat`) sets `deadline` (monotonic seconds) before each
request; a socket's own timeout bounds one read only, so an answer dripped a byte at a time
would otherwise never time out. (The replay's ranker client has a connection of its own with
the same deadline, `monitor.replay.connection`.)"""

from __future__ import annotations

import http.client
import io
import socket
import time
from collections.abc import Callable
from typing import Any

__all__ = ["DeadlineHTTPConnection", "DeadlineHTTPSConnection", "DeadlineSocket"]


class DeadlineSocket:
    """A connected socket whose reads and writes each get only what is left of the
    attempt's deadline: a server that drips its answer a byte at a time still times out
    when the attempt's `timeout` is spent (a socket's own timeout bounds one read only).

    As a socket's own, a response's reader keeps the socket open after the connection was
    closed: `http.client` closes the connection as soon as the headers say it will not be
    reused (HTTP/1.0, `Connection: close`) and reads the body after."""

    def __init__(self, sock: socket.socket, deadline: Callable[[], float]) -> None:
        self._sock = sock
        self._deadline = deadline
        self._readers = 0
        self._closing = False

    def _left(self) -> None:
        left = self._deadline() - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer took longer than the attempt's timeout")
        self._sock.settimeout(left)

    def sendall(self, data: Any) -> None:
        self._left()
        self._sock.sendall(data)

    def recv_into(self, buffer: Any, size: int = 0) -> int:
        self._left()
        return self._sock.recv_into(buffer, size)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        self._readers += 1
        return io.BufferedReader(_DeadlineReader(self))

    def reader_closed(self) -> None:
        self._readers -= 1
        if self._closing and self._readers <= 0:
            self._sock.close()

    def close(self) -> None:
        self._closing = True
        if self._readers <= 0:
            self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _DeadlineReader(io.RawIOBase):
    """The raw stream `http.client` reads a response from, through a `DeadlineSocket`."""

    def __init__(self, sock: DeadlineSocket) -> None:
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            self._sock.reader_closed()
        super().close()


class DeadlineHTTPConnection(http.client.HTTPConnection):
    """A connection whose attempt ends at `deadline` (monotonic seconds), set per request."""

    deadline = 0.0

    def connect(self) -> None:
        super().connect()
        self.sock = DeadlineSocket(self.sock, lambda: self.deadline)


class DeadlineHTTPSConnection(http.client.HTTPSConnection):
    """`DeadlineHTTPConnection` over TLS."""

    deadline = 0.0

    def connect(self) -> None:
        super().connect()
        self.sock = DeadlineSocket(self.sock, lambda: self.deadline)
