"""The demo's synthetic ranker served over real HTTP, for `rankmon replay` to replay through.

`POST /search` with `{"query": TEXT, "size": N}` answers
`{"hits": [{"id", "score", "title", "snippet"}...], "model": VERSION}` (rankmon replay's `json`
preset, whose `fields` carry the title and snippet to the judges) and the header
`X-Model-Version`; the text
of query `q0001` is `topic_text("q0001")`. The ranking is `SyntheticRanker.rank` at the
model's quality at the moment of the request (so a degrading version degrades for replays
too). Faults can be planted per query, as a production ranker has them: `slow` queries
answer after `slow_s`, `failing` ones answer 500.

```python
with RankerServer(corpus, ModelVersion("v1", 1.0)) as server:
    server.url  # http://127.0.0.1:PORT/search
```
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from monitor.demo.ranker import ModelVersion, SyntheticRanker
from monitor.demo.serving import Served
from monitor.demo.synthetic import SyntheticCorpus

__all__ = ["RankerServer", "topic_text", "write_topics"]


def topic_text(query_id: str) -> str:
    """The text the synthetic ranker knows query `query_id` by."""
    return f"synthetic topic {query_id}"


def write_topics(corpus: SyntheticCorpus, path: Path) -> Path:
    """The corpus' queries as a TSV topics file (`qid<TAB>text`)."""
    path.write_text("".join(f"{q}\t{topic_text(q)}\n" for q in corpus.query_ids), "utf-8")
    return path


class RankerServer(Served):
    """A threaded HTTP server of one model version's rankings, on a free loopback port."""

    def __init__(
        self,
        corpus: SyntheticCorpus,
        version: ModelVersion,
        *,
        seed: int = 0,
        slow: Collection[str] = (),
        slow_s: float = 2.0,
        failing: Collection[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.version = version
        self.slow, self.slow_s, self.failing = frozenset(slow), slow_s, frozenset(failing)
        self._ranker = SyntheticRanker(corpus, seed=seed, depth=100)
        self._lock = threading.Lock()  # the ranker's random numbers are one sequence
        self._by_text = {topic_text(q): q for q in corpus.query_ids}
        self.requests = 0
        self.in_flight = 0
        self.most_in_flight = 0  # requests answered at once, at most (a replay's concurrency)
        self.last_headers: dict[str, str] = {}  # of the last request, for tests
        super().__init__(self._handler(), "ranker-http", host, port)

    @property
    def url(self) -> str:
        return self.address("/search")

    def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, body) for one request body."""
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        query_id = self._by_text.get(str(request.get("query")))
        if query_id is None:
            return 200, {"hits": [], "model": self.version.name}
        if query_id in self.failing:
            return 500, {"error": "planted failure"}
        if query_id in self.slow:
            time.sleep(self.slow_s)
        size = request.get("size", 10)
        size = size if isinstance(size, int) and size > 0 else 10
        quality = self.version.quality_at(time.time_ns() // 1_000_000)
        with self._lock:
            ranking = self._ranker.rank(query_id, quality)[:size]
        hits = [
            {"id": doc, "score": len(ranking) - i, "title": f"Document {doc}",
             "snippet": f"A synthetic document, {doc}, of query {query_id}."}
            for i, doc in enumerate(ranking)
        ]  # fmt: skip
        return 200, {"hits": hits, "model": self.version.name}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as production search APIs do
            # Headers and body leave in one write, and without Nagle's wait: two small writes
            # would meet the client's delayed ACK, 40 ms a request.
            wbufsize = 1 << 16
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                server.last_headers = dict(self.headers.items())
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    request = None
                if not isinstance(request, dict):
                    self._send(400, {"error": "expected a JSON object"})
                    return
                self._send(*server.answer(request))

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Model-Version", server.version.name)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: a replay is thousands of requests

        return Handler
