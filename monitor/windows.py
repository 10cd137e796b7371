"""Event-time windows: assignment, watermarks, duplicates, lateness, safe offsets, finalize.

`EventWindows` is the stateful stage between scoring and the scheduler tick. The wiring hands
it each poll's accepted, scored events as one `EventBatch` and, on every tick, asks
`finalize()` for the summaries of windows the watermark has closed, publishes them, then
commits `safe_offsets()`. Nothing here touches Kafka or Prometheus, and the only clock is the
injected one (for idle partitions).

What becomes of an event (in batch order, against the watermark as it stands after the events
before it, including its own):

    late               every window that contains it is closed (watermark >= its end)
    already_published  its still-open windows were all published before a restart (replay)
    duplicate          its event_id was seen in a window that is still open
    accepted           counted into each of its windows that is still open

In a sliding setup an event whose older windows closed but whose newer ones are open is
accepted into the open ones only: it is not late, and the closed windows never see it.

    tumbling 10, lateness 0, one partition
    time      0    5    10   15   20
    events    a    b       c    d           e at 3 after d: late ([0, 10) closed at d = 15)
    windows   [0 ------ 10)[10 ---- 20)

Memory: aggregates grow with queries x segments x open windows (`monitor.aggregate`); the
dedupe set holds the ids of events whose newest window is still open, i.e. about
`(size + lateness) x event rate` ids, and is freed as those windows finalize.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from monitor.aggregate import WindowAggregate
from monitor.clock import Clock
from monitor.published import PublishedWindows
from monitor.summary import Segment, WindowSummary
from monitor.watermark import NO_WATERMARK, Watermarks
from monitor.window_assigner import WindowSpec

__all__ = ["Admission", "EventBatch", "EventWindows", "StateSize"]

IntColumn = Sequence[int] | npt.NDArray[np.int64]


@dataclass(frozen=True)
class EventBatch:
    """One poll's accepted, scored events: row `i` of every column is event `i`.

    `measures` has one column per measure key of the `EventWindows` it is added to. A batch is
    scored against one evaluation set, whose version and query count it carries.
    """

    partitions: IntColumn
    offsets: IntColumn
    event_times_ms: IntColumn
    event_ids: Sequence[str]
    query_ids: Sequence[str]
    segments: Sequence[Segment]
    measures: npt.NDArray[np.float64]
    evaluation_set_version: str
    evaluation_set_queries: int

    def __post_init__(self) -> None:
        n = len(self.event_ids)
        columns = (self.partitions, self.offsets, self.event_times_ms, self.query_ids)
        if any(len(c) != n for c in (*columns, self.segments)) or self.measures.shape[0] != n:
            raise ValueError("every column of an event batch must have one row per event")


@dataclass
class Admission:
    """What became of a batch: counts, and the batch row indices of each rejection."""

    accepted: int = 0
    late: list[int] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    already_published: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class StateSize:
    """Entries held, for memory gauges and tests: none of these grows with events alone."""

    windows: int  # open (window start, evaluation-set version) aggregates
    cells: int  # (query, segment, partition) cells over all open windows
    event_ids: int  # the dedupe set
    panes: int  # (pane, partition) slots: first offsets and ids of open panes
    published: int  # published windows remembered for replay


class _Pane:
    """One partition's records in one pane: its first offset and its event ids."""

    __slots__ = ("event_ids", "first_offset")

    def __init__(self, first_offset: int) -> None:
        self.first_offset = first_offset
        self.event_ids: list[str] = []


def _ints(column: IntColumn) -> Sequence[int]:
    # Python ints iterate several times faster than numpy scalars in the per-event loop.
    return column.tolist() if isinstance(column, np.ndarray) else column


