"""Event-time windows: assignment, watermarks, duplicates, lateness, safe offsets, finalize.

`EventWindows` is the stateful stage between scoring and the scheduler tick. The wiring hands
it each poll's accepted, scored events as one `EventBatch` and, on every tick, asks
`finalize()` for the summaries of windows the watermark has closed, publishes them, then
commits `safe_offsets()`. Nothing here touches Kafka or Prometheus, and the only clock is the
injected one (for idle partitions).

What becomes of an event (in batch order, against the watermark as it stands after the events
before it, including its own; finalize timing plays no part):

    late               every window that contains it is closed (watermark >= its end)
    already_published  its still-open windows were all published before a restart (replay)
    duplicate          its event_id was seen in a pane whose windows are still open
    accepted           counted into each of its windows that is still open

In a sliding setup an event whose older windows closed but whose newer ones are open is
accepted into the open ones only: it is not late, and the closed windows never see it.

    tumbling 10, lateness 0, one partition
    time      0    5    10   15   20
    events    a    b       c    d           e at 3 after d: late ([0, 10) closed at d = 15)
    windows   [0 ------ 10)[10 ---- 20)

Memory: aggregates grow with queries x segments x open windows (`monitor.aggregate`); the
dedupe set holds 20 bytes per event of the open panes, about `(size + lateness) x rate`
events, and is freed as their windows finalize (`monitor.dedupe`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from monitor.aggregate import CellRegistry, Ints, WindowAggregate
from monitor.clock import Clock
from monitor.dedupe import EventIdSet, id_hashes
from monitor.published import PublishedWindows
from monitor.summary import Segment, WindowSummary
from monitor.watermark import NO_WATERMARK, Watermarks
from monitor.window_assigner import WindowSpec, members_by_listed_start
from monitor.window_batch import Admission, EventBatch, IntColumn, StateSize

__all__ = ["Admission", "EventBatch", "EventWindows", "StateSize"]


def _ints(column: IntColumn) -> Sequence[int]:
    # Python ints iterate several times faster than numpy scalars in the per-event loop.
    return column.tolist() if isinstance(column, np.ndarray) else column


class _Accepted:
    """What the per-event loop gathered for the vectorised steps after it."""

    __slots__ = (
        "cells",
        "hashes",
        "in_batch",
        "known",
        "remembered",
        "rows",
        "starts",
        "watermarks",
    )

    def __init__(self, hashes: Ints, known: list[bool]) -> None:
        self.hashes = hashes  # of every event id in the batch
        self.known = known  # whether the dedupe set held the id before the batch
        self.in_batch: set[str] = set()  # ids remembered by earlier rows of the batch
        self.rows: list[int] = []  # batch rows counted into windows
        self.cells: list[int] = []  # their cell ids
        self.watermarks: list[int] = []  # the watermark each was admitted under
        self.starts: list[Sequence[int]] = []  # their window starts, when replaying only
        self.remembered: list[int] = []  # rows not counted whose ids still dedupe


class EventWindows:
    """Windows of scored events, their watermarks, and what is safe to commit."""

    def __init__(self, spec: WindowSpec, measure_keys: Sequence[str], clock: Clock) -> None:
        self.spec = spec
        self.measure_keys = tuple(measure_keys)
        self._clock = clock
        self._watermarks = Watermarks(spec.allowed_lateness_ms, spec.idle_timeout_ms, clock)
        self._windows: dict[str, dict[int, WindowAggregate]] = {}  # version -> start -> agg
        self._registry = CellRegistry()
        self._ids = EventIdSet()
        self._panes: dict[tuple[int, int], int] = {}  # (pane start, partition) -> 1st offset
        self._published = PublishedWindows(spec.size_ms)

    # -- partitions ---------------------------------------------------------------------

    def assign(self, partitions: Iterable[int]) -> None:
        """Track newly assigned partitions (unassigned ones are tracked on first sight)."""
        self._watermarks.assign(partitions)

    def revoke(self, partitions: Iterable[int]) -> None:
        """Discard exactly what these partitions contributed to open windows.

        Cells are keyed by partition, so the remaining partitions' sums are untouched; the
        new owner replays the revoked partitions from their safe offsets.
        """
        gone = set(partitions)
        self._watermarks.revoke(gone)
        self._panes = {key: offset for key, offset in self._panes.items() if key[1] not in gone}
        self._ids.discard_partitions(gone)
        cells = self._registry.of_partitions(gone)
        for by_start in self._windows.values():
            for start, aggregate in list(by_start.items()):
                aggregate.drop_cells(cells)
                if aggregate.empty:
                    del by_start[start]

    def record_consumed(self, partition: int, offset: int) -> None:
        """Note a record rejected before windowing (invalid, unknown query), so the safe
        offset of a partition with no open window moves past it."""
        progress = self._watermarks.progress(partition)
        if progress.next_offset is None or offset + 1 > progress.next_offset:
            progress.next_offset = offset + 1

    # -- events -------------------------------------------------------------------------

    def add_batch(self, batch: EventBatch) -> Admission:
        """Count a batch's events into their open windows; return what was rejected."""
        if batch.measures.ndim != 2 or batch.measures.shape[1] != len(self.measure_keys):
            raise ValueError(f"measures must have {len(self.measure_keys)} columns")
        admission = Admission()
        if len(batch.event_ids):
            self._count(batch, self._admit(batch, admission))
        return admission

    def _admit(self, batch: EventBatch, admission: Admission) -> _Accepted:
        # The per-event path of the service (~45k events/s): locals instead of attributes,
        # one loop, vectorised work before and after it, replays in helpers. Long on purpose.
        size, hop, lateness = self.spec.size_ms, self.spec.hop_ms, self.spec.allowed_lateness_ms
        replaying, version = bool(self._published), batch.evaluation_set_version
        partitions, offsets = _ints(batch.partitions), _ints(batch.offsets)
        event_ids, query_ids, segments = batch.event_ids, batch.query_ids, batch.segments
        watermarks, panes, registry = self._watermarks, self._panes, self._registry
        cell_ids = registry.ids
        hashes = id_hashes(event_ids)
        accepted = _Accepted(hashes, self._ids.contains(hashes).tolist())
        known, in_batch = accepted.known, accepted.in_batch
        rows, cells, marks = accepted.rows, accepted.cells, accepted.watermarks
        late, duplicates = admission.late, admission.duplicates
        now, watermark = self._clock.monotonic(), watermarks.global_ms
        partition, progress, floor = None, watermarks.progress(partitions[0]), 0
        slot_pane = slot_partition = None
        starts: Sequence[int] = ()
        for i, time_ms in enumerate(_ints(batch.event_times_ms)):
            if partitions[i] != partition:
                partition = partitions[i]
                progress = watermarks.progress(partition)
                progress.last_record_s = now
                floor = watermarks.floor_without(partition, now)
            progress.next_offset = offsets[i] + 1
            if time_ms > progress.max_event_ms:
                progress.max_event_ms = time_ms
                # The global watermark is the minimum over active partitions: this one's new
                # watermark or the others' minimum, whichever is lower; it never decreases.
                candidate = time_ms - lateness if time_ms - lateness < floor else floor
                watermark = max(watermark, candidate)
            pane = time_ms - time_ms % hop
            segment = segments[i]
            if replaying:
                starts = self._open_starts(pane, watermark, segment, version)
                if not starts:
                    self._reject_closed(i, batch, admission, accepted)
                    continue
            elif pane + size <= watermark:
                late.append(i)
                continue
            event_id = event_ids[i]
            if known[i] or event_id in in_batch:
                duplicates.append(i)
                continue
            in_batch.add(event_id)
            if pane != slot_pane or partition != slot_partition:
                slot_pane, slot_partition = pane, partition
                panes.setdefault((pane, partition), offsets[i])
            key = (query_ids[i], segment, partition)
            cell = cell_ids.get(key)
            rows.append(i)
            cells.append(registry.register(key) if cell is None else cell)
            marks.append(watermark)
            if replaying:
                accepted.starts.append(starts)
        admission.accepted = len(rows)
        watermarks.global_ms = watermark
        return accepted

    def _open_starts(
        self, pane: int, watermark: int, segment: Segment, version: str
    ) -> Sequence[int]:
        """Starts of the event's windows that are open and not already published."""
        published = self._published
        first = pane - self.spec.size_ms + self.spec.hop_ms
        closed_up_to = max(watermark, published.floor_ms)
        if closed_up_to > NO_WATERMARK:
            first = max(first, self.spec.first_open_start(closed_up_to))
        starts = range(first, pane + 1, self.spec.hop_ms)
        return [s for s in starts if (s, segment, version) not in published]

    def _reject_closed(
        self, row: int, batch: EventBatch, admission: Admission, accepted: _Accepted
    ) -> None:
        """An event with no open window while replaying: late, or in a published window."""
        segment, version = batch.segments[row], batch.evaluation_set_version
        starts = self.spec.starts_of(int(batch.event_times_ms[row]))
        if not self._published.any_of(starts, segment, version):
            admission.late.append(row)
            return
        admission.already_published.append(row)
        # Its id still dedupes, as it did before the crash while its window was open.
        event_id = batch.event_ids[row]
        if not accepted.known[row] and event_id not in accepted.in_batch:
            accepted.in_batch.add(event_id)
            accepted.remembered.append(row)

    def _count(self, batch: EventBatch, accepted: _Accepted) -> None:
        """Remember the new ids and add the accepted events into their windows."""
        times = np.asarray(batch.event_times_ms, dtype=np.int64)
        all_panes = times - times % self.spec.hop_ms
        remember = np.array(accepted.rows + accepted.remembered, dtype=np.intp)
        partitions = np.asarray(batch.partitions, dtype=np.int64)[remember]
        self._ids.add(accepted.hashes[remember], all_panes[remember], partitions)
        if not accepted.rows:
            return
        rows = np.array(accepted.rows, dtype=np.intp)
        cells = np.array(accepted.cells, dtype=np.intp)
        if accepted.starts:
            groups = members_by_listed_start(accepted.starts)
        else:
            marks = np.asarray(accepted.watermarks, dtype=np.int64)
            groups = self.spec.members_by_start(all_panes[rows], marks)
        by_start = self._windows.setdefault(batch.evaluation_set_version, {})
        for start, members in groups:
            aggregate = by_start.get(start)
            if aggregate is None:
                aggregate = by_start[start] = WindowAggregate(
                    start,
                    batch.evaluation_set_version,
                    len(self.measure_keys),
                    batch.evaluation_set_queries,
                )
            aggregate.add(cells[members], batch.measures[rows[members]])

    # -- the scheduler tick -------------------------------------------------------------

    def finalize(self) -> list[WindowSummary]:
        """Close every window the watermark has passed: its summaries, oldest first.

        Refreshes the watermark by the wall clock first (idle partitions). Summaries of
        windows marked published are not produced again. After publishing what this returns,
        commit `safe_offsets()`.
        """
        watermark = self._watermarks.refresh()
        size = self.spec.size_ms
        closed: list[WindowAggregate] = []
        for by_start in self._windows.values():
            for start in [s for s in by_start if s + size <= watermark]:
                closed.append(by_start.pop(start))
        self._windows = {v: by_start for v, by_start in self._windows.items() if by_start}
        self._panes = {
            key: first for key, first in self._panes.items() if key[0] + size > watermark
        }
        self._ids.discard_panes(lambda panes: panes + size <= watermark)
        closed.sort(key=lambda a: (a.start_ms, a.evaluation_set_version))
        published = self._published
        summaries = [
            summary
            for aggregate in closed
            for summary in aggregate.summaries(self.spec, self.measure_keys, self._registry)
            if (summary.start_ms, summary.segment, summary.evaluation_set_version) not in published
        ]
        published.prune(watermark)
        return summaries

    def mark_published(self, start_ms: int, segment: Segment, evaluation_set_version: str) -> None:
        """Remember a summary already on the windows topic (read back after a restart).

        Replayed events of that window, segment and version are then neither counted nor
        late (`already_published`), and its summary is not produced again; older windows
        count as closed (`monitor.published`). Marks of windows the watermark has passed are
        dropped at the next `finalize()`.
        """
        self._published.mark(start_ms, segment, evaluation_set_version)

    def safe_offsets(self) -> dict[int, int]:
        """Per partition, the offset from which a restart replays exactly the open windows.

        That is the first record the partition contributed to a window still open (not yet
        returned by `finalize()`); with nothing open, the offset after the last record seen.
        Partitions that delivered nothing are absent.
        """
        firsts: dict[int, int] = {}
        for (_pane, partition), first in self._panes.items():
            firsts[partition] = min(first, firsts.get(partition, first))
        safe: dict[int, int] = {}
        for partition, progress in self._watermarks.partitions.items():
            if partition in firsts:
                safe[partition] = firsts[partition]
            elif progress.next_offset is not None:
                safe[partition] = progress.next_offset
        return safe

    # -- gauges -------------------------------------------------------------------------

    @property
    def watermark_ms(self) -> int | None:
        """The global watermark in epoch ms, `None` before any event."""
        watermark = self._watermarks.global_ms
        return None if watermark <= NO_WATERMARK else watermark

    def partition_watermarks(self) -> dict[int, int | None]:
        """Each tracked partition's watermark in epoch ms (`None` before its first event)."""
        return {p: self._watermarks.of_partition(p) for p in sorted(self._watermarks.partitions)}

    def idle_partitions(self) -> list[int]:
        """Partitions that no longer hold the watermark back."""
        return self._watermarks.idle_partitions()

    @property
    def open_windows(self) -> int:
        """Distinct window starts not yet finalized (over every evaluation-set version)."""
        return len({start for by_start in self._windows.values() for start in by_start})

    def state_size(self) -> StateSize:
        """Entries held in memory, by kind."""
        aggregates = [a for by_start in self._windows.values() for a in by_start.values()]
        return StateSize(
            windows=len(aggregates),
            cells=sum(a.used for a in aggregates),
            registered_cells=len(self._registry.keys),
            event_ids=len(self._ids),
            panes=len(self._panes),
            published=len(self._published),
        )
