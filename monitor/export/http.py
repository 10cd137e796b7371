"""`MetricsServer`: `/metrics`, `/healthz`, `/readyz` (and routes added by others) over HTTP(S).

- `GET /metrics`: the registry, in Prometheus text or OpenMetrics as the scraper asks
  (`Accept`), gzipped when it accepts that (`Accept-Encoding`), `name[]` filters as
  prometheus-client's own server reads them.
- `GET /healthz`: 200 `ok` while the service makes progress; 503 with the reason when the
  `stalled` check says it does not (the poll loop stuck: `monitor.export.exporter.Liveness`).
- `GET /readyz`: 200 `ready`, or 503 with the conditions not met, one per line.
- other routes a caller registers (`routes`), and 404 for the rest;
- `POST` to the routes a caller registers for it (`posts`, the judging page's grades): the body
  at most `MAX_BODY_BYTES`, its length given (`Content-Length`, no chunks), read within the
  request's deadline like the headers.

The network is hostile: the server is one asyncio event loop in a thread of its own, so a
client that connects and drips one byte at a time holds a few hundred bytes, not a thread.
What one client can hold is bounded: a request (line and headers) must arrive within
`REQUEST_DEADLINE_S` whole, not per read; a request line over `MAX_LINE_BYTES` is refused
(414), headers over `MAX_HEADER_BYTES` or `MAX_HEADERS` (431), a body past `MAX_BODY_BYTES` or
on a GET (413), a method other than GET and HEAD, or POST but to a route that takes one (405),
a target that is no URL (400); each connection serves one request and closes. With `certfile`
and `keyfile` the listener speaks TLS only, the handshake bounded by the same deadline.

Probes stay fast under load. `/healthz` and `/readyz` are answered on the event loop itself;
every other route runs in a worker thread, one for `/metrics` and one for the page and the
API, so a slow explanation delays neither a probe nor a scrape. At most `MAX_WAITING`
requests wait for a worker, and the bodies not yet written to their clients take at most
`MAX_PENDING_BYTES`: past either, a request is answered 503 at once (with Retry-After), so
clients that ask and never read cannot hold more memory than that. At most
`export.max_connections` (default `MAX_CONNECTIONS`) are open at once; a new one past that
closes the connection that has waited longest for its request (an idle or dripping client),
so a flood of idle connections cannot shut out probes and scrapes: only when every open
connection is being answered is the new one closed.
Refused requests and their reasons are logged on one line each, never with a traceback.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import socket
import ssl
import threading
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from monitor.export.settings import ExportConfig

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_CONNECTIONS",
    "MAX_PENDING_BYTES",
    "MAX_WAITING",
    "REQUEST_DEADLINE_S",
    "HttpEndpoint",
    "MetricsServer",
    "PostRoute",
    "Response",
    "Route",
]

ReadinessCheck = Callable[[], list[str]]
StallCheck = Callable[[], str | None]

REQUEST_DEADLINE_S: Final = 10.0
MAX_CONNECTIONS: Final = 1024
MAX_LINE_BYTES: Final = 8192
MAX_HEADER_BYTES: Final = 16_384
MAX_HEADERS: Final = 64
MAX_BODY_BYTES: Final = 8192
WRITE_DEADLINE_S: Final = 30.0
MAX_WAITING: Final = 64
MAX_PENDING_BYTES: Final = 64 * 1024 * 1024
# Answered on the event loop: cheap, and what a kubelet's probe or a load balancer asks.
_PROBES: Final = frozenset({"/healthz", "/readyz"})

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Response:
    """What a route answers: status line text, content type, body, extra headers."""

    status: str
    content_type: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


# A route gets the query parameters (name -> values) and the request headers (lower case).
Route = Callable[[Mapping[str, list[str]], Mapping[str, str]], Response]
# A POST route gets the body and the request headers (lower case).
PostRoute = Callable[[bytes, Mapping[str, str]], Response]


def _plain(status: str, text: str) -> Response:
    return Response(status, "text/plain; charset=utf-8", text.encode())


class _RequestError(Exception):
    def __init__(self, status: str, text: str) -> None:
        super().__init__(text)
        self.response = _plain(status, text + "\n")


class HttpEndpoint(Protocol):
    """What the service needs of its HTTP server (`MetricsServer`; tests pass a fake)."""

    @property
    def url(self) -> str: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


class MetricsServer:
    """Serves a registry plus health and readiness; `port=0` binds a free port."""

    @classmethod
    def from_settings(
        cls,
        settings: ExportConfig,
        registry: CollectorRegistry,
        not_ready: ReadinessCheck,
        *,
        stalled: StallCheck | None = None,
        routes: Mapping[str, Route] | None = None,
        posts: Mapping[str, PostRoute] | None = None,
    ) -> MetricsServer:
        """The server the `export` section describes (`monitor.export.settings`)."""
        return cls(
            registry,
            not_ready,
            host=settings.host,
            port=settings.port,
            max_connections=settings.max_connections,
            certfile=None if settings.tls_certfile is None else str(settings.tls_certfile),
            keyfile=None if settings.tls_keyfile is None else str(settings.tls_keyfile),
            stalled=stalled,
            routes=routes,
            posts=posts,
        )

    def __init__(
        self,
        registry: CollectorRegistry,
        not_ready: ReadinessCheck,
        *,
        host: str = "0.0.0.0",
        port: int = 9464,
        certfile: str | None = None,
        keyfile: str | None = None,
        stalled: StallCheck | None = None,
        routes: Mapping[str, Route] | None = None,
        max_connections: int | None = None,
        posts: Mapping[str, PostRoute] | None = None,
    ) -> None:
        if (certfile is None) != (keyfile is None):
            raise ValueError("TLS needs both certfile and keyfile")
        self.host = host
        self.port = port
        # `export.max_connections`; None: `MAX_CONNECTIONS` as it is when a client connects
        self.max_connections = max_connections
        self._registry = registry
        self._not_ready = not_ready
        self._stalled = stalled
        self._routes: dict[str, Route] = {
            "/metrics": self._metrics,
            "/healthz": self._healthz,
            "/readyz": self._readyz,
            **(routes or {}),
        }
        self._posts: dict[str, PostRoute] = dict(posts or {})
        self._tls: ssl.SSLContext | None = None
        if certfile is not None and keyfile is not None:
            self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._tls.load_cert_chain(certfile, keyfile)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._open = 0  # connections being served now
        self._reading: OrderedDict[int, asyncio.StreamWriter] = OrderedDict()  # oldest first
        self._waiting = 0  # requests waiting for a worker thread or computing
        self._pending_bytes = 0  # bodies computed and not yet written to their clients
        self._workers: dict[str, ThreadPoolExecutor] = {}
        self.refused = 0  # connections closed at once: MAX_CONNECTIONS were open and busy
        self.evicted = 0  # idle connections closed to make room for a new one
        self.busy = 0  # requests answered 503: too many waiting, or too many bytes unsent

    @property
    def waiting(self) -> int:
        """Requests waiting for a worker thread or being answered by one, now."""
        return self._waiting

    @property
    def url(self) -> str:
        """Base URL of the listener (after `start()`, with the bound port)."""
        scheme = "https" if self._tls is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> MetricsServer:
        """Bind and serve in a daemon thread; `port` becomes the bound port.

        Raises `OSError` when the address cannot be bound (in use, unknown host)."""
        loop = asyncio.new_event_loop()
        try:
            server = loop.run_until_complete(self._listen())
        except BaseException:
            loop.close()
            raise
        self._loop, self._server = loop, server
        self._workers = {
            name: ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"rankmon-http-{name}")
            for name in ("metrics", "pages")
        }
        self.port = server.sockets[0].getsockname()[1]
        self._thread = threading.Thread(
            target=loop.run_forever, name="rankmon-metrics-http", daemon=True
        )
        self._thread.start()
        return self

    async def _listen(self) -> asyncio.Server:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        return await asyncio.start_server(
            self._serve,
            self.host,
            self.port,
            family=family,
            ssl=self._tls,
            ssl_handshake_timeout=REQUEST_DEADLINE_S if self._tls else None,
            limit=MAX_LINE_BYTES,
            backlog=512,
            reuse_address=True,
        )

    def stop(self) -> None:
        """Stop serving and close the socket; idempotent."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        server = self._server

        async def shut() -> None:
            if server is not None:
                server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        asyncio.run_coroutine_threadsafe(shut(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        loop.close()
        for pool in self._workers.values():
            pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- one connection -----------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limit = MAX_CONNECTIONS if self.max_connections is None else self.max_connections
        if self._open >= limit and not self._evict_oldest_reader():
            self.refused += 1
            writer.close()
            return
        self._open += 1
        key = id(writer)
        self._reading[key] = writer
        pending = 0
        try:
            try:
                async with asyncio.timeout(REQUEST_DEADLINE_S):
                    method, target, headers, body = await self._read_request(reader)
                self._reading.pop(key, None)
                response = await self._answer(method, target, headers, body)
                head_only = method == "HEAD"
            except _RequestError as error:
                response, head_only = error.response, False
                _log.info("HTTP request refused: %s", error.response.status)
            except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                return  # too slow, or gone (or evicted): nothing to answer
            if self._pending_bytes and self._pending_bytes + len(response.body) > MAX_PENDING_BYTES:
                response = self._busy()  # held for clients that do not read: refuse more
            pending = len(response.body)
            self._pending_bytes += pending
            async with asyncio.timeout(WRITE_DEADLINE_S):
                await self._write(writer, response, head_only)
        except (TimeoutError, ConnectionError, ssl.SSLError):
            pass  # a client that stops reading, or breaks TLS, is not our error
        except asyncio.CancelledError:
            pass  # the server is stopping: end quietly (a cancelled task is logged as an error)
        finally:
            self._pending_bytes -= pending
            self._reading.pop(key, None)
            self._open -= 1
            writer.close()

    def _evict_oldest_reader(self) -> bool:
        """Close the connection that has waited longest for its request; False if none is
        waiting for one (every open connection is being answered)."""
        if not self._reading:
            return False
        _, writer = self._reading.popitem(last=False)
        writer.transport.abort()  # its reader sees the end of the stream and its task ends
        self.evicted += 1
        return True

    async def _read_request(
        self, reader: asyncio.StreamReader
    ) -> tuple[str, str, dict[str, str], bytes]:
        line = await _read_line(reader, "414 URI Too Long", "request line too long")
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _RequestError("400 Bad Request", "not an HTTP/1.x request line")
        method, target, _ = parts
        headers: dict[str, str] = {}
        size = count = 0
        while True:
            header = await _read_line(
                reader, "431 Request Header Fields Too Large", "header too long"
            )
            if not header:
                break
            size += len(header)
            count += 1
            if size > MAX_HEADER_BYTES or count > MAX_HEADERS:
                raise _RequestError("431 Request Header Fields Too Large", "headers too large")
            name, colon, value = header.partition(":")
            if not colon or not name or name != name.strip():
                raise _RequestError("400 Bad Request", "malformed header")
            headers[name.lower()] = value.strip()
        if method == "POST" and _path(target) in self._posts:
            return method, target, headers, await _read_body(reader, headers)
        if method not in ("GET", "HEAD"):
            raise _RequestError("405 Method Not Allowed", "only GET and HEAD")
        if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
            raise _RequestError("413 Content Too Large", "requests take no body")
        return method, target, headers, b""

    async def _answer(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes = b""
    ) -> Response:
        try:
            parsed = urllib.parse.urlsplit(target)
            query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        except ValueError as error:  # "http://[::1/": an invalid IPv6 URL, and the like
            raise _RequestError("400 Bad Request", "the request target is not a URL") from error
        if method == "POST":
            post = self._posts[parsed.path]
            return await self._pooled(lambda: post(body, headers), parsed.path)
        route = self._routes.get(parsed.path)
        if route is None:
            known = ", ".join(sorted(self._routes))
            return _plain("404 Not Found", f"rankmon serves {known}\n")
        if parsed.path in _PROBES:
            return self._call(parsed.path, route, query, headers)
        return await self._pooled(lambda: route(query, headers), parsed.path)

    async def _pooled(self, answer: Callable[[], Response], path: str) -> Response:
        """`answer()` on the path's worker thread, within `MAX_WAITING` and the bytes unsent."""
        if self._waiting >= MAX_WAITING or self._pending_bytes >= MAX_PENDING_BYTES:
            return self._busy()
        pool = self._workers["metrics" if path == "/metrics" else "pages"]
        self._waiting += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(pool, self._called, path, answer)
        finally:
            self._waiting -= 1

    def _busy(self) -> Response:
        self.busy += 1
        _log.info(
            "HTTP request refused: busy (%d waiting, %d bytes unsent)",
            self._waiting,
            self._pending_bytes,
        )
        return Response(
            "503 Service Unavailable",
            "text/plain; charset=utf-8",
            b"busy: retry in a second\n",
            {"Retry-After": "1"},
        )

    @staticmethod
    def _call(
        path: str, route: Route, query: Mapping[str, list[str]], headers: Mapping[str, str]
    ) -> Response:
        return MetricsServer._called(path, lambda: route(query, headers))

    @staticmethod
    def _called(path: str, answer: Callable[[], Response]) -> Response:
        try:
            return answer()
        except Exception:
            _log.exception("HTTP route %s failed", path)
            return _plain("500 Internal Server Error", "internal error\n")

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, response: Response, head_only: bool) -> None:
        lines = [
            f"HTTP/1.1 {response.status}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
            "Connection: close",
            "X-Content-Type-Options: nosniff",
            *(f"{name}: {value}" for name, value in response.headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        if not head_only:
            writer.write(response.body)
        await writer.drain()

    # -- routes -------------------------------------------------------------------------

    def _metrics(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        registry = self._registry
        names = query.get("name[]")
        if names:
            registry = registry.restricted_registry(names)  # type: ignore[assignment]
        encoder, content_type = choose_encoder(headers.get("accept", ""))
        body = encoder(registry)
        extra: dict[str, str] = {}
        if "gzip" in headers.get("accept-encoding", ""):
            body, extra = gzip.compress(body, compresslevel=6), {"Content-Encoding": "gzip"}
        return Response("200 OK", content_type, body, extra)

    def _healthz(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        stalled = None if self._stalled is None else self._stalled()
        if stalled is not None:
            return _plain("503 Service Unavailable", f"stalled: {stalled}\n")
        return _plain("200 OK", "ok\n")

    def _readyz(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        missing = self._not_ready()
        if missing:
            text = "".join(f"not ready: {name}\n" for name in missing)
            return _plain("503 Service Unavailable", text)
        return _plain("200 OK", "ready\n")


def _path(target: str) -> str:
    try:
        return urllib.parse.urlsplit(target).path
    except ValueError:
        return ""


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    """A POST's body: its length given, at most `MAX_BODY_BYTES`, no chunks."""
    if "transfer-encoding" in headers:
        raise _RequestError("411 Length Required", "send the body with a Content-Length")
    length = headers.get("content-length", "")
    if not (length.isascii() and length.isdigit()):
        raise _RequestError("411 Length Required", "send the body with a Content-Length")
    if int(length) > MAX_BODY_BYTES:
        raise _RequestError("413 Content Too Large", f"a body takes {MAX_BODY_BYTES} bytes at most")
    return await reader.readexactly(int(length))


async def _read_line(reader: asyncio.StreamReader, status: str, problem: str) -> str:
    """One CRLF-terminated line; `_RequestError(status)` past `MAX_LINE_BYTES`."""
    try:
        raw = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError as error:
        raise _RequestError(status, problem) from error
    return raw.decode("latin-1").rstrip("\r\n")  # latin-1: every byte decodes
