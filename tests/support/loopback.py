"""A threaded HTTP server on a free loopback port, as a context manager: the rankers the
tests build (`hostile_ranker`, `bm25_ranker`) subclass it and give their handler."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class LoopbackServer:
    """Serves `handler` on 127.0.0.1 from `__enter__` until `__exit__`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def address(self, path: str) -> str:
        """The URL of `path` on this server."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)
        self._server.server_close()
