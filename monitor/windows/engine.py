"""Event-time windows: assignment, watermarks, duplicates, lateness, safe offsets, finalize.

`EventWindows` is the stateful stage between scoring and the scheduler tick:

    assign / revoke(partitions)      on rebalance (revoke drops exactly their share)
    add_events(ScoredEvents)            each poll's scored events -> Admission (late, duplicates)
    record_consumed(partition, off)  records rejected before windowing
    finalize()                       on each tick: summaries of the windows the watermark closed
    safe_offsets()                   after publishing them: what to commit
    mark_published(summary, ...)     on assignment: summaries already on the windows topic
    begin_version(version, queries)  a new evaluation set: from which event time it counts
    set_epochs(epochs)               after a restart that changed windows.size or hop

Its three parts are each a module: the watermarks (`monitor.windows.watermark`, how far event
time has come; read through `EventWindows.watermarks`), the windower (`monitor.windows.epochs`,
the epochs and which windows an event time belongs to; `EventWindows.windower`) and the
per-window state (`monitor.windows.open_windows`: sums, cells, counted event ids). Each is
restored its own way after a restart: the windower takes the epochs the windows topic shows
(`set_epochs`), the watermarks and the per-window state are rebuilt by replaying from the safe
offsets, with the windows already published marked (`mark_published`).

Nothing here touches Kafka or Prometheus; the only clock is the injected one (idle
partitions). Everything runs on the service's loop thread. Batches are fastest with rows
grouped by partition, as a poll returns them.

An event moves its partition's watermark by its event time, but never past its record's
Kafka timestamp plus `max_clock_skew_ms` or the allowed lateness, whichever is less: one event
dated into the future (within `events.max_future`) cannot make the honest events after it
late, as the watermark it sets stays at or behind its record timestamp. The record timestamp is
stored with the record, so a replay after a crash rebuilds the same watermark.

    lateness 60 s, skew 10 s        record timestamps: the producer's clock at send
    event  a: time T+290 s, record T   -> counted in its own (future) window; watermark T+10-60
    events T+1 .. T+300 s, record same -> each moves the watermark to its own time - 60: none late

What becomes of an event (in row order, against the watermark as it stands after the events
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

Epochs (`monitor.windows.spec.Epoch`): from a boundary in event time on, events are windowed
by another spec or scored with another evaluation set. Each window belongs to the epoch its
start is in, and holds only that epoch's events, so one window has one size and one version:

    tumbling 10; a new evaluation set while [10, 20) is open: its boundary is 20
    events    a(5) b(12)  reload  c(15) d(22)
    windows   [0 -- 10) v1   [10 -- 20) v1: b, c   [20 -- 30) v2: d

A window of the older epoch that reaches past the boundary (sliding windows; a resize) holds
only the events before it. Segment labels are decided per window at finalize
(`monitor.windows.segments`); the windows hold events by raw segment.

Memory: aggregates grow with queries x raw segments x open windows
(`monitor.windows.aggregate`); the
dedupe set holds 20 bytes per event of the open panes, about `(size + lateness) x rate`
events, and is freed as their windows finalize (`monitor.windows.dedupe`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from operator import sub

import numpy as np

from monitor.clock import Clock
from monitor.windows.aggregate import WindowAggregate
from monitor.windows.dedupe import id_hashes
from monitor.windows.epochs import Windower
from monitor.windows.open_windows import OpenWindows
from monitor.windows.published import PublishedWindows
from monitor.windows.replay_ends import ReplayEnds
from monitor.windows.safe_offsets import SafeOffsets
from monitor.windows.scored import AcceptedRows, Admission, ScoredEvents, StateSize, int_list
from monitor.windows.segments import LabelState, SegmentLabeler
from monitor.windows.spec import (
    Epoch,
    WindowSpec,
    align_up,
    members_by_listed_start,
)
from monitor.windows.summary import Segment, WindowSummary
from monitor.windows.watermark import NO_WATERMARK, Watermarks

__all__ = ["Admission", "EventWindows", "ScoredEvents", "StateSize"]

_Key = tuple[int, int]  # (epoch start, window start) of an open window


class EventWindows:
    """Windows of scored events, their watermarks, and what is safe to commit.

    `version` and `set_queries`: the evaluation set events are scored with at first.
    `labeler`: how raw segments become labels at finalize (default: every raw segment is
    its own label, uncapped). `max_clock_skew_ms`: how far past its record timestamp an
    event's time may move the watermark (None: without bound).

    Three parts, as a stream processor splits them: the watermarks (`Watermarks`: how far
    event time has come, by the injected clock), the windower (`Windower`: the epochs, which
    windows an event time belongs to) and the per-window state (`OpenWindows`: sums, cells,
    counted ids). This class runs the per-event path over the three and finalizes.
    """

    def __init__(
        self,
        spec: WindowSpec,
        measure_keys: Sequence[str],
        clock: Clock,
        *,
        version: str = "",
        set_queries: int = 0,
        labeler: SegmentLabeler | None = None,
        max_clock_skew_ms: int | None = None,
    ) -> None:
        self.max_clock_skew_ms = max_clock_skew_ms
        self.measure_keys = tuple(measure_keys)
        self.labeler = labeler
        self._clock = clock
        # how far event time has come (each partition's, idle ones): read them here
        self.watermarks = Watermarks(spec.allowed_lateness_ms, spec.idle_timeout_ms, clock)
        # the epochs, which windows an event time belongs to: read them here
        self.windower = Windower(spec, version, set_queries)
        self._open = OpenWindows(len(self.measure_keys))
        self._offsets = SafeOffsets()
        self._published = PublishedWindows(() if labeler is None else labeler.keys)
        self._retired: list[Segment] = []
        # The end-of-replay markers read (intake adds them): how far a replay lets the
        # watermark move, and which replays a window holds.
        self.replay_ends = ReplayEnds(spec)

    # -- epochs -------------------------------------------------------------------------

    @property
    def spec(self) -> WindowSpec:
        """The current epoch's window spec."""
        return self.windower.spec

    def set_epochs(self, epochs: Sequence[Epoch]) -> None:
        """Replace the epochs (after a restart whose windows topic shows another window spec).

        Only while no window is open: the service calls it when it rebuilds its state.
        """
        if self._open:
            raise ValueError("epochs change only while no window is open")
        self.windower.restore(epochs)

    def begin_version(self, version: str, set_queries: int) -> int:
        """Score events with a new evaluation set from a window boundary on; return it.

        The boundary is the start after the newest open window of the current epoch: open
        windows finish with the version they started with. With none open, the first window
        the watermark has not closed; before any event, at once.
        """
        opened = self._open.starts_in(self.windower.epochs[-1].from_ms)
        return self.windower.begin_version(version, set_queries, opened, self.watermarks.global_ms)

    def scoring_with(self, version: str) -> bool:
        """Whether an open window is scored with `version`."""
        return bool(self.windower.starts_of(version) & self._open.epochs())

    def _drop_finished_epochs(self, watermark: int) -> None:
        """Forget epochs whose every window is closed and finalized."""
        renamed = self.windower.drop_finished(watermark, self._open.epochs())
        if renamed is not None:
            self._open.first_epoch_is(renamed)

    # -- partitions ---------------------------------------------------------------------

    def assign(self, partitions: Iterable[int]) -> None:
        """Track newly assigned partitions (unassigned ones are tracked on first sight)."""
        self.watermarks.assign(partitions)

    def revoke(self, partitions: Iterable[int]) -> None:
        """Discard exactly what these partitions contributed to open windows.

        Cells are keyed by partition, so the remaining partitions' sums are untouched; the
        new owner replays the revoked partitions from their safe offsets.
        """
        gone = set(partitions)
        self.watermarks.revoke(gone)
        self._offsets.drop_partitions(gone)
        self._open.drop_partitions(gone)

    def record_consumed(self, partition: int, offset: int) -> None:
        """Note a record rejected before windowing (invalid, unknown query), so the safe
        offset of a partition with no open window moves past it."""
        progress = self.watermarks.progress(partition)
        if progress.next_offset is None or offset + 1 > progress.next_offset:
            progress.next_offset = offset + 1

    # -- events -------------------------------------------------------------------------

    def add_events(self, events: ScoredEvents) -> Admission:
        """Count the scored events into their open windows; return what was rejected."""
        if events.measures.ndim != 2 or events.measures.shape[1] != len(self.measure_keys):
            raise ValueError(f"measures must have {len(self.measure_keys)} columns")
        admission = Admission()
        if len(events.event_ids):
            self._count(events, self._admit(events, admission))
        return admission

    def _admit(self, events: ScoredEvents, admission: Admission) -> AcceptedRows:
        # The per-event path of the service (~80k events/s): locals instead of attributes,
        # one loop, vectorised work before and after it, replays in helpers. Long on purpose.
        lateness = self.spec.allowed_lateness_ms
        replaying = bool(self._published)
        partitions, offsets = int_list(events.partitions), int_list(events.offsets)
        times = int_list(events.event_times_ms)
        skew, stamps = self.max_clock_skew_ms, events.record_times_ms
        # What each event moves its partition's watermark by: its time, or less (the bound).
        # The bound never exceeds the lateness: the watermark an event past its record time
        # sets then stays behind that record time, so an honest event sent after it is never
        # late, whatever `max_clock_skew` says.
        bounds = times
        if skew is not None and stamps is not None:
            bounds = _watermark_bounds(int_list(stamps), times, min(skew, lateness))
        event_ids, query_ids, segments = events.event_ids, events.query_ids, events.segments
        watermarks, panes, registry = (
            self.watermarks,
            self._offsets.first_in_pane,
            self._open.registry,
        )
        published = self._published
        cell_ids = registry.ids
        hashes = id_hashes(event_ids)
        accepted = AcceptedRows(hashes, self._open.ids.contains(hashes).tolist())
        known, in_poll = accepted.known, accepted.in_poll
        rows, cells, marks = accepted.rows, accepted.cells, accepted.watermarks
        late, duplicates = admission.late, admission.duplicates
        now, watermark = self._clock.monotonic(), watermarks.global_ms
        partition, progress, floor = None, watermarks.progress(partitions[0]), 0
        slot_pane = slot_partition = None
        windower = self.windower
        row_epochs = windower.row_epochs(times)
        index, epoch = 0, windower[0]
        size, hop = epoch.spec.size_ms, epoch.spec.hop_ms
        starts: Sequence[int] = ()
        for i, time_ms in enumerate(times):
            if row_epochs is not None and row_epochs[i] != index:
                index = row_epochs[i]
                epoch = windower[index]
                size, hop = epoch.spec.size_ms, epoch.spec.hop_ms
            if partitions[i] != partition:
                partition = partitions[i]
                progress = watermarks.progress(partition)
                progress.last_record_s = now
                floor = watermarks.floor_without(partition, now)
            progress.next_offset = offsets[i] + 1
            mark_ms = bounds[i]
            if mark_ms > progress.max_event_ms:
                progress.max_event_ms = mark_ms
                # The global watermark is the minimum over active partitions: this one's new
                # watermark or the others' minimum, whichever is lower; it never decreases.
                candidate = mark_ms - lateness if mark_ms - lateness < floor else floor
                watermark = max(watermark, candidate)
            pane = time_ms - time_ms % hop
            segment = segments[i]
            if replaying:
                # Below a published window's through offset it was counted there, whatever
                # window spec or version it would get now.
                counted = published.counted_before(time_ms, segment, partition, offsets[i])
                if counted:
                    self._already_published(i, events, admission, accepted)
                    continue
                starts = published.open_starts(pane, epoch, watermark, segment, partition)
                if not starts:
                    self._reject_closed(
                        i, events, admission, accepted, watermark=watermark, counted=counted
                    )
                    continue
            elif pane + size <= watermark:
                late.append(i)
                continue
            event_id = event_ids[i]
            if known[i] or event_id in in_poll:
                duplicates.append(i)
                continue
            in_poll.add(event_id)
            if pane != slot_pane or partition != slot_partition:
                slot_pane, slot_partition = pane, partition
                # The lowest offset of the pane: a poll's failed queries come in a call of
                # their own, after its events (`Handoff`), and may be earlier on the partition.
                first = panes.get((pane, partition))
                if first is None or offsets[i] < first:
                    panes[(pane, partition)] = offsets[i]
            key = (query_ids[i], segment, partition)
            cell = cell_ids.get(key)
            rows.append(i)
            cells.append(registry.register(key) if cell is None else cell)
            marks.append(watermark)
            if row_epochs is not None:
                accepted.epochs.append(index)
            if replaying:
                accepted.starts.append(starts)
        admission.accepted = len(rows)
        watermarks.global_ms = watermark
        return accepted

    def _reject_closed(
        self,
        row: int,
        events: ScoredEvents,
        admission: Admission,
        accepted: AcceptedRows,
        *,
        watermark: int,
        counted: bool | None,
    ) -> None:
        """An event with no open window while replaying: late, or in a published window.

        `counted`: what a mark that says how far its partition was read decided (False: not
        counted, so late). Without one (None), late first: a replay from the committed offset
        rebuilds a lone partition's watermark exactly (the newest event time sits in a window
        open at the commit), so an event the watermark passed was late then too, and its dead
        letter may not have been flushed before the crash.
        """
        time_ms = int(events.event_times_ms[row])
        spec = self.windower[self.windower.epoch_of(time_ms)].spec
        if counted is None:
            counted = spec.pane_of(time_ms) + spec.size_ms > watermark
        if not counted:
            admission.late.append(row)
            return
        self._already_published(row, events, admission, accepted)

    @staticmethod
    def _already_published(
        row: int, events: ScoredEvents, admission: Admission, accepted: AcceptedRows
    ) -> None:
        admission.already_published.append(row)
        # Its id still dedupes, as it did before the crash while its window was open.
        event_id = events.event_ids[row]
        if not accepted.known[row] and event_id not in accepted.in_poll:
            accepted.in_poll.add(event_id)
            accepted.remembered.append(row)

    def _count(self, events: ScoredEvents, accepted: AcceptedRows) -> None:
        """Remember the new ids and add the accepted events into their windows."""
        all_panes = self.windower.panes(np.asarray(events.event_times_ms, dtype=np.int64))
        remember = np.array(accepted.rows + accepted.remembered, dtype=np.intp)
        partitions = np.asarray(events.partitions, dtype=np.int64)[remember]
        self._open.ids.add(accepted.hashes[remember], all_panes[remember], partitions)
        if not accepted.rows:
            return
        rows = np.array(accepted.rows, dtype=np.intp)
        cells = np.array(accepted.cells, dtype=np.intp)
        marks = np.asarray(accepted.watermarks, dtype=np.int64)
        if accepted.epochs:
            epochs_of_rows = np.asarray(accepted.epochs, dtype=np.intp)
            by_epoch = [(i, np.flatnonzero(epochs_of_rows == i)) for i in set(accepted.epochs)]
        else:  # one epoch
            by_epoch = [(0, np.arange(len(rows), dtype=np.intp))]
        for index, members in sorted(by_epoch, key=lambda item: item[0]):
            epoch = self.windower[index]
            if accepted.starts:
                listed = members_by_listed_start([accepted.starts[k] for k in members.tolist()])
                groups = [(start, members[inner]) for start, inner in listed]
            else:
                first = align_up(epoch.from_ms, epoch.spec.hop_ms)
                found = epoch.spec.members_by_start(all_panes[rows[members]], marks[members], first)
                groups = [(start, members[inner]) for start, inner in found]
            for start, group in groups:
                aggregate = self._open.of_epoch(epoch, start)
                failed = None if events.failed is None else events.failed[rows[group]]
                aggregate.add(cells[group], events.measures[rows[group]], failed)

    # -- the scheduler tick -------------------------------------------------------------

    def finalize(
        self, quiet_now_ms: int | None = None, floor_ms: int | None = None
    ) -> list[WindowSummary]:
        """Close every window the watermark has passed: its summaries, oldest first.

        Refreshes the watermark first (idle partitions; with `quiet_now_ms`, a quiet stream
        follows processing time: `monitor.windows.watermark`). Summaries of windows marked published
        are not produced again. After publishing what this returns, commit `safe_offsets()`.
        """
        return [summary for summary, _ in self.finalize_with_partitions(quiet_now_ms, floor_ms)]

    def finalize_with_partitions(
        self, quiet_now_ms: int | None = None, floor_ms: int | None = None
    ) -> list[tuple[WindowSummary, frozenset[int]]]:
        """`finalize()`, with the partitions whose events each summary holds: for records
        that several instances publish for one window (see `mark_published`)."""
        watermark = self.watermarks.refresh(quiet_now_ms, floor_ms)
        by_start = {epoch.from_ms: epoch for epoch in self.windower.epochs}
        sizes = {start: epoch.spec.size_ms for start, epoch in by_start.items()}
        summaries: list[tuple[WindowSummary, frozenset[int]]] = []
        for epoch_from, aggregate in self._open.take_closed(watermark, sizes):
            summaries += self._summaries(by_start[epoch_from].spec, aggregate)
        self._offsets.close_panes(self.windower.pane_closed(watermark))
        self._open.forget_ids(watermark, self.windower.size_of_panes)
        self._published.prune(watermark)
        self._drop_finished_epochs(watermark)
        return summaries

    def _summaries(
        self, spec: WindowSpec, aggregate: WindowAggregate
    ) -> list[tuple[WindowSummary, frozenset[int]]]:
        window = (aggregate.start_ms, aggregate.start_ms + spec.size_ms)
        labels: dict[Segment, Segment] | None = None
        state: dict[str, object] | None = None
        if self.labeler is not None:
            raws = aggregate.raw_segments(self._open.registry)
            published = self._published.labels(window)
            labels, retired = self.labeler.window_labels(*window, raws, published)
            self._retired += retired
            if self.labeler.keys:
                state = self.labeler.state.to_json()
        return [
            (self._with_replays(summary), partitions)
            for summary, partitions in aggregate.summaries(
                spec, self.measure_keys, self._open.registry, labels, state
            )
            if not self._published.covers_all(summary, partitions)
        ]

    def _with_replays(self, summary: WindowSummary) -> WindowSummary:
        window = (summary.start_ms, summary.end_ms, summary.segment)
        replays = self.replay_ends.replays_in(*window)
        if not replays:
            return summary
        stopped = self.replay_ends.replays_in(*window, stopped=True)
        return dataclasses.replace(summary, replays=replays, stopped_replays=stopped)

    def take_retired(self) -> list[Segment]:
        """Segment labels retired by the windows finalized since the last call."""
        retired, self._retired = self._retired, []
        return retired

    def mark_published(
        self,
        summary: WindowSummary,
        partitions: Collection[int] | None = None,
        through: Mapping[int, int] | None = None,
    ) -> None:
        """Remember a summary already on the windows topic (read back after a restart).

        Replayed events of that window and segment label (from `partitions`, default all;
        below `through[partition]`, the offset read up to at its finalize, if known) are then
        neither counted nor late (`already_published`), whatever evaluation-set version they
        are scored with now, and the summary is not produced again; older windows count as
        closed (`monitor.windows.published`). Marks of windows the watermark has passed are
        dropped at the next `finalize()`.
        """
        labels = LabelState.from_json(summary.segment_labels) if summary.segment_labels else None
        window = (summary.start_ms, summary.end_ms)
        self._published.mark(window, summary.segment, partitions, through, labels)

    def safe_offsets(self) -> dict[int, int]:
        """Per partition, the offset from which a restart replays exactly the open windows.

        That is the first record the partition contributed to a window still open (not yet
        returned by `finalize()`); with nothing open, the offset after the last record seen.
        Partitions that delivered nothing are absent.
        """
        return self._offsets.by_partition(self.watermarks.partitions)

    # -- gauges -------------------------------------------------------------------------

    @property
    def watermark_ms(self) -> int | None:
        """The global watermark in epoch ms, `None` before any event."""
        watermark = self.watermarks.global_ms
        return None if watermark <= NO_WATERMARK else watermark

    @property
    def open_windows(self) -> int:
        """Distinct window starts not yet finalized (over every epoch)."""
        return len({start for _, start in self._open})

    def state_size(self) -> StateSize:
        """Entries held in memory, by kind."""
        aggregates = self._open.aggregates()
        return StateSize(
            windows=len(aggregates),
            cells=sum(a.used for a in aggregates),
            registered_cells=len(self._open.registry.keys),
            event_ids=len(self._open.ids),
            panes=len(self._offsets),
            published=len(self._published),
        )


def _watermark_bounds(stamps: Sequence[int], times: Sequence[int], skew: int) -> Sequence[int]:
    """How far each event moves its partition's watermark: its time, capped at its record
    timestamp plus `skew` (records without a timestamp, 0 or less, are not capped)."""
    if not times or max(map(sub, times, stamps)) <= skew:  # the common poll: none past it
        return times
    return [
        stamp + skew if stamp > 0 and time > stamp + skew else time
        for time, stamp in zip(times, stamps, strict=True)
    ]
