"""What goes into and comes out of `EventWindows`: a poll's scored events, their admission.

Columns, not objects: the stream runs at ~45k events/s and a per-event object costs more
than the windowing itself. Integer columns may be lists or numpy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from monitor.windows.summary import Segment

__all__ = ["AcceptedRows", "Admission", "IntColumn", "ScoredEvents", "StateSize", "int_list"]

IntColumn = Sequence[int] | npt.NDArray[np.int64]


def int_list(column: IntColumn) -> Sequence[int]:
    """The column as Python ints: they iterate several times faster than numpy scalars."""
    return column.tolist() if isinstance(column, np.ndarray) else column


@dataclass(frozen=True)
class ScoredEvents:
    """One poll's accepted, scored events: row `i` of every column is event `i`.

    `segments` are raw segments, reduced to the configured keys (`monitor.windows.segments`).
    `measures` has one column per measure key of the `EventWindows` it is added to, each row
    scored with the evaluation set of the event's epoch (`Windower.epochs`).
    `record_times_ms`: the records' Kafka timestamps (0 or less: none), which bound how far
    an event may move its partition's watermark (`EventWindows`, `max_clock_skew_ms`);
    None: no bound. `failed`: the rows that are a replay's failed queries (their measures are
    not read; `monitor.windows.aggregate`); None: none.
    """

    partitions: IntColumn
    offsets: IntColumn
    event_times_ms: IntColumn
    event_ids: Sequence[str]
    query_ids: Sequence[str]
    segments: Sequence[Segment]
    measures: npt.NDArray[np.float64]
    record_times_ms: IntColumn | None = None
    failed: npt.NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        n = len(self.event_ids)
        columns: list[Sized] = [self.partitions, self.offsets, self.event_times_ms, self.query_ids]
        if self.record_times_ms is not None:
            columns.append(self.record_times_ms)
        if self.failed is not None:
            columns.append(self.failed)
        if any(len(c) != n for c in (*columns, self.segments)) or self.measures.shape[0] != n:
            raise ValueError("every column of the scored events must have one row per event")


@dataclass
class Admission:
    """What became of the scored events: how many were counted, and the row of every rejected event.

    The wiring dead-letters `late` and `duplicates` rows with their original bytes; rows in
    `already_published` are replays of windows published before a restart (their summaries
    are on the windows topic already) and need no dead letter.
    """

    accepted: int = 0
    late: list[int] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    already_published: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class StateSize:
    """Entries held, by kind: for memory gauges and tests."""

    windows: int  # open (window start, evaluation-set version) aggregates
    cells: int  # cell rows over all open windows: queries x segments x windows
    registered_cells: int  # (query, segment, partition) cells numbered since the start
    event_ids: int  # the dedupe set: events of open panes
    panes: int  # (pane, partition) first offsets of open panes
    published: int  # published windows remembered for replay


class AcceptedRows:
    """What the per-event loop of `EventWindows` gathered for the vectorised steps after it."""

    __slots__ = (
        "cells",
        "epochs",
        "hashes",
        "in_poll",
        "known",
        "remembered",
        "rows",
        "starts",
        "watermarks",
    )

    def __init__(self, hashes: npt.NDArray[np.int64], known: list[bool]) -> None:
        self.hashes = hashes  # of every event id in the events
        self.known = known  # whether the dedupe set held the id before the events
        self.in_poll: set[str] = set()  # ids remembered by earlier rows of the poll
        self.rows: list[int] = []  # rows counted into windows
        self.cells: list[int] = []  # their cell ids
        self.watermarks: list[int] = []  # the watermark each was admitted under
        self.epochs: list[int] = []  # the index of each one's epoch
        self.starts: list[Sequence[int]] = []  # their window starts, when replaying only
        self.remembered: list[int] = []  # rows not counted whose ids still dedupe
