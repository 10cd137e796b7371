"""Offsets that are safe to commit: a restart from them replays exactly the open windows.

Per partition, that is the first record the partition contributed to a window that is still
open: everything before it is either in finalized (published) windows or was rejected. With
nothing open, it is the offset after the last record seen. Offsets are tracked per pane
(`monitor.windows.spec`): a pane's first record holds its partition back until the last
window containing the pane is finalized.

    offset     0   1   2   3   4        (tumbling 10)
    time       1   4   12  13  21
    finalized [0, 10)                 -> safe offset 2: replay from the first record of [10, 20)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from monitor.windows.watermark import PartitionProgress

__all__ = ["SafeOffsets"]


class SafeOffsets:
    """First offsets of the open panes, per partition."""

    def __init__(self) -> None:
        # (pane start, partition) -> offset of the partition's first record in the pane.
        # The window loop writes it directly (setdefault): no call per event.
        self.first_in_pane: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self.first_in_pane)

    def close_panes(self, closed: Callable[[int], bool]) -> None:
        """Release panes whose every window is closed (and finalize emitted): `closed(pane)`."""
        self.first_in_pane = {
            key: first for key, first in self.first_in_pane.items() if not closed(key[0])
        }

    def drop_partitions(self, partitions: Collection[int]) -> None:
        """Forget revoked partitions."""
        self.first_in_pane = {
            key: first for key, first in self.first_in_pane.items() if key[1] not in partitions
        }

    def by_partition(self, progress: Mapping[int, PartitionProgress]) -> dict[int, int]:
        """The safe offset of every partition that has delivered a record."""
        firsts: dict[int, int] = {}
        for (_pane, partition), first in self.first_in_pane.items():
            firsts[partition] = min(first, firsts.get(partition, first))
        safe: dict[int, int] = {}
        for partition, seen in progress.items():
            if partition in firsts:
                safe[partition] = firsts[partition]
            elif seen.next_offset is not None:
                safe[partition] = seen.next_offset
        return safe
