"""`RankingSamples`: one ranking served per query, segment and pane, for the explanations.

The first accepted event of each (segment, query, pane) keeps its ranking, cut to the depth
the explanations look at (the deepest cutoff). A pane is the window spec's hop (the window
itself when tumbling), so a window's sample of a query is the first of its panes that has
one. Bounded twice: panes older than what the explanation store keeps are dropped at each
finalize (`forget_before`), and past `limit` rankings new ones are not kept (`skipped`
counts them). A ranking is held as one string (the ids joined by U+001F), about 10 times
smaller than a tuple of strings.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from monitor.windows.summary import Segment

__all__ = ["RankingSamples"]

SEPARATOR = "\x1f"

SampleKey = tuple[Segment, str, int]  # (raw segment, query id, pane start in ms)


class RankingSamples:
    """The sampled rankings (written by the poll loop, read by the HTTP thread)."""

    def __init__(self, pane_ms: int, depth: int, limit: int) -> None:
        self.pane_ms = pane_ms
        self.depth = depth
        self.limit = limit
        self.skipped = 0
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
        """Keep a ranking (doc ids, rank 1 first) for `key` (from `key()`)."""
        text = SEPARATOR.join(ranking[: self.depth])
        with self._lock:
            self._rankings.setdefault(key, text)

    def ranking(self, segment: Segment, query: str, start_ms: int, end_ms: int) -> list[str] | None:
        """The first ranking of the query sampled in [start_ms, end_ms), if any."""
        with self._lock:
            for pane in range(start_ms - start_ms % self.pane_ms, end_ms, self.pane_ms):
                text = self._rankings.get((segment, query, pane))
                if text is not None:
                    return text.split(SEPARATOR) if text else []
        return None

    def forget_before(self, time_ms: int) -> None:
        """Drop the rankings of panes that start before `time_ms`."""
        with self._lock:
            old = [key for key in self._rankings if key[2] < time_ms]
            for key in old:
                del self._rankings[key]
