"""Event-time window assignment: tumbling or sliding windows aligned to the epoch.

A window is the half-open interval `[start, start + size)` in epoch milliseconds, with
`start` a multiple of `hop`. Tumbling windows have `hop == size`; sliding windows have a
`hop` that divides `size`, so each event lies in `size / hop` windows. An event at exactly
`start + size` belongs to the next window, not this one. A window is closed once the
watermark reaches its end (`start + size <= watermark`).

The time axis is cut into panes of length `hop` (`[k * hop, (k + 1) * hop)`): every window is
a run of `size / hop` consecutive panes, and an event's pane decides all its windows. The last
window that contains an event starts at its pane's start; the first starts `size - hop` earlier.

    size 10, hop 5     0    5    10   15   20
    panes              |----|----|----|----|
    windows            [0 ----- 10)
                            [5 ----- 15)
                                 [10 ---- 20)
    event at 12        lies in [5, 15) and [10, 20); its pane starts at 10
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["NO_BOUNDARY", "Epoch", "WindowSpec", "align_up", "members_by_listed_start"]

NO_BOUNDARY = -(1 << 62)  # the first epoch's start: every time before the next one

Indices = npt.NDArray[np.intp]
Times = npt.NDArray[np.int64]


@dataclass(frozen=True)
class WindowSpec:
    """The shape of the windows and how long to wait for stragglers.

    `allowed_lateness_ms` is how far behind the latest event time of a partition an event may
    arrive and still be counted (the watermark trails the maximum by this much).
    `idle_timeout_ms` is how long (by the wall clock) a partition may deliver nothing before it
    stops holding the watermark back; `None` means never. `label` is the window size as the
    configuration wrote it (`"5m"`), the value of the `window` label.
    """

    size_ms: int
    hop_ms: int
    allowed_lateness_ms: int = 0
    idle_timeout_ms: int | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.size_ms <= 0:
            raise ValueError(f"window size must be positive, got {self.size_ms} ms")
        if self.hop_ms <= 0 or self.hop_ms > self.size_ms:
            raise ValueError(f"window hop must be in (0, size], got {self.hop_ms} ms")
        if self.size_ms % self.hop_ms:
            raise ValueError(
                f"window size ({self.size_ms} ms) must be a multiple of the hop ({self.hop_ms} ms)"
            )
        if self.allowed_lateness_ms < 0:
            raise ValueError(f"allowed lateness must be >= 0, got {self.allowed_lateness_ms} ms")
        if self.idle_timeout_ms is not None and self.idle_timeout_ms <= 0:
            raise ValueError(f"idle timeout must be positive, got {self.idle_timeout_ms} ms")

    @classmethod
    def tumbling(
        cls,
        size_ms: int,
        allowed_lateness_ms: int = 0,
        idle_timeout_ms: int | None = None,
        label: str = "",
    ) -> WindowSpec:
        """Windows that do not overlap: `hop == size`."""
        return cls(size_ms, size_ms, allowed_lateness_ms, idle_timeout_ms, label)

    @property
    def sliding(self) -> bool:
        """Whether windows overlap (each event lies in `size / hop` windows)."""
        return self.hop_ms != self.size_ms

    def pane_of(self, event_time_ms: int) -> int:
        """Start of the pane holding the event; Python's floor modulo keeps this right before
        the epoch too."""
        return event_time_ms - event_time_ms % self.hop_ms

    def starts_of(self, event_time_ms: int) -> range:
        """Starts of every window that contains the event, oldest first."""
        pane = self.pane_of(event_time_ms)
        return range(pane - self.size_ms + self.hop_ms, pane + 1, self.hop_ms)

    def first_open_start(self, watermark_ms: int) -> int:
        """The oldest window start still open under the watermark (`start + size > watermark`)."""
        oldest_closed = watermark_ms - self.size_ms
        return oldest_closed - oldest_closed % self.hop_ms + self.hop_ms

    def members_by_start(
        self, panes: Times, watermarks: Times, first_start_ms: int | None = None
    ) -> list[tuple[int, Indices]]:
        """Which events go to which window, for many events at once: `(start, event indices)`.

        Event `k` (pane `panes[k]`, admitted when the watermark was `watermarks[k]`) goes
        to every start from `pane - size + hop` (and from `first_start_ms`, the start of its
        epoch) up to its pane that was still open then. Indices keep the events' order, which keeps
        sums independent of poll boundaries.
        """
        size, hop = self.size_ms, self.hop_ms
        firsts = panes - size + hop
        if first_start_ms is not None:
            firsts = np.maximum(firsts, first_start_ms)
        if self.sliding:
            closed = watermarks - size
            firsts = np.maximum(firsts, closed - closed % hop + hop)
        # Candidate starts from the few distinct panes, never a range over the events' span:
        # one poll may hold events hours apart.
        distinct = np.unique(panes)
        candidates = np.unique(distinct[:, None] - np.arange(size // hop) * hop)
        groups = []
        for start in candidates.tolist():
            members = np.flatnonzero((firsts <= start) & (panes >= start))
            if len(members):
                groups.append((start, members))
        return groups


def align_up(time_ms: int, hop_ms: int) -> int:
    """The first multiple of `hop_ms` at or after `time_ms`."""
    return -(-time_ms // hop_ms) * hop_ms


@dataclass(frozen=True)
class Epoch:
    """From `from_ms` on (until the next epoch), events are windowed by `spec` and scored
    against the evaluation set `version` (of `set_queries` queries).

    Epochs change at window boundaries: a resized window across a restart, a new evaluation
    set (`monitor.windows.engine`). An event goes to the windows of its epoch that contain it and
    start in the epoch, so a window of the older epoch that overlaps the change (sliding
    windows, or a new size) holds only the events before it, and no window holds events of
    two epochs.
    """

    from_ms: int
    spec: WindowSpec
    version: str = ""
    set_queries: int = 0

    def first_start(self, pane_ms: int) -> int:
        """The oldest start of the epoch's windows holding an event of this pane."""
        return max(
            pane_ms - self.spec.size_ms + self.spec.hop_ms, align_up(self.from_ms, self.spec.hop_ms)
        )


def members_by_listed_start(starts: Sequence[Sequence[int]]) -> list[tuple[int, Indices]]:
    """Which events go to which window when each event `k` lists its own starts (replays,
    where published windows leave gaps), in the events' order per start."""
    members: dict[int, list[int]] = {}
    for k, event_starts in enumerate(starts):
        for start in event_starts:
            members.setdefault(start, []).append(k)
    return [(start, np.array(m, dtype=np.intp)) for start, m in sorted(members.items())]
