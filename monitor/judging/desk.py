"""`JudgingDesk`: the work the judging page (`/judge`) gives people, audit first.

Two kinds of work, in this order:

1. **The audit.** A model's grade is held to the people's on whole queries drawn at random:
   a query is drawn when `audit_draw(query)` (a SHA-256 of its id, a number in [0, 1) the
   same on every instance and every start) is under `judging.audit_rate`. Every pair of a
   drawn query that a model graded and no person did is audit work, query after query in
   draw order, so that queries are finished one at a time: a query counts as audited only
   when people graded every document of its top k that a model graded
   (`monitor.judging.correction`).
2. **The unjudged pairs** the judging loop asked for (the to-judge topic, any instance's),
   that no one graded yet, highest priority first.

The desk keeps what each open pair's to-judge record said a judge reads (query text, title,
snippet, url, link), each within `events.max_document_bytes`, and at most `max_open` pairs
(`judging.max_pending`; a quarter more between views): past it, the lowest priority leaves.
A pair leaves when a person grades it, or when a model does and its query is not drawn.
`view()` is made on the poll loop at each tick (`refresh`) and read by the HTTP thread: an
immutable `DeskView`.
"""

from __future__ import annotations

import hashlib
import heapq
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from monitor.judging.judgments import JudgmentBook, is_person
from monitor.judging.pairs import PairKey

__all__ = ["DeskPair", "DeskView", "JudgingDesk", "audit_draw"]

READABLE: Final = ("query_text", "title", "snippet", "url", "document_url")


def audit_draw(query_id: str) -> float:
    """The query's draw for the audit, uniform in [0, 1) and fixed by its id."""
    digest = hashlib.sha256(b"rankmon-audit\0" + query_id.encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest()[:8], "big") / 2.0**64


@dataclass(frozen=True, slots=True)
class DeskPair:
    """One pair of work, with what its judges read."""

    query_id: str
    doc_id: str
    audit: bool
    priority: float
    rank: int
    readable: Mapping[str, str]
    model_grade: int | None = None  # never shown before the person grades (no anchoring)

    def to_json(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "audit": self.audit,
            "priority": self.priority,
            "rank": self.rank,
            **self.readable,
        }


@dataclass(frozen=True)
class DeskView:
    """The work as of one tick, and how far the people got."""

    pairs: tuple[DeskPair, ...] = ()
    audit_left: int = 0
    audit_queries_done: int = 0
    audit_queries: int = 0
    open_left: int = 0
    graded_by: Mapping[str, int] = field(default_factory=dict)  # person source -> pairs
    # person source -> (audit pairs, the model's grade equal to theirs, mean model - person)
    agreement: Mapping[str, tuple[int, int, float]] = field(default_factory=dict)


@dataclass(slots=True)
class _Open:
    priority: float
    rank: int
    readable: dict[str, str]


