"""The judge worker: pairs from the to-judge topic, grades from a chat model, judgments out.

On start it reads the judgments topic to its end and remembers every pair its `source` has
graded already, so a restart (or `--once` run again) asks nothing twice; then the to-judge
topic to its end. Each pair not yet graded is asked, `concurrency` at a time, in the topic's
order (the monitor publishes the most useful first), within `requests_per_hour` and
`tokens_per_hour` over the trailing hour. Each answer is one outcome:

- `graded`: a judgment record to the judgments topic, keyed as the pair (`["q", "d"]`):
  `{"query_id", "doc_id", "grade", "source", "judged_at", "model", "prompt", "temperature",
  "reason"}`, `prompt` the template's hash and `reason` the answer's text before its grade,
  at most `MAX_REASON_CHARS`;
- `refused`, `unparsable` (`monitor.judge.grade`), `error` (the endpoint failed after its
  retries: `http_429`, `timeout`, ...), `unknown_query` (no text for the query in the
  topics file or the record), `unknown_document` (none for the document in `documents` or
  the record): counted and logged, never a grade. Such a pair is asked again on the next
  start.

A to-judge record carries what the monitor knows a judge reads (`query_text`, `title`,
`snippet`, from the events' `documents`): the record's query text and title are used first;
the document's text is the record's `text`, else the `documents` file's, else the record's
`snippet` cut at `max_document_bytes`. One log line per batch of `BATCH` pairs, the records
flushed (acks=all) before the next batch; a progress bar on a terminal. With `once`, it stops
after the pairs there were at start (or when the hourly budget is spent); without, it follows
the topic until `stop`.
Workers of one source share the to-judge topic as a consumer group (`monitor.judge.shared`):
each pair is asked by one of them.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import orjson
from rich.console import Console
from rich.progress import Progress

from monitor.errors import InputError
from monitor.judge.chat import ChatAnswer
from monitor.judge.grade import Graded, read_grade
from monitor.judge.prompt import Prompt
from monitor.judging.pairs import pair_key
from monitor.kafka.consumer import SourceRecord
from monitor.logs import fields

__all__ = [
    "BATCH",
    "Document",
    "HourlyBudget",
    "JudgeReport",
    "JudgeWorker",
    "read_documents",
]

_log = logging.getLogger(__name__)

BATCH: Final = 50  # pairs per log line and flush
MAX_REASON_CHARS: Final = 300
HOUR_S: Final = 3600.0


@dataclass(frozen=True)
class Document:
    """What a judge reads of a document."""

    title: str
    text: str


def read_documents(path: Path, max_bytes: int) -> dict[str, Document]:
    """The documents of a JSON lines file (`doc_id`, `text`, optional `title`), each text cut
    to `max_bytes` UTF-8 bytes; an `InputError` names a bad line."""
    documents: dict[str, Document] = {}
    try:
        lines = path.read_bytes().splitlines()
    except OSError as error:
        raise InputError(str(path), f"cannot read: {error.strerror or error}") from error
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise InputError(str(path), f"invalid JSON: {error}", number) from error
        if not isinstance(value, dict) or not isinstance(value.get("doc_id"), str):
            raise InputError(str(path), "each line needs a string doc_id", number)
        text, title = value.get("text", ""), value.get("title", "")
        if not isinstance(text, str) or not isinstance(title, str):
            raise InputError(str(path), "text and title must be strings", number)
        documents[value["doc_id"]] = Document(_cut(title, 512), _cut(text, max_bytes))
    return documents


def _cut(text: str, max_bytes: int) -> str:
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode(errors="ignore")


class HourlyBudget:
    """Requests and tokens over the trailing hour, at most (0: no limit)."""

    def __init__(
        self, requests: int, tokens: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.requests, self.tokens = requests, tokens
        self._clock = clock
        self._spent: deque[tuple[float, int]] = deque()  # (when, tokens) per request
        self._tokens = 0
        self._lock = threading.Lock()

    def wait_s(self) -> float:
        """How long until another request fits (0: now)."""
        with self._lock:
            now = self._clock()
            while self._spent and self._spent[0][0] <= now - HOUR_S:
                self._tokens -= self._spent.popleft()[1]
            over_requests = self.requests and len(self._spent) >= self.requests
            over_tokens = self.tokens and self._tokens >= self.tokens
            if not (over_requests or over_tokens) or not self._spent:
                return 0.0
            return max(0.0, self._spent[0][0] + HOUR_S - now)

    def spend(self, tokens: int) -> None:
        with self._lock:
            self._spent.append((self._clock(), tokens))
            self._tokens += tokens


class Asker(Protocol):
    """What the worker needs of a chat client (`ChatClient`; tests may pass their own)."""

    def ask(self, messages: list[dict[str, str]]) -> Any: ...


@dataclass
class JudgeReport:
    """What a run did: outcomes by name, failure reasons, tokens and requests."""

    outcomes: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    tokens: int = 0
    requests: int = 0
    budget_spent: bool = False
    pending: int = 0  # pairs read and not yet asked about
    partitions: int = 0  # of the to-judge topic, the group gave this worker
    last_batch_s: float = 0.0  # when the last batch's judgments were written (Unix seconds)

    def line(self) -> str:
        done = ", ".join(f"{n} {k}" for k, n in sorted(self.outcomes.items())) or "nothing"
        why = ", ".join(f"{n} {k}" for k, n in sorted(self.reasons.items()))
        return f"{done}{f' ({why})' if why else ''}; {self.requests} requests, {self.tokens} tokens"


class JudgeWorker:
    """Grades pairs through `chat` with `prompt` (module docstring)."""

    def __init__(
        self,
        chat: Asker,
        prompt: Prompt,
        *,
        source: str,
        model: str,
        temperature: float,
        queries: Mapping[str, str],
        documents: Mapping[str, Document],
        grades: Collection[int],
        concurrency: int,
        budget: HourlyBudget,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        max_document_bytes: int = 4096,
    ) -> None:
        self.chat, self.prompt = chat, prompt
        self.max_document_bytes = max_document_bytes
        self.source, self.model, self.temperature = source, model, temperature
        self.queries, self.documents, self.grades = queries, documents, grades
        self.concurrency = concurrency
        self.budget = budget
        self.now_ms = now_ms
        self.graded: set[tuple[str, str]] = set()  # by this source, read or written

    def learn(self, record: SourceRecord) -> None:
        """Note a judgments-topic record: a pair this source graded is not asked again."""
        try:
            value = orjson.loads(record.value)
        except orjson.JSONDecodeError:
            return
        if isinstance(value, dict) and value.get("source") == self.source:
            query, doc = value.get("query_id"), value.get("doc_id")
            if isinstance(query, str) and isinstance(doc, str):
                self.graded.add((query, doc))

    def pairs(self, records: Iterable[SourceRecord]) -> list[dict[str, Any]]:
        """The to-judge records' pairs not graded yet, in order, each once."""
        wanted: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()
        for record in records:
            try:
                value = orjson.loads(record.value)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(value, dict):
                continue
            query, doc = value.get("query_id"), value.get("doc_id")
            if not isinstance(query, str) or not isinstance(doc, str):
                continue
            key = (query, doc)
            if key in self.graded or key in seen:
                continue
            seen.add(key)
            wanted.append(value)
        return wanted

    def judge(
        self,
        pairs: list[dict[str, Any]],
        send: Callable[[bytes, bytes], None],
        report: JudgeReport,
        *,
        stop: threading.Event,
        wait: bool,
        advance: Callable[[], None] = lambda: None,
    ) -> None:
        """Ask each pair and `send(key, value)` its judgment; `wait`: when the hourly budget is
        spent, wait for it (else stop, `report.budget_spent`)."""
        lock = threading.Lock()

        def one(pair: dict[str, Any]) -> None:
            if stop.is_set() or report.budget_spent:
                return
            outcome, reason, judgment = self._one(pair, stop, wait)
            with lock:
                if outcome == "budget":
                    report.budget_spent = True
                    return
                report.outcomes[outcome] += 1
                if reason:
                    report.reasons[reason] += 1
                if judgment is not None:
                    report.requests += judgment.pop("_requests")
                    report.tokens += judgment.pop("_tokens")
                    if outcome == "graded":
                        key = (judgment["query_id"], judgment["doc_id"])
                        self.graded.add(key)
                        send(pair_key(*key), orjson.dumps(judgment))
                advance()

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(one, pairs))

    def _one(
        self, pair: dict[str, Any], stop: threading.Event, wait: bool
    ) -> tuple[str, str, dict[str, Any] | None]:
        query_id, doc_id = pair["query_id"], pair["doc_id"]
        query = _text(pair.get("query_text")) or self.queries.get(query_id)
        if not query:
            return "unknown_query", "", None
        known = self.documents.get(doc_id)
        text = (
            _text(pair.get("text"))
            or (known.text if known else "")
            or _cut(_text(pair.get("snippet")), self.max_document_bytes)
        )
        if not text:
            return "unknown_document", "", None
        title = _text(pair.get("title")) or (known.title if known else "")
        while (pause := self.budget.wait_s()) > 0:
            if not wait:
                return "budget", "", None
            if stop.wait(min(pause, 5.0)):
                return "budget", "", None
        values = {"query": query, "title": title, "text": text,
                  "query_id": query_id, "doc_id": doc_id}  # fmt: skip
        answer = self.chat.ask(self.prompt.messages(values))
        tokens = answer.tokens if isinstance(answer, ChatAnswer) else 0
        self.budget.spend(tokens)
        spent = {"_requests": answer.attempts, "_tokens": tokens}
        if not isinstance(answer, ChatAnswer):
            return "error", answer.reason, spent
        read = read_grade(answer.text, self.grades)
        if not isinstance(read, Graded):
            _log.info(
                "no grade in the answer",
                extra=fields(query_id=query_id, doc_id=doc_id, outcome=read.outcome,
                             answer=read.sample),
            )  # fmt: skip
            return read.outcome, "", spent
        judgment = {
            "query_id": query_id,
            "doc_id": doc_id,
            "grade": read.grade,
            "source": self.source,
            "judged_at": self.now_ms(),
            "model": self.model,
            "prompt": self.prompt.hash,
            "temperature": self.temperature,
            "reason": read.reason[:MAX_REASON_CHARS],
            **spent,
        }
        return "graded", "", judgment


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def default_source(model: str, prompt: Prompt) -> str:
    """`llm:<model>@<prompt hash>`: another model or prompt is another source."""
    return f"llm:{model}@{prompt.hash}"


def progress_bar(shown: bool, total: int) -> Any:
    """A terminal progress bar over `total` pairs (None when not a terminal)."""
    if not shown or not sys.stderr.isatty() or total == 0:
        return None
    bar = Progress(transient=True, console=Console(stderr=True))
    bar.start()
    bar.add_task("judging", total=total)
    return bar


def log_batch(report: JudgeReport, batch: int, left: int, started: float) -> None:
    """One line per batch."""
    elapsed = max(time.monotonic() - started, 1e-9)
    _log.info(
        "judged a batch",
        extra=fields(
            batch=batch,
            left=left,
            outcomes=dict(report.outcomes),
            requests=report.requests,
            tokens=report.tokens,
            pairs_per_s=round(sum(report.outcomes.values()) / elapsed, 2),
        ),
    )
