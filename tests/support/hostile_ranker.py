"""A real HTTP ranker on loopback that answers some queries as a hostile or broken one would.

It speaks the `json` preset (POST `{"query": text, "size": depth}`, answer
`{"hits": [{"id": ..., "score": ...}]}`) and decides by the query text:

- `huge ...`: a 200 announcing 1 GiB and streaming it until the client hangs up;
- `drip ...`: a 200 of 73 bytes, one byte every `drip_s` seconds (29 s in all by default);
- `long id ...`: an honest ranking whose second id is `long_id_bytes` long;
- `busy ...`: 503 the first time the text is asked, then its honest ranking;
- anything else: the honest ranking of `rankings[text]` (or none: `{"hits": []}`);
- while `down` is set: 503 to everything.

Every request body is kept (`bodies`) with its arrival (`arrivals`, monotonic seconds), so a
test sees what the replayer sent, and when.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback import LoopbackServer

GIB = 1 << 30


class HostileRanker(LoopbackServer):
    """The server (module docstring); a context manager that starts and stops it."""

    def __init__(
        self,
        rankings: Mapping[str, Sequence[str]],
        *,
        drip_s: float = 0.4,
        long_id_bytes: int = 600,
    ) -> None:
        self.rankings = dict(rankings)
        self.drip_s = drip_s
        self.long_id_bytes = long_id_bytes
        self.bodies: list[dict[str, Any]] = []
        self.arrivals: list[float] = []
        self.down = False
        self._busy_seen: set[str] = set()
        self.streamed = 0  # bytes of the huge answers written before the client hung up
        self._lock = threading.Lock()
        super().__init__(self._handler())

    @property
    def url(self) -> str:
        return self.address("/search")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        ranker = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                text = str(body.get("query", ""))
                with ranker._lock:
                    ranker.bodies.append(body)
                    ranker.arrivals.append(time.monotonic())
                    first_busy = text.startswith("busy") and text not in ranker._busy_seen
                    ranker._busy_seen.add(text)
                if ranker.down or first_busy:
                    self._send(b'{"error": "overloaded"}', status=503)
                elif text.startswith("huge"):
                    self._huge()
                elif text.startswith("drip"):
                    self._drip()
                else:
                    ids = list(ranker.rankings.get(text, ()))
                    if text.startswith("long id") and ids:
                        ids.insert(1, "x" * ranker.long_id_bytes)
                    hits = [{"id": doc, "score": 100.0 - i} for i, doc in enumerate(ids)]
                    self._send(json.dumps({"hits": hits}).encode())

            def _send(self, data: bytes, status: int = 200) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _huge(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(GIB))
                self.end_headers()
                block = b" " * (1 << 20)
                try:
                    for _ in range(GIB // len(block)):
                        self.wfile.write(block)
                        with ranker._lock:
                            ranker.streamed += len(block)
                except OSError:  # the client hung up: what it should do
                    pass
                self.close_connection = True

            def _drip(self) -> None:
                data = json.dumps({"hits": [{"id": "d1", "score": 1.0}]}).encode()
                data += b" " * (73 - len(data))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    for byte in data:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(ranker.drip_s)
                except OSError:
                    pass
                self.close_connection = True

        return Handler
