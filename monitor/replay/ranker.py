"""One query to the ranker over HTTP, ending in exactly one outcome.

`RankerClient.ask(query)` builds the request from the settings' template, sends it on this
thread's persistent connection, retries a refused connection, a timeout, a 429 or a 5xx
answer (waiting `backoff`, doubling), and returns an `Answer`:

- `ranked`: the document ids (and scores) found at the answer's `ids` path, cut at the depth,
  and what a judge reads of each (title, snippet, url at the `fields` paths, where present);
- `timeout`: the last attempt took longer than `timeout`;
- `error` with a reason: `connection` (refused, reset), `http_<status>`, `bad_json`,
  `no_ids` (the path is not in the answer), `bad_ids` (not strings or numbers),
  `duplicate_doc` (a document twice in one ranking), `empty_answer` (no documents),
  `too_large` (an answer past `max_response_bytes`), `id_too_long` (a document id past
  `events.max_id_bytes`), `label_too_long` (a label read from the answer past
  `segments.max_value_bytes`): what the monitor would refuse is a failed query here, counted
  as the replay's failure, never a ranked query the monitor later drops.

The answer is input like an event: `timeout` bounds the whole attempt (connecting, sending,
the status line, the headers and the body together, however slowly the bytes drip), and at
most `max_response_bytes` of a body are read.

Only the standard library's `http.client`: a connection per worker thread, kept alive.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from monitor import __version__
from monitor.ingest.events import DocumentFields
from monitor.ingest.schema import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_ID_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    DOCUMENT_FIELDS,
)
from monitor.limits import longer_than
from monitor.replay.deadline import DeadlineHTTPConnection, DeadlineHTTPSConnection
from monitor.replay.settings import Preset, RankerSettings
from monitor.replay.topics import Query

__all__ = ["OUTCOMES", "Answer", "RankerClient", "fill", "fit_document", "walk"]

OUTCOMES: Final = ("ranked", "error", "timeout")
_RETRIED_STATUS: Final = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Answer:
    """What became of one query."""

    outcome: str
    ids: tuple[str, ...] = ()
    scores: tuple[float, ...] | None = None
    labels: tuple[tuple[str, str], ...] = ()
    reason: str = ""
    attempts: int = 1
    latency_s: float = 0.0  # of the last attempt
    sample: str = ""  # an answer whose ids were not found: its start, for the log line
    # What a judge reads of each document (title, snippet, url), aligned with `ids`.
    documents: tuple[DocumentFields, ...] = ()


class _FailedError(Exception):
    def __init__(self, outcome: str, reason: str, *, retry: bool, sample: str = "") -> None:
        super().__init__(reason)
        self.outcome, self.reason, self.retry, self.sample = outcome, reason, retry, sample


_PLACEHOLDER: Final = re.compile(r"\{(query|depth)\}")


def fill(template: Any, query: Query, depth: int) -> Any:
    """The template with `"{query}"` (also inside a string), `"{depth}"` and `"{field}"`
    (a JSON-lines topic's own field) put in. Placeholders are read in the template only, in
    one pass: a query text holding `{depth}` is sent as written."""
    if isinstance(template, dict):
        return {key: fill(value, query, depth) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, query, depth) for value in template]
    if not isinstance(template, str):
        return template
    if template == "{depth}":
        return depth
    if template.startswith("{") and template.endswith("}") and template[1:-1] in query.fields:
        return query.fields[template[1:-1]]
    values = {"query": query.text, "depth": str(depth)}
    return _PLACEHOLDER.sub(lambda found: values[found.group(1)], template)


def walk(answer: Any, path: str) -> list[Any] | None:
    """The values at `path` (`hits.hits[]._id`) in the parsed answer; None when a key on the
    way is missing or the `[]` step is not a list."""
    before, after = _keys(path)
    node = _walk_keys(answer, before)
    if not isinstance(node, list):
        return None
    if not after:
        return list(node)
    if len(after) == 1:  # `hits[].id`: one key a document
        key = after[0]
        found = [item.get(key) if type(item) is dict else None for item in node]
        return None if None in found else found
    values = []
    for item in node:
        value = _walk_keys(item, after)
        if value is None:
            return None
        values.append(value)
    return values


@functools.lru_cache(maxsize=256)
def _keys(path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A path's keys before and after its `[]`, split once (a replay walks each path per
    answer and, after the `[]`, per document)."""
    before, _, after = path.partition("[]")
    return tuple(filter(None, before.split("."))), tuple(filter(None, after.split(".")))


def _walk_keys(node: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _step(node: Any, dotted: str) -> Any:
    return _walk_keys(node, tuple(filter(None, dotted.split("."))))


class RankerClient:
    """Asks the ranker `settings` describes for `depth` documents per query; thread-safe
    (each thread keeps its own connection)."""

    def __init__(
        self,
        settings: RankerSettings,
        depth: int,
        segment_from: tuple[tuple[str, str], ...] = (),
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    ) -> None:
        """`max_id_bytes` and `max_value_bytes`: the monitor's `events.max_id_bytes` and
        `segments.max_value_bytes`, which an answer's ids and labels are held to;
        `max_document_bytes` (`events.max_document_bytes`) what a document's fields are cut to."""
        self.settings = settings
        self.max_id_bytes = max_id_bytes
        self.max_value_bytes = max_value_bytes
        self.max_document_bytes = max_document_bytes
        self.preset: Preset = settings.preset_of
        self._fields = sorted(self.preset.fields, key=lambda f: DOCUMENT_FIELDS.index(f[0]))
        self.depth = depth
        self.segment_from = segment_from
        self._sleep = sleep
        url = urllib.parse.urlsplit(settings.url.reveal())
        self._https = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if self._https else 80)
        self._path = url.path or "/"
        self._query = url.query
        self._body = None if self.preset.body is None else json.loads(self.preset.body)
        headers = {"Accept": "application/json", "User-Agent": f"rankmon/{__version__}"}
        if self.preset.method == "POST":
            headers["Content-Type"] = "application/json"
        if settings.token is not None:
            headers["Authorization"] = f"Bearer {settings.token.reveal()}"
        headers.update(settings.headers)
        headers.update((name, secret.reveal()) for name, secret in settings.secret_headers)
        self._headers = headers
        self._local = threading.local()
        self._connections: list[DeadlineHTTPConnection | DeadlineHTTPSConnection] = []
        self._lock = threading.Lock()

    def ask(self, query: Query, pace: Callable[[], bool] | None = None) -> Answer:
        """Send `query` (retrying as the settings say); never raises for the ranker's faults.

        `pace()` is called before every attempt, retries included (the replay's rate limit:
        a retry is a request to the ranker like any other); when it returns False the query
        ends `error`/`cancelled` without another request."""
        method, target, body = self._request(query)
        attempts = 0
        wait = self.settings.backoff.seconds
        while True:
            if pace is not None and not pace():
                return Answer("error", reason="cancelled", attempts=attempts)
            attempts += 1
            started = time.monotonic()
            try:
                status, headers, data = self._send(method, target, body)
                latency = time.monotonic() - started
                return self._answer(status, headers, data, attempts, latency)
            except _FailedError as failed:
                latency = time.monotonic() - started
                if not failed.retry or attempts > self.settings.retries:
                    return Answer(
                        failed.outcome,
                        reason=failed.reason,
                        attempts=attempts,
                        latency_s=latency,
                        sample=failed.sample,
                    )
            self._sleep(wait)
            wait *= 2

    def interrupt(self) -> None:
        """Shut every thread's connection: a request in flight ends at once (as failed)."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):  # closed already
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()

    def _request(self, query: Query) -> tuple[str, str, bytes | None]:
        params = [(k, str(fill(v, query, self.depth))) for k, v in self.preset.params]
        query_string = "&".join(filter(None, [self._query, urllib.parse.urlencode(params)]))
        target = self._path + (f"?{query_string}" if query_string else "")
        if self.preset.method == "GET":
            return "GET", target, None
        body = orjson.dumps(fill(self._body or {}, query, self.depth))
        return "POST", target, body

    def _connection(self) -> DeadlineHTTPConnection | DeadlineHTTPSConnection:
        connection: DeadlineHTTPConnection | DeadlineHTTPSConnection | None = getattr(
            self._local, "connection", None
        )
        if connection is None:
            timeout = self.settings.timeout.seconds
            if self._https:
                context = ssl.create_default_context()
                connection = DeadlineHTTPSConnection(
                    self._host, self._port, timeout=timeout, context=context
                )
            else:
                connection = DeadlineHTTPConnection(self._host, self._port, timeout=timeout)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    def _drop_connection(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            connection.close()

    def _send(
        self, method: str, target: str, body: bytes | None
    ) -> tuple[int, Mapping[str, str], bytes]:
        connection = self._connection()
        # One deadline for the whole attempt: every socket read and write gets what is left.
        connection.deadline = time.monotonic() + self.settings.timeout.seconds
        limit = self.settings.max_response_bytes
        try:
            connection.request(method, target, body=body, headers=self._headers)
            response = connection.getresponse()
            data = response.read(limit + 1)
        except TimeoutError:
            self._drop_connection()
            raise _FailedError("timeout", "timeout", retry=True) from None
        except (OSError, http.client.HTTPException):
            self._drop_connection()
            raise _FailedError("error", "connection", retry=True) from None
        if len(data) > limit:
            self._drop_connection()  # the rest of the body is never read
            raise _FailedError("error", "too_large", retry=False)
        if response.will_close or not response.isclosed():
            self._drop_connection()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, data

    def _answer(
        self, status: int, headers: Mapping[str, str], data: bytes, attempts: int, latency: float
    ) -> Answer:
        if not 200 <= status < 300:
            raise _FailedError("error", f"http_{status}", retry=status in _RETRIED_STATUS)
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise _FailedError("error", "bad_json", retry=False) from None
        found = walk(parsed, self.preset.ids)
        if found is None:
            raise _FailedError("error", "no_ids", retry=False, sample=_sample(data))
        if not all(isinstance(doc, str | int) and not isinstance(doc, bool) for doc in found):
            raise _FailedError("error", "bad_ids", retry=False, sample=_sample(data))
        ids = tuple(str(doc) for doc in found)[: self.depth]
        if not ids:
            raise _FailedError("error", "empty_answer", retry=False)
        if len(set(ids)) != len(ids):
            raise _FailedError("error", "duplicate_doc", retry=False)
        if any(longer_than(doc, self.max_id_bytes) for doc in ids):
            raise _FailedError("error", "id_too_long", retry=False)
        labels = self._labels(parsed, headers)
        if any(longer_than(value, self.max_value_bytes) for _, value in labels):
            raise _FailedError("error", "label_too_long", retry=False)
        return Answer(
            "ranked",
            ids,
            self._scores(parsed, len(found)),
            labels,
            attempts=attempts,
            latency_s=latency,
            documents=self._documents(parsed, len(found), len(ids)),
        )

    def _documents(self, parsed: Any, count: int, kept: int) -> tuple[DocumentFields, ...]:
        """Each document's title, snippet and url where the answer has them (strings, at the
        paths of `fields`, one per document), within `max_document_bytes` together."""
        names: list[str] = []
        columns: list[list[Any]] = []
        for name, path in self._fields:  # in DOCUMENT_FIELDS order
            found = walk(parsed, path)
            if found is not None and len(found) == count:
                names.append(name)
                columns.append(found)
        if not columns:
            return ()
        # Per document, a string of at most a quarter of the limit in characters fits however
        # it encodes: only a longer one is measured and cut (`fit_document`).
        short = self.max_document_bytes // 4
        documents = []
        for row in range(kept):
            texts = [
                (name, column[row])
                for name, column in zip(names, columns, strict=True)
                if type(column[row]) is str and column[row]
            ]
            if sum(len(text) for _, text in texts) <= short:
                documents.append(tuple(texts))
            else:
                documents.append(fit_document(texts, self.max_document_bytes))
        return tuple(documents)

    def _scores(self, parsed: Any, count: int) -> tuple[float, ...] | None:
        if self.preset.scores is None:
            return None
        found = walk(parsed, self.preset.scores)
        if found is None or len(found) != count:
            return None
        if not all(isinstance(s, int | float) and not isinstance(s, bool) for s in found):
            return None
        return tuple(float(score) for score in found)[: self.depth]

    def _labels(self, parsed: Any, headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        labels = []
        for label, source in self.segment_from:
            kind, _, name = source.partition(":")
            value = headers.get(name.lower()) if kind == "header" else _step(parsed, name)
            if value is not None and not isinstance(value, dict | list):
                labels.append((label, str(value)))
        return tuple(labels)


def fit_document(fields: list[tuple[str, str]], max_bytes: int) -> DocumentFields:
    """A document's fields within `max_bytes` of UTF-8 together: the title and url whole if
    they fit (a cut link is a wrong one), the snippet cut to what is left, in `DOCUMENT_FIELDS`
    order."""
    if sum(len(text) for _, text in fields) * 4 <= max_bytes:  # fits however it encodes
        order = {name: text for name, text in fields}
        return tuple((name, order[name]) for name in DOCUMENT_FIELDS if order.get(name))
    room = max_bytes
    kept: dict[str, str] = {}
    for name, text in sorted(fields, key=lambda f: f[0] == "snippet"):  # the snippet last
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= room:
            kept[name], room = text, room - size
        elif name == "snippet" and room > 0:
            cut = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
            kept[name], room = cut, room - len(cut.encode("utf-8", "surrogatepass"))
    return tuple((name, kept[name]) for name in DOCUMENT_FIELDS if kept.get(name))


def _sample(data: bytes) -> str:
    """The start of an answer, on one line, for the log line that names the fix."""
    text = data[:300].decode("utf-8", "replace")
    return " ".join(text.split()) + (" ..." if len(data) > 300 else "")
