"""`MetricsServer`: `/metrics`, `/healthz` and `/readyz` on one HTTP(S) listener.

prometheus-client's `start_http_server` serves its registry on every path and cannot add
routes, so its WSGI app is mounted at `/metrics` inside a small threaded wsgiref server:

- `GET /metrics`: the registry (text format; OpenMetrics and gzip when the scraper asks).
- `GET /healthz`: 200 `ok` while the service makes progress; 503 with the reason when the
  `stalled` check says it does not (the poll loop stuck: `monitor.exporter.Liveness`).
- `GET /readyz`: 200 `ready`, or 503 with the conditions not met, one per line.
- anything else: 404.

With `certfile` and `keyfile` the listener speaks TLS only. The TLS handshake runs in the
request's own thread (not in `accept()`), so a client that connects and stalls cannot block
the scrapes of others.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from types import TracebackType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

__all__ = ["MetricsServer"]

# start_response(status, headers) as WSGI defines it
StartResponse = Callable[[str, list[tuple[str, str]]], object]
ReadinessCheck = Callable[[], list[str]]
StallCheck = Callable[[], str | None]

_log = logging.getLogger(__name__)

_ROUTES = "rankmon serves /metrics, /healthz, /readyz\n"


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    # Request threads must not keep the process alive or pile up to be joined at close.
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A broken client (plain HTTP on the TLS port, a dropped scrape) is not our error."""
        _log.debug("metrics request from %s failed", client_address, exc_info=True)


class _QuietHandler(WSGIRequestHandler):
    # A client that connects and never sends a request frees its thread after this.
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would flood the log; the service logs what matters."""


class _IPv6Server(_ThreadingWSGIServer):
    address_family = socket.AF_INET6


class MetricsServer:
    """Serves a registry plus health and readiness; `port=0` binds a free port."""

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
    ) -> None:
        if (certfile is None) != (keyfile is None):
            raise ValueError("TLS needs both certfile and keyfile")
        self.host = host
        self.port = port
        self._metrics_app = make_wsgi_app(registry)
        self._not_ready = not_ready
        self._stalled = stalled
        self._tls: ssl.SSLContext | None = None
        if certfile is not None and keyfile is not None:
            self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._tls.load_cert_chain(certfile, keyfile)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL of the listener (after `start()`, with the bound port)."""
        scheme = "https" if self._tls is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> MetricsServer:
        """Bind and serve in a daemon thread; `port` becomes the bound port."""
        server_class = _IPv6Server if ":" in self.host else _ThreadingWSGIServer
        server = make_server(
            self.host, self.port, self._route, server_class, handler_class=_QuietHandler
        )
        if self._tls is not None:
            server.socket = self._tls.wrap_socket(
                server.socket, server_side=True, do_handshake_on_connect=False
            )
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="rankmon-metrics-http", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _route(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            body: Iterable[bytes] = self._metrics_app(environ, start_response)
            return body
        if path == "/healthz":
            stalled = None if self._stalled is None else self._stalled()
            if stalled is not None:
                return _plain(start_response, "503 Service Unavailable", f"stalled: {stalled}\n")
            return _plain(start_response, "200 OK", "ok\n")
        if path == "/readyz":
            missing = self._not_ready()
            if missing:
                text = "".join(f"not ready: {name}\n" for name in missing)
                return _plain(start_response, "503 Service Unavailable", text)
            return _plain(start_response, "200 OK", "ready\n")
        return _plain(start_response, "404 Not Found", _ROUTES)


def _plain(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    body = text.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
    return [body]
