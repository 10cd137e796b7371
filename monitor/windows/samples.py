"""`RankingSamples`: one ranking served per query, segment and pane, for the explanations.

The first accepted event of each (segment, query, pane) keeps its ranking, cut to the depth
the explanations look at (the deepest cutoff). A pane is the window spec's hop (the window
itself when tumbling), so a window's sample of a query is the first of its panes that has
one. Bounded twice: panes older than what the explanation store keeps are dropped at each
finalize (`forget_before`), and past `limit` rankings or `max_bytes` bytes new ones are not
kept (`skipped` counts them). A ranking is held as its JSON array text (one str), about 10
times smaller than a tuple of strings; JSON escapes the quotes and controls a document id may
hold, so no id can split into two or merge with its neighbour when it is read back. (Not the
bytes orjson returns: each of those keeps a 4 KiB allocation, whatever its length.)

Bytes are counted as the str's own size plus `ENTRY_OVERHEAD` for the key and the dict
entry, so `max_bytes` bounds the memory whatever the length of the ids a producer sends.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Final

import orjson

from monitor.windows.summary import Segment

__all__ = ["ENTRY_OVERHEAD", "RankingSamples"]

# What one kept ranking costs beyond its text: the key tuple and the dict slot (measured with
# tracemalloc on CPython 3.11: 180-230 bytes).
ENTRY_OVERHEAD: Final = 256

SampleKey = tuple[Segment, str, int]  # (raw segment, query id, pane start in ms)


class RankingSamples:
    """The sampled rankings (written by the poll loop, read by the HTTP thread)."""

    def __init__(self, pane_ms: int, depth: int, limit: int, max_bytes: int | None = None) -> None:
        self.pane_ms = pane_ms
        self.depth = depth
        self.limit = limit
        self.max_bytes = max_bytes
        self.skipped = 0
        self.bytes = 0  # held now: each text's size plus ENTRY_OVERHEAD
        self._rankings: dict[SampleKey, str] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rankings)

    def key(self, segment: Segment, query: str, time_ms: int) -> SampleKey | None:
        """The key of an event if its pane has no ranking of the query yet, else None."""
        key = (segment, query, time_ms - time_ms % self.pane_ms)
        if key in self._rankings:
            return None
        if len(self._rankings) >= self.limit:
            self.skipped += 1
            return None
        return key

    def keep(self, key: SampleKey, ranking: Sequence[str]) -> None:
        """Keep a ranking (doc ids, rank 1 first) for `key` (from `key()`), unless it would
        take the samples past `max_bytes` (then `skipped` counts it)."""
        text = orjson.dumps(list(ranking[: self.depth])).decode()
        cost = sys.getsizeof(text) + ENTRY_OVERHEAD
        with self._lock:
            if key in self._rankings:
                return
            if self.max_bytes is not None and self.bytes + cost > self.max_bytes:
                self.skipped += 1
                return
            self._rankings[key] = text
            self.bytes += cost

    def ranking(self, segment: Segment, query: str, start_ms: int, end_ms: int) -> list[str] | None:
        """The first ranking of the query sampled in [start_ms, end_ms), if any."""
        with self._lock:
            for pane in range(start_ms - start_ms % self.pane_ms, end_ms, self.pane_ms):
                text = self._rankings.get((segment, query, pane))
                if text is not None:
                    return [str(doc) for doc in orjson.loads(text)]
        return None

    def in_window(
        self, segment: Segment, start_ms: int, end_ms: int
    ) -> Callable[[str], list[str] | None]:
        """Query -> its first ranking sampled in [start_ms, end_ms) (`ranking`), if any."""
        return lambda query: self.ranking(segment, query, start_ms, end_ms)

    def forget_before(self, time_ms: int) -> None:
        """Drop the rankings of panes that start before `time_ms`."""
        with self._lock:
            old = [key for key in self._rankings if key[2] < time_ms]
            for key in old:
                self.bytes -= sys.getsizeof(self._rankings.pop(key)) + ENTRY_OVERHEAD
