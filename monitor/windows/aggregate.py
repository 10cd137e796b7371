"""Window aggregates: per query, the sum of measure vectors and the event count.

A cell is one (query, raw segment, partition); `CellRegistry` numbers the cells once for the
whole run, so the per-event path hashes a cell's key once, not once per window. One
`WindowAggregate` holds one window (its start) for one evaluation-set version, so a window
never mixes two versions: a float64 row of measure sums and an event count per cell it saw.
State grows with queries x segments (x partitions a query arrives on: one when records are
keyed by query id) x open windows, never with events. Keying cells by partition lets a revoked
partition's share be dropped exactly.

On finalize, the raw segments are mapped to their labels for the window
(`monitor.windows.segments`):
raw segments with one label (values folded into `__other__`) are merged, a query's events
summed over them. Then per segment label (all sums NaN-aware, see below):

    query mean   m_q[j]   = sum of the query's events[j] / its event count
    means[j]              = (sum over queries q with m_q[j] defined of m_q[j]) / their number
    sums[j]               = sum over queries q with m_q[j] defined of m_q[j]
    squares[j]            = sum over those queries of m_q[j]^2
    event_means[j]        = (sum over those queries of their event sums[j]) / their events

A NaN measure value means the scorer excludes the query from that measure (e.g. IDCG = 0
under a policy that drops such queries). It is a property of the query and the evaluation
set, so all events of a query agree; the query then has no mean for that measure and the
headline is over the queries that have one (all-NaN gives NaN). `queries` and `events` count
every query and event of the segment.

A replay's failed query (a row marked `failed`) adds nothing to the sums and counts: its cell
counts it in `failed`, and a query of the segment with failures but no ranked event is one of
the summary's `failed_queries`. A segment whose every query failed still has a summary, with
no queries and NaN means.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from monitor.windows.spec import WindowSpec
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["CellKey", "CellRegistry", "WindowAggregate"]

CellKey = tuple[str, Segment, int]  # (query id, segment, partition)

Matrix = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]

_INITIAL_ROWS = 64


class CellRegistry:
    """Numbers every (query, segment, partition) cell seen during the run."""

    def __init__(self) -> None:
        self.ids: dict[CellKey, int] = {}
        self.keys: list[CellKey] = []

    def register(self, key: CellKey) -> int:
        """The id of a cell not seen before."""
        cell = self.ids[key] = len(self.keys)
        self.keys.append(key)
        return cell

    def of_partitions(self, partitions: Collection[int]) -> Indices:
        """Ids of every cell fed by these partitions."""
        return np.array([c for c, key in enumerate(self.keys) if key[2] in partitions], np.intp)


class WindowAggregate:
    """Measure sums and counts of one window and evaluation-set version, per cell."""

    __slots__ = (
        "cells",
        "counts",
        "evaluation_set_queries",
        "evaluation_set_version",
        "failed",
        "row_of",
        "start_ms",
        "sums",
        "used",
    )

    def __init__(self, start_ms: int, version: str, measures: int, set_queries: int) -> None:
        self.start_ms = start_ms
        self.evaluation_set_version = version
        self.evaluation_set_queries = set_queries
        self.row_of = np.full(_INITIAL_ROWS, -1, dtype=np.intp)  # cell id -> row, -1: none
        self.cells = np.zeros(_INITIAL_ROWS, dtype=np.intp)  # row -> cell id
        self.sums: Matrix = np.zeros((_INITIAL_ROWS, measures))
        self.counts = np.zeros(_INITIAL_ROWS, dtype=np.int64)
        self.failed = np.zeros(_INITIAL_ROWS, dtype=np.int64)  # a replay's failed queries
        self.used = 0  # rows given to cells (a dropped cell keeps its row)

    def add(
        self, cells: Indices, values: Matrix, failed: npt.NDArray[np.bool_] | None = None
    ) -> None:
        """Add each event's measure vector (a row of `values`) to its cell, in order; a row
        marked in `failed` (a replay's failed query) only counts as its cell's failure.

        np.add.at adds event by event, so a cell's sum is the same float however the stream
        was cut into polls: a replay after a crash reproduces published values bit for bit.
        """
        rows = self._rows(cells)
        if failed is not None and failed.any():
            np.add.at(self.failed, rows[failed], 1)
            rows, values = rows[~failed], values[~failed]
        np.add.at(self.sums, rows, values)
        np.add.at(self.counts, rows, 1)

    def _rows(self, cells: Indices) -> Indices:
        if cells.max() >= len(self.row_of):
            grown = np.full(2 * int(cells.max()) + 1, -1, dtype=np.intp)
            grown[: len(self.row_of)] = self.row_of
            self.row_of = grown
        rows = self.row_of[cells]
        if (rows < 0).any():
            used = self.used
            new = np.unique(cells[rows < 0])
            self.used += len(new)
            self._reserve(used + len(new))
            self.row_of[new] = np.arange(used, used + len(new))
            self.cells[used : used + len(new)] = new
            rows = self.row_of[cells]
        return rows

    def _reserve(self, rows: int) -> None:
        if rows > len(self.counts):
            size = max(rows, 2 * len(self.counts))
            more = size - len(self.counts)
            self.sums = np.concatenate([self.sums, np.zeros((more, self.sums.shape[1]))])
            self.counts = np.concatenate([self.counts, np.zeros(more, np.int64)])
            self.failed = np.concatenate([self.failed, np.zeros(more, np.int64)])
            self.cells = np.concatenate([self.cells, np.zeros(more, np.intp)])

    def drop_cells(self, cells: Indices) -> None:
        """Forget what these cells added (a revoked partition's share)."""
        rows = self.row_of[cells[cells < len(self.row_of)]]
        rows = rows[rows >= 0]
        self.sums[rows] = 0.0
        self.counts[rows] = 0
        self.failed[rows] = 0

    def _held(self) -> Indices:
        """The rows of cells holding an event or a failure."""
        return np.flatnonzero((self.counts > 0) | (self.failed > 0))

    @property
    def empty(self) -> bool:
        """Whether no cell holds an event or a failure."""
        return not (self.counts.any() or self.failed.any())

    def raw_segments(self, registry: CellRegistry) -> set[Segment]:
        """The raw segments of the events and failures this window holds."""
        held = self._held()
        return {registry.keys[cell][1] for cell in self.cells[held].tolist()}

    def summaries(
        self,
        spec: WindowSpec,
        measure_keys: Sequence[str],
        registry: CellRegistry,
        labels: Mapping[Segment, Segment] | None = None,
        segment_labels: Mapping[str, Any] | None = None,
    ) -> list[tuple[WindowSummary, frozenset[int]]]:
        """One summary per segment label (`labels`: raw segment -> label; default: the raw
        segment itself), labels in sorted order, with the partitions each holds.
        `segment_labels`: the label state the summaries carry."""
        by_segment: dict[Segment, dict[str, list[int]]] = {}
        partitions: dict[Segment, set[int]] = {}
        held = self._held()
        # Sorted cells: a query on several partitions (or raw segments) is merged in the same
        # order every run.
        cells = []
        keys = [registry.keys[cell] for cell in self.cells[held]]
        for (query, raw, partition), row in zip(keys, held.tolist(), strict=True):
            label = raw if labels is None else labels[raw]
            cells.append((label, query, raw, partition, row))
        for label, query, _, partition, row in sorted(cells):
            by_segment.setdefault(label, {}).setdefault(query, []).append(row)
            partitions.setdefault(label, set()).add(partition)
        return [
            (
                self._summary(spec, measure_keys, segment, by_segment[segment], segment_labels),
                frozenset(partitions[segment]),
            )
            for segment in sorted(by_segment)
        ]

    def _summary(
        self,
        spec: WindowSpec,
        measure_keys: Sequence[str],
        segment: Segment,
        rows_by_query: dict[str, list[int]],
        segment_labels: Mapping[str, Any] | None,
    ) -> WindowSummary:
        ranked = {q: rows for q, rows in rows_by_query.items() if self.counts[rows].sum()}
        failed = len(rows_by_query) - len(ranked)
        queries = sorted(ranked)
        # No query at all when every one failed (a replay the ranker did not answer): the
        # sums are 0 and the means 0 / 0, NaN.
        sums = np.zeros((0, len(measure_keys)))
        if queries:
            sums = np.stack([self.sums[ranked[q]].sum(axis=0) for q in queries])
        counts = np.array([self.counts[ranked[q]].sum() for q in queries], dtype=np.float64)
        query_means = sums / counts[:, None]
        defined = ~np.isnan(query_means)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_sums = np.where(defined, query_means, 0.0).sum(axis=0)
            squares = np.where(defined, query_means * query_means, 0.0).sum(axis=0)
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
            hop_ms=spec.hop_ms if spec.sliding else 0,
            segment_labels=segment_labels or {},
            squares=dict(zip(keys, squares.tolist(), strict=True)),
            failed_queries=failed,
        )
