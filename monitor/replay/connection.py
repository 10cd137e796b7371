"""One kept-alive HTTP/1.1 connection to the ranker, every attempt held to one deadline.

`RankerConnection.send(request, deadline)` writes a whole request (head and body in one
write); `receive(deadline, limit)` reads its answer: the status line, the headers and the
body, framed by `Content-Length`, by chunks or by the connection's close. Sending and
receiving are apart so that a replay's worker can publish the previous answer while the
ranker works on the next query (`monitor.replay.runner`).

The answer is input like an event:

- the deadline bounds the whole attempt (connecting, the TLS handshake, sending, the status
  line, the headers and the body together, however slowly the bytes drip): every socket read
  and write gets only what is left of it, and `TimeoutError` says it was spent;
- a body past `limit` bytes raises `TooLargeError` after reading at most `limit + 1` of it
  (a `Content-Length` past the limit before reading any);
- the head is at most `MAX_HEAD_BYTES` and `MAX_HEADERS` lines; anything that is not HTTP/1.x
  raises `ProtocolError`;
- a closed, reset or refused connection raises `OSError`.

After any error the connection is closed; the next `send` opens a new one. An answer that
says the server closes (`Connection: close`, HTTP/1.0) closes it too.

It does what a replay needs and no more: no proxies, no redirects, no pipelining, no
`Expect: 100-continue` (a stray 1xx answer is skipped). `http.client` did the same through
`email`'s header parser and a reader per read; a replay spent more on that than on scoring
the answer (bench/replay.py).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_HEADERS",
    "MAX_HEAD_BYTES",
    "ProtocolError",
    "RankerConnection",
    "Response",
    "TooLargeError",
]

MAX_HEAD_BYTES: Final = 65_536
MAX_HEADERS: Final = 100
_READ: Final = 65_536
_MAX_READ: Final = 1_048_576  # one read of a long body
_MAX_CHUNK_LINE: Final = 1024


class ProtocolError(Exception):
    """The ranker's bytes are not an HTTP/1.x answer."""


class TooLargeError(Exception):
    """The answer's body is past the limit."""


@dataclass(frozen=True)
class Response:
    """An answer: its status, its headers (names in lower case; a repeated one keeps its
    last value) and its body."""

    status: int
    headers: dict[str, str]
    body: bytes


class RankerConnection:
    """A connection to `host:port` (over TLS when `context` is given), opened on first use
    and kept alive across attempts; one thread uses it at a time."""

    def __init__(self, host: str, port: int, *, context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.port = port
        self._context = context
        self.sock: socket.socket | None = None
        self._deadline = 0.0
        self._buffer = bytearray()  # read past the head, not yet taken

    def send(self, request: bytes, deadline: float) -> None:
        """Write `request` (opening the connection first if need be) by `deadline`
        (monotonic seconds), which also bounds the `receive` after it."""
        self._deadline = deadline
        try:
            if self.sock is None:
                self.sock = self._open()
            self._left().sendall(request)
        except BaseException:
            self.close()
            raise

    def receive(self, limit: int) -> Response:
        """The answer to the request sent, its body at most `limit` bytes, read by the
        deadline `send` was given."""
        try:
            response, close = self._read_response(limit)
        except BaseException:
            self.close()
            raise
        if close or self._buffer:  # bytes past the answer: nothing to read them as
            self.close()
        return response

    def shutdown(self) -> None:
        """End the connection's exchange at once, from any thread: a read or write in
        progress fails (`interrupt` of a replay's stop)."""
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # closed already
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        sock, self.sock = self.sock, None
        self._buffer.clear()
        if sock is not None:
            sock.close()

    def _open(self) -> socket.socket:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the attempt's timeout was spent before connecting")
        sock = socket.create_connection((self.host, self.port), timeout=left)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock.settimeout(max(self._deadline - time.monotonic(), 1e-6))
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        return sock

    def _left(self) -> socket.socket:
        """The socket, its timeout what is left of the attempt."""
        sock = self.sock
        if sock is None:
            raise ConnectionAbortedError("the connection was closed")
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer took longer than the attempt's timeout")
        sock.settimeout(left)
        return sock

    def _fill(self, most: int = _READ) -> None:
        """Read more of the answer (at most `most` bytes) into the buffer; an end of the
        stream is an error."""
        data = self._left().recv(most)
        if not data:
            raise ConnectionResetError("the ranker closed the connection mid-answer")
        self._buffer += data

    def _read_response(self, limit: int) -> tuple[Response, bool]:
        while True:
            status, version, headers = self._read_head()
            if 100 <= status < 200 and status != 101:
                continue  # an interim answer: the real one follows
            break
        if status == 101:
            raise ProtocolError("the ranker switched protocols")
        connection = headers.get("connection", "").lower()
        close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
        if status in (204, 304):
            return Response(status, headers, b""), close
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return Response(status, headers, self._read_chunked(limit)), close
        length = headers.get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                raise ProtocolError(f"Content-Length {length[:40]!r}")
            size = int(length)
            if size > limit:
                raise TooLargeError(f"Content-Length {size} is past {limit}")
            return Response(status, headers, self._take(size)), close
        return Response(status, headers, self._read_to_close(limit)), True

    def _read_head(self) -> tuple[int, str, dict[str, str]]:
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise ProtocolError(f"an answer's head is past {MAX_HEAD_BYTES} bytes")
            self._fill()
        if end > MAX_HEAD_BYTES:
            raise ProtocolError(f"an answer's head is past {MAX_HEAD_BYTES} bytes")
        head = self._buffer[:end].decode("latin-1")
        del self._buffer[: end + 4]
        lines = head.split("\r\n")
        if len(lines) > MAX_HEADERS + 1:
            raise ProtocolError(f"an answer with more than {MAX_HEADERS} headers")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit() or rest[3:4] not in ("", " "):
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                raise ProtocolError(f"not a header line: {line[:80]!r}")
            headers[name.lower()] = value.strip()
        return int(code), version, headers

    def _take(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._fill(min(max(_READ, size - len(self._buffer)), _MAX_READ))
        body = bytes(self._buffer[:size])
        del self._buffer[:size]
        return body

    def _line(self) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            if len(self._buffer) > _MAX_CHUNK_LINE:
                raise ProtocolError("a chunk's size line is too long")
            self._fill()
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 2]
        return line

    def _read_chunked(self, limit: int) -> bytes:
        body = bytearray()
        while True:
            size_text = self._line().partition(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"not a chunk size: {size_text[:40]!r}") from None
            if size < 0:
                raise ProtocolError(f"not a chunk size: {size_text[:40]!r}")
            if size == 0:
                break
            if len(body) + size > limit:
                raise TooLargeError(f"a chunked body past {limit}")
            body += self._take(size)
            if self._take(2) != b"\r\n":
                raise ProtocolError("a chunk not followed by CRLF")
        while self._line():  # the trailers, up to the blank line that ends them
            pass
        return bytes(body)

    def _read_to_close(self, limit: int) -> bytes:
        while len(self._buffer) <= limit:
            data = self._left().recv(min(_READ, limit + 1 - len(self._buffer)))
            if not data:
                body = bytes(self._buffer)
                self._buffer.clear()
                return body
            self._buffer += data
        raise TooLargeError(f"a body past {limit}")
