"""`DocumentShelf`: what a judge reads of each ranked document, as the events said it.

An event may carry, per ranked document, its `title`, `snippet` and `url` (`documents`,
README "The ranking event"; `rankmon replay` takes them from the ranker's answer by
`replay.ranker.fields`). The shelf keeps the newest of each (query, document), since a
snippet is often the query's own highlight, so that the to-judge record of a pair carries
them and a judge (the LLM worker, a person at `/judge`) needs nothing else.

Bounded: each document's strings are within `events.max_document_bytes` already (the decoder
refuses more), and the shelf holds at most `max_bytes` (`judging.max_documents_bytes`),
counted as the strings' lengths plus `ENTRY_OVERHEAD`; past it, the (query, document) seen
least recently leaves first. Written by the poll loop, read by the HTTP thread: one lock.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections import OrderedDict
from collections.abc import Mapping
from typing import Final

from monitor.ingest.events import DocumentFields

__all__ = ["ENTRY_OVERHEAD", "DocumentShelf", "document_url"]

# What one kept entry costs beyond its strings: the key tuple, the tuples of pairs and the
# ordered dict's slot (CPython 3.11, measured with tracemalloc: 420-520 bytes for 3 fields).
ENTRY_OVERHEAD: Final = 512


class DocumentShelf:
    """The newest title, snippet and url of each (query, document), within `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.evicted = 0  # entries that left for newer ones
        self._kept: OrderedDict[tuple[str, str], DocumentFields] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, query_id: str, documents: Mapping[str, DocumentFields]) -> None:
        """What one event said of its ranked documents."""
        with self._lock:
            for doc_id, fields in documents.items():
                key = (query_id, doc_id)
                old = self._kept.pop(key, None)
                if old is not None:
                    self.bytes -= _size(key, old)
                self._kept[key] = fields
                self.bytes += _size(key, fields)
            while self.bytes > self.max_bytes and self._kept:
                key, fields = self._kept.popitem(last=False)
                self.bytes -= _size(key, fields)
                self.evicted += 1

    def get(self, query_id: str, doc_id: str) -> dict[str, str]:
        """The document's kept strings by name (empty: none kept)."""
        with self._lock:
            return dict(self._kept.get((query_id, doc_id), ()))


def _size(key: tuple[str, str], fields: DocumentFields) -> int:
    return len(key[0]) + len(key[1]) + sum(len(text) for _, text in fields) + ENTRY_OVERHEAD


def document_url(template: str, doc_id: str) -> str:
    """`judging.document_url` with `{doc_id}` put in, URL-quoted (no id can add a path or a
    query to it)."""
    return template.replace("{doc_id}", urllib.parse.quote(doc_id, safe=""))