class JudgingDesk:
    """The open pairs and the view made of them (module docstring)."""

    def __init__(
        self,
        audit_rate: float,
        max_open: int,
        max_readable_bytes: int,
        texts: Mapping[str, str] | None = None,
        readable_of: Callable[[str, str], dict[str, str]] | None = None,
    ) -> None:
        """`texts`: each query's text (the topics file); `readable_of(query, doc)`: what this
        instance's events said of a document (the shelf)."""
        self.audit_rate = audit_rate
        self.max_open = max_open
        self.max_readable_bytes = max_readable_bytes
        self._texts = texts or {}
        self._readable_of = readable_of
        self._open: dict[PairKey, _Open] = {}
        self._view = DeskView()
        self._lock = threading.Lock()
        self._version: object = None

    def drawn(self, query_id: str) -> bool:
        return audit_draw(query_id) < self.audit_rate

    def asked(self, key: PairKey, value: Mapping[str, Any]) -> None:
        """A to-judge record (any instance's): the pair is open until someone grades it."""
        priority = value.get("priority")
        rank = value.get("rank")
        readable = {
            name: text for name in READABLE if isinstance(text := value.get(name), str) and text
        }
        if sum(len(t.encode("utf-8", "surrogatepass")) for t in readable.values()) > (
            self.max_readable_bytes + 4 * 1024  # the document's fields, its query and link
        ):
            readable = {}  # past an event's limits: the pair, without its texts
        self._open[key] = _Open(
            float(priority) if isinstance(priority, int | float) else 0.0,
            rank if isinstance(rank, int) and not isinstance(rank, bool) else 0,
            readable,
        )
        # Trimmed back to `max_open` once a quarter over it (and at each view), not at each
        # pair past it: reading a long to-judge topic back stays linear in its length.
        if len(self._open) > self.max_open + max(1, self.max_open // 4):
            self._trim()

    def _trim(self) -> None:
        """The lowest priorities leave, down to `max_open` pairs."""
        excess = len(self._open) - self.max_open
        if excess > 0:
            for lowest in heapq.nsmallest(
                excess, self._open, key=lambda k: (self._open[k].priority, k)
            ):
                del self._open[lowest]

    def graded(self, key: PairKey, source: str) -> None:
        """A judgment came for the pair: a person's closes it, a model's unless drawn."""
        if is_person(source) or not self.drawn(key[0]):
            self._open.pop(key, None)

    def refresh(self, book: JudgmentBook) -> None:
        """Make the view of the work as the book stands (on the poll loop, each tick; only
        when the book changed)."""
        self._trim()
        version = (book.merged().version, len(book.in_effect), len(book.pairs), len(self._open))
        if version == self._version:
            return
        self._version = version
        view = self._make(book)
        with self._lock:
            self._view = view

    def view(self) -> DeskView:
        with self._lock:
            return self._view

    def _make(self, book: JudgmentBook) -> DeskView:
        audit: list[DeskPair] = []
        drawn_queries: dict[str, bool] = {}  # drawn query -> every model-graded pair done
        graded_by: Counter[str] = Counter()
        for (query, doc), judgment in book.in_effect.items():
            if is_person(judgment.source):
                graded_by[judgment.source] += 1
                continue
            if not self.drawn(query):
                continue
            drawn_queries[query] = False
            audit.append(self._pair((query, doc), audit=True, model=judgment.grade))
        for query, _ in book.audit:
            if self.drawn(query):
                drawn_queries.setdefault(query, True)
        audit.sort(key=lambda p: (audit_draw(p.query_id), p.query_id, p.rank or 1 << 30, p.doc_id))
        judged = book.in_effect
        base = book.base
        unjudged = [
            self._pair(key, audit=False)
            for key in self._open
            if key not in judged and not (key[0] in base and key[1] in base.grades(key[0]))
        ]
        unjudged.sort(key=lambda p: (-p.priority, p.query_id, p.doc_id))
        return DeskView(
            tuple(audit + unjudged),
            audit_left=len(audit),
            audit_queries_done=sum(drawn_queries.values()),
            audit_queries=len(drawn_queries),
            open_left=len(unjudged),
            graded_by=dict(graded_by),
            agreement=_agreement(book),
        )

    def _pair(self, key: PairKey, *, audit: bool, model: int | None = None) -> DeskPair:
        query, doc = key
        known = self._open.get(key)
        readable = dict(known.readable) if known is not None else {}
        if "query_text" not in readable and query in self._texts:
            readable["query_text"] = self._texts[query]
        if self._readable_of is not None and not ({"title", "snippet"} & readable.keys()):
            readable.update(self._readable_of(query, doc))
        return DeskPair(
            query,
            doc,
            audit,
            known.priority if known is not None else 0.0,
            known.rank if known is not None else 0,
            readable,
            model,
        )


def _agreement(book: JudgmentBook) -> dict[str, tuple[int, int, float]]:
    """Per person, over the pairs they graded that a model graded too: how many, how many
    the model graded the same, and the model's mean grade minus theirs."""
    totals: dict[str, list[float]] = {}
    for key, models in book.audit.items():
        person = book.in_effect.get(key)
        if person is None or not is_person(person.source) or not models:
            continue
        model = models[-1].grade
        total = totals.setdefault(person.source, [0, 0, 0.0])
        total[0] += 1
        total[1] += model == person.grade
        total[2] += model - person.grade
    return {
        source: (int(n), int(same), diff / n) for source, (n, same, diff) in totals.items() if n
    }
