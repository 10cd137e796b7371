"""A real search ranker for the replay tests: BM25 over SQLite FTS5, served over HTTP.

The corpus is real English text: the docstrings of Python standard-library modules, one
document per paragraph (`doc id` = `module:paragraph`). Each query is the first sentence of
a module's docstring with its stopwords left in; the paragraphs of that module are graded
(the first 2, the rest 1). So the rankings are those of a real lexical ranker over real text,
with its ties, misses and scores, not a script's.

It speaks the `json` preset (POST `{"query": text, "size": depth}`, answer
`{"hits": [{"id": ..., "score": ...}]}`) on two paths:

- `/v1/search`: BM25 over the whole query;
- `/v2/search`: a worse release, BM25 over the query's first two words only, answering
  after `v2_delay_s` (a slower ranker on the same schedule).

Every request's path is counted (`asked`).
"""

from __future__ import annotations

import importlib
import json
import re
import sqlite3
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from types import TracebackType

from tests.support.loopback import LoopbackServer

MODULES = (
    "argparse", "base64", "bisect", "calendar", "codecs", "collections", "configparser",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email",
    "enum", "fnmatch", "fractions", "functools", "getopt", "gettext", "glob", "gzip",
    "hashlib", "heapq", "hmac", "html", "http", "imaplib", "inspect", "ipaddress", "json",
    "locale", "logging", "lzma", "mailbox", "mimetypes", "netrc", "numbers", "operator",
    "optparse", "pathlib", "pickle", "pkgutil", "platform", "plistlib", "poplib", "pprint",
    "queue", "quopri", "random", "re", "sched", "secrets", "selectors", "shelve", "shlex",
    "shutil", "signal", "smtplib", "socket", "socketserver", "statistics", "string",
    "struct", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit",
    "tokenize", "trace", "traceback", "types", "typing", "urllib", "uuid", "warnings",
    "wave", "weakref", "zipfile", "zipimport", "zlib",
)  # fmt: skip

_WORD = re.compile(r"[A-Za-z]{2,}")


def corpus() -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """(documents by id, query texts by id, graded judgments by query) of the modules
    whose docstring has a first sentence of 3 words or more."""
    documents: dict[str, str] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for name in MODULES:
        text = importlib.import_module(name).__doc__ or ""
        paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
        first = re.split(r"(?<=[.:])\s", paragraphs[0] if paragraphs else "", maxsplit=1)[0]
        if len(_WORD.findall(first)) < 3:
            continue
        ids = [f"{name}:{n}" for n in range(len(paragraphs))]
        documents.update(zip(ids, paragraphs, strict=True))
        queries[name] = first
        qrels[name] = {doc: 2 if n == 0 else 1 for n, doc in enumerate(ids)}
    return documents, queries, qrels


class Bm25Ranker(LoopbackServer):
    """The server (module docstring); a context manager that starts and stops it."""

    def __init__(self, documents: dict[str, str], *, v2_delay_s: float = 0.0) -> None:
        self.v2_delay_s = v2_delay_s
        self.asked: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, body)")
        self._db.executemany("INSERT INTO docs VALUES (?, ?)", documents.items())
        super().__init__(self._handler())

    def url(self, release: str) -> str:
        return self.address(f"/{release}/search")

    def search(self, text: str, size: int) -> list[tuple[str, float]]:
        """The top `size` documents for `text` (any of its words) by BM25, best first."""
        words = [f'"{word}"' for word in _WORD.findall(text)]
        if not words:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT id, bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), id "
                "LIMIT ?",
                (" OR ".join(words), size),
            ).fetchall()
        return [(str(doc), -float(score)) for doc, score in rows]

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        super().__exit__(kind, error, trace)
        self._db.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        ranker = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text, size = str(body["query"]), int(body["size"])
                with ranker._lock:
                    ranker.asked[self.path] += 1
                if self.path.startswith("/v2/"):
                    time.sleep(ranker.v2_delay_s)
                    text = " ".join(_WORD.findall(text)[:2])
                hits = [{"id": doc, "score": score} for doc, score in ranker.search(text, size)]
                answer = json.dumps({"hits": hits}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        return Handler