class EventWindows:
    """Windows of scored events, their watermarks, and what is safe to commit."""

    def __init__(self, spec: WindowSpec, measure_keys: Sequence[str], clock: Clock) -> None:
        self.spec = spec
        self.measure_keys = tuple(measure_keys)
        self._watermarks = Watermarks(spec.allowed_lateness_ms, spec.idle_timeout_ms, clock)
        self._clock = clock
        self._windows: dict[str, dict[int, WindowAggregate]] = {}  # version -> start -> agg
        self._seen: set[str] = set()
        self._panes: dict[tuple[int, int], _Pane] = {}  # (pane start, partition)
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
        for key in [key for key in self._panes if key[1] in gone]:
            self._seen.difference_update(self._panes.pop(key).event_ids)
        for by_start in self._windows.values():
            for start, aggregate in list(by_start.items()):
                aggregate.drop_partitions(gone)
                if not aggregate.cells:
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
            self._admit(batch, admission)
        for aggregate in self._windows.get(batch.evaluation_set_version, {}).values():
            aggregate.flush(batch.measures)
        return admission

    def _admit(self, batch: EventBatch, admission: Admission) -> None:
        # The per-event path of the service (~45k events/s): locals instead of attributes,
        # one loop, the rare cases (sliding, replay) in a helper. Long on purpose.
        size, hop, lateness = self.spec.size_ms, self.spec.hop_ms, self.spec.allowed_lateness_ms
        simple = not self.spec.sliding and not self._published
        partitions, offsets = _ints(batch.partitions), _ints(batch.offsets)
        event_ids, query_ids, segments = batch.event_ids, batch.query_ids, batch.segments
        version = batch.evaluation_set_version
        by_start = self._windows.setdefault(version, {})
        seen, panes, watermarks = self._seen, self._panes, self._watermarks
        now = self._clock.monotonic()
        watermark = watermarks.global_ms
        partition: int | None = None
        progress, floor = watermarks.progress(partitions[0]), 0
        late, duplicates, accepted = admission.late, admission.duplicates, 0
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
            if simple:
                if pane + size <= watermark:
                    late.append(i)
                    continue
                starts: Sequence[int] = (pane,)
            else:
                starts = self._open_starts(pane, watermark, segment, version)
                if not starts:
                    self._reject_closed(i, batch, pane, admission)
                    continue
            event_id = event_ids[i]
            if event_id in seen:
                duplicates.append(i)
                continue
            seen.add(event_id)
            slot = panes.get((pane, partition))
            if slot is None:
                slot = panes[(pane, partition)] = _Pane(offsets[i])
            slot.event_ids.append(event_id)
            key = (query_ids[i], segment, partition)
            for start in starts:
                aggregate = by_start.get(start)
                if aggregate is None:
                    aggregate = by_start[start] = self._new_aggregate(start, batch)
                row = aggregate.cells.get(key)
                aggregate.pending_rows.append(aggregate.new_row(key) if row is None else row)
                aggregate.pending_events.append(i)
            accepted += 1
        admission.accepted = accepted
        watermarks.global_ms = watermark

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
        if not published:
            return starts
        return [s for s in starts if (s, segment, version) not in published]

    def _reject_closed(self, row: int, batch: EventBatch, pane: int, admission: Admission) -> None:
        """An event with no open window: late, or a replay of a published window."""
        starts = self.spec.starts_of(pane)
        segment, version = batch.segments[row], batch.evaluation_set_version
        if not self._published.any_of(starts, segment, version):
            admission.late.append(row)
            return
        admission.already_published.append(row)
        # Its id still dedupes, as it did before the crash while its window was open.
        event_id, partition = batch.event_ids[row], int(batch.partitions[row])
        if event_id not in self._seen:
            self._seen.add(event_id)
            slot = self._panes.get((pane, partition))
            if slot is None:
                slot = self._panes[(pane, partition)] = _Pane(int(batch.offsets[row]))
            slot.event_ids.append(event_id)

    def _new_aggregate(self, start: int, batch: EventBatch) -> WindowAggregate:
        measures = len(self.measure_keys)
        version, set_queries = batch.evaluation_set_version, batch.evaluation_set_queries
        return WindowAggregate(start, version, measures, set_queries)

    # -- the scheduler tick -------------------------------------------------------------

    def finalize(self) -> list[WindowSummary]:
        """Close every window the watermark has passed: its summaries, oldest first.

        Refreshes the watermark by the wall clock first (idle partitions). Summaries of
        windows marked published are not produced again. After publishing what this returns,
        commit `safe_offsets()`.
        """
        watermark = self._watermarks.refresh()
        closed: list[WindowAggregate] = []
        for by_start in self._windows.values():
            for start in [s for s in by_start if self.spec.is_closed(s, watermark)]:
                closed.append(by_start.pop(start))
        self._windows = {v: by_start for v, by_start in self._windows.items() if by_start}
        for key in [key for key in self._panes if self.spec.is_closed(key[0], watermark)]:
            self._seen.difference_update(self._panes.pop(key).event_ids)
        published = self._published
        closed.sort(key=lambda a: (a.start_ms, a.evaluation_set_version))
        summaries = [
            summary
            for aggregate in closed
            for summary in aggregate.summaries(self.spec, self.measure_keys)
            if (summary.start_ms, summary.segment, summary.evaluation_set_version) not in published
        ]
        published.prune(watermark)
        return summaries

    def mark_published(self, start_ms: int, segment: Segment, evaluation_set_version: str) -> None:
        """Remember a summary already on the windows topic (read back after a restart).

        Replayed events of that window, segment and version are then neither counted nor
        late (`already_published`), and its summary is not produced again. Marks of windows
        the watermark has already passed are dropped at the next `finalize()`.
        """
        self._published.mark(start_ms, segment, evaluation_set_version)

    def safe_offsets(self) -> dict[int, int]:
        """Per partition, the offset from which a restart replays exactly the open windows.

        That is the first record the partition contributed to a window still open (not yet
        returned by `finalize()`); with nothing open, the offset after the last record seen.
        Partitions that delivered nothing are absent.
        """
        firsts: dict[int, int] = {}
        for (_pane, partition), slot in self._panes.items():
            known = firsts.get(partition)
            if known is None or slot.first_offset < known:
                firsts[partition] = slot.first_offset
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
            cells=sum(len(a.cells) for a in aggregates),
            event_ids=len(self._seen),
            panes=len(self._panes),
            published=len(self._published),
        )
