"""The demo's HTTP servers (the rankers, the stand-in LLM): a threaded server on a loopback
port, served from a thread of its own between `start` (or `with`) and `stop`."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

__all__ = ["Served"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a replay at concurrency 64 connects 64 sockets at once


class Served:
    """`handler` served on `host:port` (0: a free port); `address(path)` is its URL."""

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], name: str, host: str, port: int
    ) -> None:
        self._server = _Server((host, port), handler)
        self._name = name
        self._thread: threading.Thread | None = None

    def address(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{path}"

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=self._name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
