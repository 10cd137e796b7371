"""The windower: which windows an event time belongs to, epoch by epoch.

An epoch (`monitor.windows.spec.Epoch`) is a window spec and an evaluation-set version from a
boundary in event time on. `Windower` keeps them, oldest first, the last one current: it
tells an event's epoch, the size of a pane's windows, where a new version begins (at a window
boundary, after the windows open now) and which epochs are over. It holds no events and reads
no clock; what is open is the per-window state's (`monitor.windows.open_windows`), how far
event time has come the watermarks' (`monitor.windows.watermark`). Its restore is `restore`:
the epochs a restart reads back from the windows topic (`monitor.checkpoint.restore`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Sequence

import numpy as np
import numpy.typing as npt

from monitor.windows.spec import NO_BOUNDARY, Epoch, WindowSpec, align_up
from monitor.windows.watermark import NO_WATERMARK

__all__ = ["Windower"]

Int64s = npt.NDArray[np.int64]


class Windower:
    """The epochs events are windowed by (`version`, `set_queries`: the first epoch's)."""

    def __init__(self, spec: WindowSpec, version: str = "", set_queries: int = 0) -> None:
        self._epochs = [Epoch(NO_BOUNDARY, spec, version, set_queries)]

    @property
    def epochs(self) -> tuple[Epoch, ...]:
        """Oldest first; the last one is current."""
        return tuple(self._epochs)

    @property
    def spec(self) -> WindowSpec:
        """The current epoch's window spec."""
        return self._epochs[-1].spec

    @property
    def single(self) -> bool:
        """Whether there is one epoch (the per-event path skips the lookups then)."""
        return len(self._epochs) == 1

    def __getitem__(self, index: int) -> Epoch:
        return self._epochs[index]

    def epoch_of(self, time_ms: int) -> int:
        """The index of the epoch an event at `time_ms` belongs to."""
        return max(0, bisect_right([e.from_ms for e in self._epochs], time_ms) - 1)

    def row_epochs(self, times: Sequence[int]) -> list[int] | None:
        """Each event time's epoch index, or None when there is one epoch."""
        if self.single:
            return None
        starts = np.array([e.from_ms for e in self._epochs], dtype=np.int64)
        found = np.searchsorted(starts, np.asarray(times, dtype=np.int64), side="right") - 1
        return np.maximum(found, 0).tolist()  # type: ignore[no-any-return]

    def panes(self, times: Int64s) -> Int64s:
        """The pane (hop-aligned start) of each event time, by its epoch's hop."""
        if self.single:
            panes: Int64s = times - times % self._epochs[0].spec.hop_ms
            return panes
        hops = np.array([e.spec.hop_ms for e in self._epochs], dtype=np.int64)
        row_epochs = np.asarray(self.row_epochs(times.tolist()), dtype=np.intp)
        by_epoch: Int64s = times - times % hops[row_epochs]
        return by_epoch

    def size_of_panes(self, panes: Int64s) -> Int64s:
        """The window size of each pane's epoch."""
        sizes = np.array([e.spec.size_ms for e in self._epochs], dtype=np.int64)
        if len(sizes) == 1:
            return np.full(len(panes), sizes[0], dtype=np.int64)
        starts = np.array([e.from_ms for e in self._epochs], dtype=np.int64)
        found: Int64s = sizes[np.maximum(np.searchsorted(starts, panes, side="right") - 1, 0)]
        return found

    def pane_closed(self, watermark: int) -> Callable[[int], bool]:
        """Whether a pane's windows are all closed at `watermark`."""
        epochs = self._epochs
        if len(epochs) == 1:
            size = epochs[0].spec.size_ms
            return lambda pane: pane + size <= watermark
        return lambda pane: pane + epochs[self.epoch_of(pane)].spec.size_ms <= watermark

    def begin_version(
        self, version: str, set_queries: int, open_starts: Collection[int], watermark: int
    ) -> int:
        """Window events with a new evaluation set from a window boundary on; return it.

        `open_starts`: the starts of the current epoch's open windows, which finish with the
        version they started with: the boundary is the start after the newest. With none open,
        the first window `watermark` has not closed; before any event, at once.
        """
        current = self._epochs[-1]
        spec = current.spec
        if version == current.version:
            return current.from_ms
        if open_starts:
            boundary = max(open_starts) + spec.hop_ms
        elif watermark > NO_WATERMARK:
            boundary = spec.first_open_start(watermark)
        else:
            boundary = current.from_ms
        boundary = max(boundary, align_up(current.from_ms, spec.hop_ms))
        if boundary <= current.from_ms:
            self._epochs[-1] = Epoch(current.from_ms, spec, version, set_queries)
        else:
            self._epochs.append(Epoch(boundary, spec, version, set_queries))
        return boundary

    def starts_of(self, version: str) -> set[int]:
        """The boundaries (`from_ms`) of the epochs that score with `version`."""
        return {epoch.from_ms for epoch in self._epochs if epoch.version == version}

    def versions(self) -> set[str]:
        """The evaluation-set versions some epoch scores with."""
        return {epoch.version for epoch in self._epochs}

    def drop_finished(self, watermark: int, open_epochs: Collection[int]) -> int | None:
        """Forget the oldest epochs whose windows are all closed (`watermark`) and finalized
        (none of `open_epochs`, the boundaries open windows belong to). Returns the boundary
        of the epoch that became the first, whose open windows now belong to NO_BOUNDARY;
        None when none was forgotten."""
        renamed = None
        while len(self._epochs) > 1:
            first, second = self._epochs[0], self._epochs[1]
            last_end = second.from_ms - first.spec.hop_ms + first.spec.size_ms
            if watermark < last_end or first.from_ms in open_epochs:
                break
            self._epochs = self._epochs[1:]
            self._epochs[0] = Epoch(NO_BOUNDARY, second.spec, second.version, second.set_queries)
            renamed = second.from_ms
            open_epochs = {NO_BOUNDARY if e == second.from_ms else e for e in open_epochs}
        return renamed

    def restore(self, epochs: Sequence[Epoch]) -> None:
        """Take the epochs a restart read back (the windows topic showed another spec)."""
        if not epochs or epochs[0].from_ms != NO_BOUNDARY:
            raise ValueError("the first epoch starts at NO_BOUNDARY")
        self._epochs = list(epochs)
