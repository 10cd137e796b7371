"""One query to the ranker over HTTP, ending in exactly one outcome.

`RankerClient.ask(query)` builds the request from the settings' template, sends it on this
thread's persistent connection, retries a refused connection, a timeout, a 429 or a 5xx
answer (waiting `backoff`, doubling), and returns an `Answer`. A replay's worker asks in
three steps (`send`, `Call.receive`, `Reply.answer`), so that it publishes one query's record
while the ranker works on the next (`monitor.replay.runner`). The outcomes:

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

A connection per worker thread, kept alive (`monitor.replay.connection`).
"""

from __future__ import annotations

import functools
import json
import re
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
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
from monitor.replay.connection import (
    ProtocolError,
    RankerConnection,
    Response,
    TooLargeError,
)
from monitor.replay.settings import Preset, RankerSettings
from monitor.replay.topics import Query

__all__ = ["OUTCOMES", "Answer", "Call", "RankerClient", "Reply", "fill", "fit_document", "walk"]

OUTCOMES: Final = ("ranked", "error", "timeout")
_RETRIED_STATUS: Final = frozenset({429, 500, 502, 503, 504})
# What a URL's path and query keep as written; the rest is percent-encoded.
_URL_SAFE: Final = "/:@!$&'()*+,;=-._~%"
_ID_TYPES: Final = frozenset({str, int})
_STR: Final = frozenset({str})
_SCORE_TYPES: Final = frozenset({int, float})


@dataclass(frozen=True)
class Answer:
    """What became of one query."""

    outcome: str
    ids: tuple[str, ...] = ()
    scores: tuple[float, ...] | None = None
    labels: tuple[tuple[str, str], ...] = ()
    reason: str = ""
    attempts: int = 1
    # Of the last attempt: from its request's send to its answer's last byte (in a replay,
    # the worker publishes the previous query's record meanwhile: tens of microseconds).
    latency_s: float = 0.0
    sample: str = ""  # an answer whose ids were not found: its start, for the log line
    # What a judge reads of each document (title, snippet, url), by document id; a document
    # the answer says nothing of is left out.
    documents: Mapping[str, dict[str, str]] = field(default_factory=dict)


class _FailedError(Exception):
    def __init__(self, outcome: str, reason: str, *, retry: bool, sample: str = "") -> None:
        super().__init__(reason)
        self.outcome, self.reason, self.retry, self.sample = outcome, reason, retry, sample

    def answer(self, attempts: int, latency_s: float) -> Answer:
        """The query's outcome: this failure, after `attempts`."""
        return Answer(
            self.outcome,
            reason=self.reason,
            attempts=attempts,
            latency_s=latency_s,
            sample=self.sample,
        )


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


