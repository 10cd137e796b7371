"""One chat-completions request, as OpenAI, Azure OpenAI, vLLM, Ollama and llama.cpp's server
all answer it: POST `{"model", "messages", "temperature", "max_tokens"}`, read
`choices[0].message.content` and `usage.total_tokens`.

An answer is input like any other: its body is read up to `max_response_bytes` and each
attempt, connecting, sending, the headers and the body, within one `timeout`
(`monitor.replay.deadline`, as the replayer's: an answer dripped a byte at a time still
times out). A 429 or 503 waits what its `Retry-After` says (seconds or an HTTP
date, at most `MAX_RETRY_AFTER_S`), other server errors, timeouts and lost connections wait
`backoff`, doubling; after `retries` retries the pair's outcome is `error` with the reason
(`http_429`, `timeout`, ...). A 4xx other than 429 is not retried.
"""

from __future__ import annotations

import email.utils
import http.client
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from monitor.replay.deadline import DeadlineHTTPConnection, DeadlineHTTPSConnection

__all__ = ["ChatAnswer", "ChatClient", "ChatFailure"]

MAX_RETRY_AFTER_S: Final = 120.0
_RETRY_STATUS: Final = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class ChatAnswer:
    """The model's text and the tokens the request cost (0 when the server did not say)."""

    text: str
    tokens: int
    attempts: int


@dataclass(frozen=True)
class ChatFailure:
    """No answer after the retries: why (`http_429`, `timeout`, `invalid_answer`, ...)."""

    reason: str
    attempts: int
    detail: str = ""


class ChatClient:
    """Asks one endpoint; each thread keeps its own connection (`close` closes them all)."""

    def __init__(
        self,
        url: str,
        *,
        model: str,
        key: str | None,
        temperature: float,
        max_tokens: int,
        timeout_s: float,
        retries: int,
        backoff_s: float,
        max_response_bytes: int = 1 << 20,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        self._parts = parts
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_response_bytes = max_response_bytes
        self._sleep = sleep
        self._local = threading.local()
        self._open: set[DeadlineHTTPConnection | DeadlineHTTPSConnection] = set()  # for `close`
        self._lock = threading.Lock()

    def ask(self, messages: list[dict[str, str]]) -> ChatAnswer | ChatFailure:
        """The model's answer to `messages`, retried as the module docstring says."""
        body = orjson.dumps(
            {
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        )
        wait = self.backoff_s
        failure = ChatFailure("error", 0)
        for attempt in range(1, self.retries + 2):
            outcome, pause = self._attempt(body, attempt)
            if isinstance(outcome, ChatAnswer):
                return outcome
            failure = outcome
            if pause is None or attempt > self.retries:
                return failure
            self._sleep(min(MAX_RETRY_AFTER_S, pause if pause > 0 else wait))
            wait *= 2
        return failure

    def _attempt(self, body: bytes, attempt: int) -> tuple[ChatAnswer | ChatFailure, float | None]:
        """One request: the answer, or the failure and the wait before a retry (None: no
        retry; 0: the backoff's)."""
        try:
            connection = self._connection()
            connection.deadline = time.monotonic() + self.timeout_s
            connection.request("POST", self._path, body=body, headers=self._headers)
            response = connection.getresponse()
            data = response.read(self.max_response_bytes + 1)
        except TimeoutError:
            self._drop()
            return ChatFailure("timeout", attempt), 0.0
        except (OSError, http.client.HTTPException) as error:
            self._drop()
            return ChatFailure("connection", attempt, str(error)), 0.0
        if response.getheader("Connection", "").lower() == "close":
            self._drop()
        status = response.status
        if status in _RETRY_STATUS:
            return ChatFailure(f"http_{status}", attempt), _retry_after(response)
        if status != 200:
            return ChatFailure(f"http_{status}", attempt, data[:200].decode(errors="replace")), None
        if len(data) > self.max_response_bytes:
            self._drop()
            return ChatFailure("too_large", attempt), None
        return _read_answer(data, attempt), None

    def _connection(self) -> DeadlineHTTPConnection | DeadlineHTTPSConnection:
        connection: DeadlineHTTPConnection | DeadlineHTTPSConnection | None = getattr(
            self._local, "connection", None
        )
        if connection is None:
            host, port = self._parts.hostname or "", self._parts.port
            if self._parts.scheme == "https":
                connection = DeadlineHTTPSConnection(host, port, timeout=self.timeout_s)
            else:
                connection = DeadlineHTTPConnection(host, port, timeout=self.timeout_s)
            self._local.connection = connection
            with self._lock:
                self._open.add(connection)
        return connection

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
            with self._lock:
                self._open.discard(connection)

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            connections, self._open = self._open, set()
        for connection in connections:
            connection.close()


def _retry_after(response: http.client.HTTPResponse) -> float:
    """The wait a `Retry-After` header asks for (0: none given, the backoff's)."""
    value = (response.getheader("Retry-After") or "").strip()
    if not value:
        return 0.0
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, when.timestamp() - time.time())


def _read_answer(data: bytes, attempt: int) -> ChatAnswer | ChatFailure:
    try:
        value: Any = orjson.loads(data)
        text = value["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return ChatFailure("invalid_answer", attempt, data[:200].decode(errors="replace"))
    if not isinstance(text, str):
        return ChatFailure("invalid_answer", attempt, "content is not text")
    usage = value.get("usage") if isinstance(value, dict) else None
    tokens = usage.get("total_tokens", 0) if isinstance(usage, dict) else 0
    return ChatAnswer(text, tokens if type(tokens) is int and tokens >= 0 else 0, attempt)
