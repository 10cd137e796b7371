"""Event-time windows: assignment, watermarks, duplicates, lateness, safe offsets, finalize.

`EventWindows` is the stateful stage between scoring and the scheduler tick:

    assign / revoke(partitions)      on rebalance (revoke drops exactly their share)
    add_batch(EventBatch)            each poll's scored events -> Admission (late, duplicates)
    record_consumed(partition, off)  records rejected before windowing
    finalize()                       on each tick: summaries of the windows the watermark closed
    safe_offsets()                   after publishing them: what to commit
    mark_published(...)              on start: summaries already on the windows topic

Nothing here touches Kafka or Prometheus; the only clock is the injected one (idle
partitions). Every public method holds one lock, so the poll loop, the scheduler and the
exporter may call from their own threads. Batches are fastest with rows grouped by
partition, as a poll returns them.

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

import functools
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np

from monitor.aggregate import CellRegistry, WindowAggregate
from monitor.clock import Clock
from monitor.dedupe import EventIdSet, id_hashes
from monitor.published import PublishedWindows
from monitor.safe_offsets import SafeOffsets
from monitor.summary import Segment, WindowSummary
from monitor.watermark import NO_WATERMARK, Watermarks
from monitor.window_assigner import WindowSpec, members_by_listed_start
from monitor.window_batch import AcceptedRows, Admission, EventBatch, StateSize, int_list

__all__ = ["Admission", "EventBatch", "EventWindows", "StateSize"]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(
    method: Callable[Concatenate[EventWindows, _P], _R],
) -> Callable[Concatenate[EventWindows, _P], _R]:
    def holding_the_lock(self: EventWindows, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    functools.update_wrapper(holding_the_lock, method)
    return holding_the_lock


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
        self._offsets = SafeOffsets()
        self._published = PublishedWindows(spec)
        # The poll loop adds batches while the scheduler finalizes and the exporter reads
        # gauges: every public method holds this lock.
        self._lock = threading.Lock()

    # -- partitions ---------------------------------------------------------------------

    @_locked
    def assign(self, partitions: Iterable[int]) -> None:
        """Track newly assigned partitions (unassigned ones are tracked on first sight)."""
        self._watermarks.assign(partitions)

    @_locked
    def revoke(self, partitions: Iterable[int]) -> None:
        """Discard exactly what these partitions contributed to open windows.

        Cells are keyed by partition, so the remaining partitions' sums are untouched; the
        new owner replays the revoked partitions from their safe offsets.
        """
        gone = set(partitions)
        self._watermarks.revoke(gone)
        self._offsets.drop_partitions(gone)
        self._ids.discard_partitions(gone)
        cells = self._registry.of_partitions(gone)
        for by_start in self._windows.values():
            for start, aggregate in list(by_start.items()):
                aggregate.drop_cells(cells)
                if aggregate.empty:
                    del by_start[start]

    @_locked
    def record_consumed(self, partition: int, offset: int) -> None:
        """Note a record rejected before windowing (invalid, unknown query), so the safe
        offset of a partition with no open window moves past it."""
        progress = self._watermarks.progress(partition)
        if progress.next_offset is None or offset + 1 > progress.next_offset:
            progress.next_offset = offset + 1

    # -- events -------------------------------------------------------------------------

    @_locked
    def add_batch(self, batch: EventBatch) -> Admission:
        """Count a batch's events into their open windows; return what was rejected."""
        if batch.measures.ndim != 2 or batch.measures.shape[1] != len(self.measure_keys):
            raise ValueError(f"measures must have {len(self.measure_keys)} columns")
        admission = Admission()
        if len(batch.event_ids):
            self._count(batch, self._admit(batch, admission))
        return admission

    def _admit(self, batch: EventBatch, admission: Admission) -> AcceptedRows:
        # The per-event path of the service (~45k events/s): locals instead of attributes,
        # one loop, vectorised work before and after it, replays in helpers. Long on purpose.
        size, hop, lateness = self.spec.size_ms, self.spec.hop_ms, self.spec.allowed_lateness_ms
        replaying, version = bool(self._published), batch.evaluation_set_version
        partitions, offsets = int_list(batch.partitions), int_list(batch.offsets)
        event_ids, query_ids, segments = batch.event_ids, batch.query_ids, batch.segments
        watermarks, panes, registry = self._watermarks, self._offsets.first_in_pane, self._registry
        published = self._published
        cell_ids = registry.ids
        hashes = id_hashes(event_ids)
        accepted = AcceptedRows(hashes, self._ids.contains(hashes).tolist())
        known, in_batch = accepted.known, accepted.in_batch
        rows, cells, marks = accepted.rows, accepted.cells, accepted.watermarks
        late, duplicates = admission.late, admission.duplicates
        now, watermark = self._clock.monotonic(), watermarks.global_ms
        partition, progress, floor = None, watermarks.progress(partitions[0]), 0
        slot_pane = slot_partition = None
        starts: Sequence[int] = ()
        for i, time_ms in enumerate(int_list(batch.event_times_ms)):
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
                starts = published.open_starts(pane, watermark, segment, version, partition)
                if not starts:
                    self._reject_closed(i, batch, admission, accepted, watermark)
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

    def _reject_closed(
        self,
        row: int,
        batch: EventBatch,
        admission: Admission,
        accepted: AcceptedRows,
        watermark: int,
    ) -> None:
        """An event with no open window while replaying: late, or in a published window.

        A mark that says how far its partition was read decides exactly. Without one, late
        first: a replay from the committed offset rebuilds a lone partition's watermark
        exactly (the newest event time sits in a window open at the commit), so an event the
        watermark passed was late then too, and its dead letter may not have been flushed
        before the crash.
        """
        segment, version = batch.segments[row], batch.evaluation_set_version
        pane = self.spec.pane_of(int(batch.event_times_ms[row]))
        partition = int(batch.partitions[row])
        counted = self._published.counted_before(
            pane, segment, version, partition, int(batch.offsets[row])
        )
        if counted is None:
            counted = pane + self.spec.size_ms > watermark
        if not counted:
            admission.late.append(row)
            return
        admission.already_published.append(row)
        # Its id still dedupes, as it did before the crash while its window was open.
        event_id = batch.event_ids[row]
        if not accepted.known[row] and event_id not in accepted.in_batch:
            accepted.in_batch.add(event_id)
            accepted.remembered.append(row)

    def _count(self, batch: EventBatch, accepted: AcceptedRows) -> None:
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

    def finalize(self, quiet_now_ms: int | None = None) -> list[WindowSummary]:
        """Close every window the watermark has passed: its summaries, oldest first.

        Refreshes the watermark first (idle partitions; with `quiet_now_ms`, a quiet stream
        follows processing time: `monitor.watermark`). Summaries of windows marked published
        are not produced again. After publishing what this returns, commit `safe_offsets()`.
        """
        return [summary for summary, _ in self.finalize_with_partitions(quiet_now_ms)]

    @_locked
    def finalize_with_partitions(
        self, quiet_now_ms: int | None = None
    ) -> list[tuple[WindowSummary, frozenset[int]]]:
        """`finalize()`, with the partitions whose events each summary holds: for records
        that several instances publish for one window (see `mark_published`)."""
        watermark = self._watermarks.refresh(quiet_now_ms)
        size = self.spec.size_ms
        closed: list[WindowAggregate] = []
        for by_start in self._windows.values():
            for start in [s for s in by_start if s + size <= watermark]:
                closed.append(by_start.pop(start))
        self._windows = {v: by_start for v, by_start in self._windows.items() if by_start}
        self._offsets.close_panes(size, watermark)
        self._ids.discard_panes(lambda panes: panes + size <= watermark)
        closed.sort(key=lambda a: (a.start_ms, a.evaluation_set_version))
        summaries = [
            (summary, partitions)
            for aggregate in closed
            for summary, partitions in aggregate.summaries(
                self.spec, self.measure_keys, self._registry
            )
            if not self._published.covers_all(summary, partitions)
        ]
        self._published.prune(watermark)
        return summaries

    @_locked
    def mark_published(
        self,
        start_ms: int,
        segment: Segment,
        evaluation_set_version: str,
        partitions: Collection[int] | None = None,
        through: Mapping[int, int] | None = None,
    ) -> None:
        """Remember a summary already on the windows topic (read back after a restart).

        Replayed events of that window, segment and version (from `partitions`, default
        all; below `through[partition]`, the offset read up to at its finalize, if known)
        are then neither counted nor late (`already_published`), and the summary is not
        produced again; older windows count as closed (`monitor.published`). Marks of
        windows the watermark has passed are dropped at the next `finalize()`.
        """
        self._published.mark(start_ms, segment, evaluation_set_version, partitions, through)

    @_locked
    def safe_offsets(self) -> dict[int, int]:
        """Per partition, the offset from which a restart replays exactly the open windows.

        That is the first record the partition contributed to a window still open (not yet
        returned by `finalize()`); with nothing open, the offset after the last record seen.
        Partitions that delivered nothing are absent.
        """
        return self._offsets.by_partition(self._watermarks.partitions)

    # -- gauges -------------------------------------------------------------------------

    @property
    def watermark_ms(self) -> int | None:
        """The global watermark in epoch ms, `None` before any event."""
        watermark = self._watermarks.global_ms
        return None if watermark <= NO_WATERMARK else watermark

    @_locked
    def partition_watermarks(self) -> dict[int, int | None]:
        """Each tracked partition's watermark in epoch ms (`None` before its first event)."""
        return {p: self._watermarks.of_partition(p) for p in sorted(self._watermarks.partitions)}

    @_locked
    def all_idle(self) -> bool:
        """Whether every tracked partition has been idle for the idle timeout (none: True)."""
        return len(self._watermarks.idle_partitions()) == len(self._watermarks.partitions)

    @_locked
    def idle_partitions(self) -> list[int]:
        """Partitions that no longer hold the watermark back."""
        return self._watermarks.idle_partitions()

    @property
    @_locked
    def open_windows(self) -> int:
        """Distinct window starts not yet finalized (over every evaluation-set version)."""
        return len({start for by_start in self._windows.values() for start in by_start})

    @_locked
    def state_size(self) -> StateSize:
        """Entries held in memory, by kind."""
        aggregates = [a for by_start in self._windows.values() for a in by_start.values()]
        return StateSize(
            windows=len(aggregates),
            cells=sum(a.used for a in aggregates),
            registered_cells=len(self._registry.keys),
            event_ids=len(self._ids),
            panes=len(self._offsets),
            published=len(self._published),
        )