def walk(answer: Any, path: str, *, gaps: bool = False) -> list[Any] | None:
    """The values at `path` (`hits.hits[]._id`) in the parsed answer; None when a key on the
    way is missing or the `[]` step is not a list. `gaps`: an item without the key after the
    `[]` (or with null there) gives None in its place rather than the whole path None (a
    document with no title among titled ones)."""
    before, after = _keys(path)
    node = _walk_keys(answer, before)
    if not isinstance(node, list):
        return None
    if not after:
        return list(node)
    if len(after) == 1:  # `hits[].id`: one key a document, looked up in C
        try:
            found = list(map(dict.get, node, repeat(after[0])))
        except TypeError:  # an item that is not an object
            found = [item.get(after[0]) if type(item) is dict else None for item in node]
            return found if gaps else None
        return found if gaps or None not in found else None
    values = []
    for item in node:
        value = _walk_keys(item, after)
        if value is None and not gaps:
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
        self._path = urllib.parse.quote(url.path or "/", safe=_URL_SAFE)
        self._query = urllib.parse.quote(url.query, safe=_URL_SAFE + "?")
        self._body = None if self.preset.body is None else json.loads(self.preset.body)
        headers = {
            "Host": url.netloc.rpartition("@")[2],
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "User-Agent": f"rankmon/{__version__}",
        }
        if self.preset.method == "POST":
            headers["Content-Type"] = "application/json"
        if settings.token is not None:
            headers["Authorization"] = f"Bearer {settings.token.reveal()}"
        headers.update(settings.headers)
        headers.update((name, secret.reveal()) for name, secret in settings.secret_headers)
        # Every request's headers but its length, as bytes once (a value past Latin-1, which
        # `http.client` could not send, goes as UTF-8).
        self._head = b"".join(
            name.encode("ascii") + b": " + _header_bytes(value) + b"\r\n"
            for name, value in headers.items()
        )
        self._tls = ssl.create_default_context() if self._https else None
        self._local = threading.local()
        self._connections: list[RankerConnection] = []
        self._lock = threading.Lock()

    def ask(self, query: Query, pace: Callable[[], bool] | None = None) -> Answer:
        """Send `query` (retrying as the settings say); never raises for the ranker's faults.

        `pace()` is called before every attempt, retries included (the replay's rate limit:
        a retry is a request to the ranker like any other); when it returns False the query
        ends `error`/`cancelled` without another request."""
        return self.send(query, pace).receive().answer()

    def send(self, query: Query, pace: Callable[[], bool] | None = None) -> Call:
        """`query`'s first attempt sent (after `pace()`, as `ask`); `Call.receive` waits for
        its answer."""
        call = Call(self, self._request(query), pace)
        call.attempt()
        return call

    def interrupt(self) -> None:
        """Shut every thread's connection: a request in flight ends at once (as failed)."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.shutdown()

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()

    def _request(self, query: Query) -> bytes:
        """The whole request of `query`: its request line, headers and body."""
        params = [(k, str(fill(v, query, self.depth))) for k, v in self.preset.params]
        query_string = "&".join(filter(None, [self._query, urllib.parse.urlencode(params)]))
        target = self._path + (f"?{query_string}" if query_string else "")
        line = f"{self.preset.method} {target} HTTP/1.1\r\n".encode("ascii")
        if self.preset.method == "GET":
            return line + self._head + b"\r\n"
        body = orjson.dumps(fill(self._body or {}, query, self.depth))
        return b"%s%sContent-Length: %d\r\n\r\n%s" % (line, self._head, len(body), body)

    def _connection(self) -> RankerConnection:
        connection: RankerConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = RankerConnection(self._host, self._port, context=self._tls)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    def _answer(self, response: Response, attempts: int, latency: float) -> Answer:
        """A 2xx answer read for its ids; `_FailedError` says what is wrong with it."""
        data, headers = response.body, response.headers
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise _FailedError("error", "bad_json", retry=False) from None
        found = walk(parsed, self.preset.ids)
        if found is None:
            raise _FailedError("error", "no_ids", retry=False, sample=_sample(data))
        # Parsed JSON holds exact types: a bool is no id, its type is not int.
        kinds = set(map(type, found))
        if not kinds <= _ID_TYPES:
            raise _FailedError("error", "bad_ids", retry=False, sample=_sample(data))
        kept = found[: self.depth]
        ids = tuple(kept) if kinds == _STR else tuple(map(str, kept))
        if not ids:
            raise _FailedError("error", "empty_answer", retry=False)
        if len(set(ids)) != len(ids):
            raise _FailedError("error", "duplicate_doc", retry=False)
        if max(map(len, ids)) * 4 > self.max_id_bytes and any(
            longer_than(doc, self.max_id_bytes) for doc in ids
        ):
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
            documents=self._documents(parsed, len(found), ids),
        )

    def _documents(
        self, parsed: Any, count: int, ids: tuple[str, ...]
    ) -> Mapping[str, dict[str, str]]:
        """Each document's title, snippet and url where the answer has them (strings, at the
        paths of `fields`, one per document), within `max_document_bytes` together."""
        kept = len(ids)
        names: list[str] = []
        columns: list[list[Any]] = []
        for name, path in self._fields:  # in DOCUMENT_FIELDS order
            found = walk(parsed, path, gaps=True)
            if found is not None and len(found) == count and any(found[:kept]):
                names.append(name)
                columns.append(found[:kept])
        if not columns:
            return {}
        # Per document, a string of at most a quarter of the limit in characters fits however
        # it encodes: only a longer one is measured and cut (`fit_document`).
        short = self.max_document_bytes // 4
        # Every field a non-empty string (the usual answer), none long enough that some
        # document's fields together could be: each document's whole, built in C.
        if all(set(map(type, column)) == _STR and all(column) for column in columns) and (
            sum([max(map(len, column)) for column in columns]) <= short
        ):
            rows = zip(*columns, strict=True)
            return dict(zip(ids, map(dict, map(zip, repeat(names), rows)), strict=True))
        documents = {}
        for doc, row in zip(ids, zip(*columns, strict=True), strict=True):
            texts = [
                (name, value)
                for name, value in zip(names, row, strict=True)
                if type(value) is str and value
            ]
            if sum(len(text) for _, text in texts) > short:
                texts = list(fit_document(texts, self.max_document_bytes))
            if texts:
                documents[doc] = dict(texts)
        return documents

    def _scores(self, parsed: Any, count: int) -> tuple[float, ...] | None:
        if self.preset.scores is None:
            return None
        found = walk(parsed, self.preset.scores)
        if found is None or len(found) != count:
            return None
        if not set(map(type, found)) <= _SCORE_TYPES:  # a bool is no score
            return None
        return tuple(map(float, found[: self.depth]))

    def _labels(self, parsed: Any, headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        labels = []
        for label, source in self.segment_from:
            kind, _, name = source.partition(":")
            value = headers.get(name.lower()) if kind == "header" else _step(parsed, name)
            if value is not None and not isinstance(value, dict | list):
                labels.append((label, str(value)))
        return tuple(labels)


class Call:
    """One query on its way to the ranker: its request, and what became of its attempts."""

    def __init__(
        self, client: RankerClient, request: bytes, pace: Callable[[], bool] | None
    ) -> None:
        self._client = client
        self._request = request
        self._pace = pace
        self.attempts = 0
        self._started = 0.0
        self._failed: _FailedError | None = None
        self._cancelled = False

    def attempt(self) -> None:
        """Send the request again (after `pace()`); a failure to send is kept for `receive`."""
        if self._pace is not None and not self._pace():
            self._cancelled = True
            return
        self.attempts += 1
        self._failed = None
        self._started = time.monotonic()
        deadline = self._started + self._client.settings.timeout.seconds
        try:
            self._client._connection().send(self._request, deadline)
        except TimeoutError:
            self._failed = _FailedError("timeout", "timeout", retry=True)
        except OSError:
            self._failed = _FailedError("error", "connection", retry=True)

    def receive(self) -> Reply:
        """The answer, waited for; a refused connection, a timeout, a 429 or a 5xx is tried
        again (after `backoff`, doubling) until `retries` are spent. Never raises for the
        ranker's faults."""
        settings = self._client.settings
        wait = settings.backoff.seconds
        while True:
            if self._cancelled:
                cancelled = Answer("error", reason="cancelled", attempts=self.attempts)
                return Reply(self._client, failed=cancelled)
            failed = self._failed or self._read()
            if isinstance(failed, Reply):
                return failed
            if not failed.retry or self.attempts > settings.retries:
                latency = time.monotonic() - self._started
                return Reply(self._client, failed=failed.answer(self.attempts, latency))
            self._client._sleep(wait)
            wait *= 2
            self.attempt()

    def _read(self) -> Reply | _FailedError:
        try:
            response = self._client._connection().receive(self._client.settings.max_response_bytes)
        except TimeoutError:
            return _FailedError("timeout", "timeout", retry=True)
        except TooLargeError:
            return _FailedError("error", "too_large", retry=False)
        except (OSError, ProtocolError):
            return _FailedError("error", "connection", retry=True)
        latency = time.monotonic() - self._started
        if not 200 <= response.status < 300:
            status = response.status
            return _FailedError("error", f"http_{status}", retry=status in _RETRIED_STATUS)
        return Reply(self._client, response, self.attempts, latency)


class Reply:
    """The ranker's answer to one query, read but not yet looked into (`answer()` does), or
    the outcome of a query that got none."""

    __slots__ = ("_client", "attempts", "failed", "latency_s", "response")

    def __init__(
        self,
        client: RankerClient,
        response: Response | None = None,
        attempts: int = 0,
        latency_s: float = 0.0,
        *,
        failed: Answer | None = None,
    ) -> None:
        self._client = client
        self.response = response
        self.attempts = attempts
        self.latency_s = latency_s
        self.failed = failed

    def answer(self) -> Answer:
        """The query's outcome: its ranking found in the answer, or why there is none."""
        if self.failed is not None:
            return self.failed
        assert self.response is not None
        try:
            return self._client._answer(self.response, self.attempts, self.latency_s)
        except _FailedError as failed:
            return failed.answer(self.attempts, self.latency_s)


def _header_bytes(value: str) -> bytes:
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


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
