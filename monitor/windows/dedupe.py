"""The dedupe set: event ids seen in open windows, 20 bytes per event.

A window of 1M events must not cost 100+ MB of Python strings and set slots, so the set keeps
a 64-bit hash of each id (Python's `hash`, salted per process: the set never outlives it)
with the pane and partition the event came in, in numpy arrays. Two different ids share a
hash with probability about `ids held / 2**64` per lookup (below 1e-13 at 1M held); such an
event would be counted as a duplicate.

The arrays are sorted runs of a log-structured merge: each poll adds a sorted run, and runs
of similar length merge, so there are O(log n) runs; a lookup is one binary search per run.
Entries are dropped by pane (when its windows finalize) or by partition (on revoke).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["EventIdSet", "id_hashes"]

Int64s = npt.NDArray[np.int64]
Partitions = npt.NDArray[np.int32]


def id_hashes(event_ids: Sequence[str]) -> Int64s:
    """The 64-bit hashes the set stores, one per id."""
    return np.fromiter(map(hash, event_ids), dtype=np.int64, count=len(event_ids))


class _Run:
    __slots__ = ("hashes", "panes", "partitions")

    def __init__(self, hashes: Int64s, panes: Int64s, partitions: Partitions) -> None:
        self.hashes, self.panes, self.partitions = hashes, panes, partitions

    def __len__(self) -> int:
        return len(self.hashes)

    def where(self, keep: npt.NDArray[np.bool_]) -> _Run:
        return _Run(self.hashes[keep], self.panes[keep], self.partitions[keep])


def _sorted_run(hashes: Int64s, panes: Int64s, partitions: Partitions) -> _Run:
    order = np.argsort(hashes, kind="stable")
    return _Run(hashes[order], panes[order], partitions[order])


def _merged(older: _Run, newer: _Run) -> _Run:
    """Two sorted runs as one, written straight into place: no concatenation and no sort,
    so a merge of n entries needs n x 29 bytes, not n x 56 (RSS stays near the data)."""
    total = len(older) + len(newer)
    into = np.searchsorted(older.hashes, newer.hashes) + np.arange(len(newer))
    from_older = np.ones(total, dtype=np.bool_)
    from_older[into] = False
    merged = _Run(np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int32))
    for column in _Run.__slots__:
        target, old, new = (getattr(run, column) for run in (merged, older, newer))
        target[into] = new
        target[from_older] = old
    return merged


class EventIdSet:
    """Hashes of the event ids in open panes."""

    def __init__(self) -> None:
        self._runs: list[_Run] = []

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def contains(self, hashes: Int64s) -> npt.NDArray[np.bool_]:
        """Which of these hashes are held."""
        found = np.zeros(len(hashes), dtype=np.bool_)
        for run in self._runs:
            at = np.searchsorted(run.hashes, hashes)
            np.minimum(at, len(run) - 1, out=at)
            found |= run.hashes[at] == hashes
        return found

    def add(self, hashes: Int64s, panes: Int64s, partitions: Int64s) -> None:
        """Hold new hashes (not already held), each with its pane start and partition."""
        if len(hashes) == 0:
            return
        self._runs.append(_sorted_run(hashes, panes, partitions.astype(np.int32)))
        # Merge while the newest run is at least half the one before: O(log n) runs, and
        # each entry is copied O(log n) times over its life.
        while len(self._runs) > 1 and 2 * len(self._runs[-1]) >= len(self._runs[-2]):
            newer, older = self._runs.pop(), self._runs.pop()
            self._runs.append(_merged(older, newer))

    def discard_panes(self, closed: Callable[[Int64s], npt.NDArray[np.bool_]]) -> None:
        """Drop the entries whose pane `closed` marks (True = drop)."""
        self._filter(lambda run: ~closed(run.panes))

    def discard_partitions(self, partitions: Collection[int]) -> None:
        """Drop the entries that came in on these partitions."""
        gone = np.fromiter(partitions, dtype=np.int32)
        self._filter(lambda run: ~np.isin(run.partitions, gone))

    def _filter(self, keep: Callable[[_Run], npt.NDArray[np.bool_]]) -> None:
        runs = [run.where(keep(run)) for run in self._runs]
        self._runs = [run for run in runs if len(run)]
