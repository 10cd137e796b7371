"""The per-window state: each open window's sums, the cells they are kept by, and the ids of
the events counted (duplicates are dropped while their windows are open).

`OpenWindows` holds what events put in: one `WindowAggregate` per open window (keyed by its
epoch's boundary and its start), the `CellRegistry` numbering (query, raw segment, partition)
cells for the whole run, and the `EventIdSet` of the open panes' event ids. It does not decide
where an event goes (the windower, `monitor.windows.epochs`) nor when a window closes (the
watermarks, `monitor.windows.watermark`): it is told. A revoked partition's share leaves it
exactly (`drop_partitions`). Its restore is the replay from the committed offsets, with the
windows already published marked (`monitor.windows.published`): the state is rebuilt from the
events, never read from a snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping

import numpy as np
import numpy.typing as npt

from monitor.windows.aggregate import CellRegistry, WindowAggregate
from monitor.windows.dedupe import EventIdSet
from monitor.windows.spec import NO_BOUNDARY, Epoch

__all__ = ["OpenWindows", "WindowKey"]

WindowKey = tuple[int, int]  # (epoch boundary, window start) of an open window
Int64s = npt.NDArray[np.int64]


class OpenWindows:
    """The open windows' aggregates, cells and counted event ids (`measures` per event)."""

    def __init__(self, measures: int) -> None:
        self.measures = measures
        self.registry = CellRegistry()
        self.ids = EventIdSet()
        self._windows: dict[WindowKey, WindowAggregate] = {}

    def __bool__(self) -> bool:
        return bool(self._windows)

    def __iter__(self) -> Iterator[WindowKey]:
        return iter(self._windows)

    def aggregates(self) -> list[WindowAggregate]:
        return list(self._windows.values())

    def of_epoch(self, epoch: Epoch, start: int) -> WindowAggregate:
        """The aggregate of `epoch`'s window at `start`, opened on first use."""
        key = (epoch.from_ms, start)
        aggregate = self._windows.get(key)
        if aggregate is None:
            aggregate = self._windows[key] = WindowAggregate(
                start, epoch.version, self.measures, epoch.set_queries
            )
        return aggregate

    def starts_in(self, epoch_from: int) -> list[int]:
        """The starts of the open windows of the epoch beginning at `epoch_from`."""
        return [start for (epoch, start) in self._windows if epoch == epoch_from]

    def epochs(self) -> set[int]:
        """The boundaries of the epochs some open window belongs to."""
        return {epoch for epoch, _ in self._windows}

    def drop_partitions(self, partitions: Collection[int]) -> None:
        """Discard exactly what these partitions put in: their cells' sums and their ids."""
        self.ids.discard_partitions(partitions)
        cells = self.registry.of_partitions(partitions)
        for key, aggregate in list(self._windows.items()):
            aggregate.drop_cells(cells)
            if aggregate.empty:
                del self._windows[key]

    def take_closed(
        self, watermark: int, sizes: Mapping[int, int]
    ) -> list[tuple[int, WindowAggregate]]:
        """Remove and return the windows `watermark` closed, oldest start first, each with
        its epoch's boundary; `sizes`: each epoch boundary's window size."""
        closed = sorted(
            (start, epoch) for epoch, start in self._windows if start + sizes[epoch] <= watermark
        )
        return [(epoch, self._windows.pop((epoch, start))) for start, epoch in closed]

    def forget_ids(self, watermark: int, size_of_panes: Callable[[Int64s], Int64s]) -> None:
        """Forget the ids of the events of panes whose windows `watermark` closed."""
        self.ids.discard_panes(lambda panes: panes + size_of_panes(panes) <= watermark)

    def first_epoch_is(self, boundary: int) -> None:
        """The epoch beginning at `boundary` became the first: its windows now belong to
        NO_BOUNDARY (`Windower.drop_finished`)."""
        self._windows = {
            ((NO_BOUNDARY if epoch == boundary else epoch), start): aggregate
            for (epoch, start), aggregate in self._windows.items()
        }
