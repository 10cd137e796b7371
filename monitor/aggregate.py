"""Window aggregates: per query, the sum of measure vectors and the event count.

One `WindowAggregate` holds one window (its start) for one evaluation-set version, so a
window never mixes two versions. Its cells are keyed by (query, segment, partition) and each
cell is a row of a float64 matrix of measure sums plus an event count: state grows with
queries x segments (x partitions a query arrives on, one when records are keyed by query id),
never with events. Keying by partition lets a revoked partition's share be dropped exactly.

On finalize, per segment (all sums NaN-aware, see below):

    query mean   m_q[j]   = sum of the query's events[j] / its event count
    means[j]              = (sum over queries q with m_q[j] defined of m_q[j]) / their number
    sums[j]               = sum over queries q with m_q[j] defined of m_q[j]
    event_means[j]        = (sum over those queries of their event sums[j]) / their events

A NaN measure value means the scorer excludes the query from that measure (e.g. IDCG = 0
under a policy that drops such queries). It is a property of the query and the evaluation
set, so all events of a query agree; the query then has no mean for that measure and the
headline is over the queries that have one (all-NaN gives NaN). `queries` and `events` count
every query and event of the segment.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from monitor.summary import Segment, WindowSummary
from monitor.window_assigner import WindowSpec

__all__ = ["CellKey", "WindowAggregate"]

CellKey = tuple[str, Segment, int]  # (query id, segment, partition)

Matrix = npt.NDArray[np.float64]

_INITIAL_ROWS = 64


class WindowAggregate:
    """Measure sums and counts of one window and evaluation-set version, per query cell.

    The streaming loop appends `(row, batch index)` pairs to `pending_rows`/`pending_events`
    and calls `flush` once per batch: one vectorised sum per batch instead of one per event.
    """

    __slots__ = (
        "cells",
        "counts",
        "evaluation_set_queries",
        "evaluation_set_version",
        "pending_events",
        "pending_rows",
        "rows_used",
        "start_ms",
        "sums",
    )

    def __init__(self, start_ms: int, version: str, measures: int, set_queries: int) -> None:
        self.start_ms = start_ms
        self.evaluation_set_version = version
        self.evaluation_set_queries = set_queries
        self.cells: dict[CellKey, int] = {}
        # Not len(cells): rows of dropped cells keep their sums and must never be reused.
        self.rows_used = 0
        self.sums: Matrix = np.zeros((_INITIAL_ROWS, measures))
        self.counts = np.zeros(_INITIAL_ROWS, dtype=np.int64)
        self.pending_rows: list[int] = []
        self.pending_events: list[int] = []

    def new_row(self, key: CellKey) -> int:
        """Allocate the row of a new cell, growing the matrix geometrically."""
        row = self.rows_used
        self.rows_used += 1
        if row == len(self.counts):
            self.sums = np.concatenate([self.sums, np.zeros_like(self.sums)])
            self.counts = np.concatenate([self.counts, np.zeros_like(self.counts)])
        self.cells[key] = row
        return row

    def flush(self, measures: Matrix) -> None:
        """Add the pending batch rows of `measures` into their cells."""
        if not self.pending_rows:
            return
        rows = np.asarray(self.pending_rows, dtype=np.intp)
        events = np.asarray(self.pending_events, dtype=np.intp)
        self.pending_rows.clear()
        self.pending_events.clear()
        # np.add.at adds event by event in batch order, so a cell's sum is the same float
        # however the stream was cut into batches: a replay after a crash reproduces the
        # published values bit for bit. (Reducing each batch first would be ~20% faster.)
        np.add.at(self.sums, rows, measures[events])
        np.add.at(self.counts, rows, 1)

    def drop_partitions(self, partitions: Collection[int]) -> None:
        """Forget the cells fed by these partitions (their rows stay allocated, unused)."""
        self.cells = {key: row for key, row in self.cells.items() if key[2] not in partitions}

    def events(self) -> int:
        """Events counted in the window so far."""
        return int(self.counts[list(self.cells.values())].sum())

    def summaries(self, spec: WindowSpec, measure_keys: Sequence[str]) -> list[WindowSummary]:
        """One summary per segment, segments in sorted order."""
        by_segment: dict[Segment, dict[str, list[int]]] = {}
        # Sorted cells: a query on several partitions is merged in the same order every run.
        for (query, segment, _partition), row in sorted(self.cells.items()):
            by_segment.setdefault(segment, {}).setdefault(query, []).append(row)
        return [
            self._summary(spec, measure_keys, segment, by_segment[segment])
            for segment in sorted(by_segment)
        ]

    def _summary(
        self,
        spec: WindowSpec,
        measure_keys: Sequence[str],
        segment: Segment,
        rows_by_query: dict[str, list[int]],
    ) -> WindowSummary:
        queries = sorted(rows_by_query)
        # A query normally has one cell; several only if its records came on several partitions.
        sums = np.stack([self.sums[rows_by_query[q]].sum(axis=0) for q in queries])
        counts = np.array([self.counts[rows_by_query[q]].sum() for q in queries], dtype=np.float64)
        query_means = sums / counts[:, None]
        defined = ~np.isnan(query_means)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_sums = np.where(defined, query_means, 0.0).sum(axis=0)
            means = mean_sums / defined.sum(axis=0)
            event_means = np.where(defined, sums, 0.0).sum(axis=0) / (
                defined * counts[:, None]
            ).sum(axis=0)
        keys = list(measure_keys)
        return WindowSummary(
            window=spec.label,
            start_ms=self.start_ms,
            end_ms=self.start_ms + spec.size_ms,
            segment=segment,
            evaluation_set_version=self.evaluation_set_version,
            events=int(counts.sum()),
            queries=len(queries),
            evaluation_set_queries=self.evaluation_set_queries,
            means=dict(zip(keys, means.tolist(), strict=True)),
            sums=dict(zip(keys, mean_sums.tolist(), strict=True)),
            event_means=dict(zip(keys, event_means.tolist(), strict=True)),
            query_means={
                q: dict(zip(keys, row, strict=True))
                for q, row in zip(queries, query_means.tolist(), strict=True)
            },
        )
