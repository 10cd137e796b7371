"""`ExplainStore`: the newest finalized windows of each segment, kept for the explanations.

Each kept window holds its summary without the per-query dictionaries, and the per-query
means as one float64 matrix (queries x measures): 300 queries x 17 measures weigh 41 KB
instead of the ~500 KB of the summary's nested dictionaries. At most `keep` windows per
segment (the oldest leave first), for at most `segments` segments (a retired segment
leaves). Written by the poll loop at each finalize, read by the HTTP thread: a lock.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
import numpy.typing as npt

from monitor.windows.summary import Segment, WindowSummary, standard_error

__all__ = ["ExplainStore", "KeptWindow", "VersionBridge"]


class VersionBridge(Protocol):
    """A kept window's per-query values re-scored from its evaluation-set version to another
    (the judging loop's versions: `monitor.judging.rescore.JudgedRescore`), so a window is
    explained against the baseline its alert used, across versions."""

    def bridges(self, old: str, new: str, measure: str) -> bool:
        """Whether windows of version `old` can be re-scored to `new` in `measure`."""
        ...

    def rescored(
        self,
        segment: Segment,
        start_ms: int,
        values: Mapping[str, float],
        measure: str,
        *,
        old: str,
        new: str,
    ) -> Mapping[str, float] | None:
        """The values re-scored (None: they cannot be)."""
        ...


@dataclass(frozen=True)
class KeptWindow:
    """One finalized window of one segment, as the explanations read it."""

    summary: WindowSummary  # without query_means
    queries: tuple[str, ...]
    measures: tuple[str, ...]
    values: npt.NDArray[np.float64]  # queries x measures, NaN: no value
    # Each measure's standard error, once computed: the page, which reloads itself, reads
    # every kept window's at each render.
    _stderrs: dict[str, float] = field(default_factory=dict, compare=False, repr=False)
    # The headline corrected by the judging loop's audit (`monitor.judging.correction`):
    # `measure`, `estimate`, `lower`, `upper`, `audited`; empty: none.
    corrected: dict[str, float | str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, summary: WindowSummary, measures: Sequence[str]) -> KeptWindow:
        queries = tuple(sorted(summary.query_means))
        values = np.array(
            [[summary.query_means[q].get(m, math.nan) for m in measures] for q in queries],
            dtype=np.float64,
        ).reshape(len(queries), len(measures))
        return cls(replace(summary, query_means={}), queries, tuple(measures), values)

    def query_values(self, measure: str) -> dict[str, float]:
        """Each query's mean of `measure` (queries without a value left out)."""
        if measure not in self.measures:
            return {}
        column = self.values[:, self.measures.index(measure)]
        return {
            q: float(v)
            for q, v in zip(self.queries, column.tolist(), strict=True)
            if math.isfinite(v)
        }

    def stderr(self, measure: str) -> float:
        """The standard error of the window's mean of `measure` over its queries."""
        known = self._stderrs.get(measure)
        if known is None:
            values = list(self.query_values(measure).values())
            known = standard_error(math.fsum(values), math.fsum(v * v for v in values), len(values))
            self._stderrs[measure] = known
        return known


class ExplainStore:
    """The newest `keep` finalized windows per segment (module docstring)."""

    def __init__(self, measures: Sequence[str], keep: int = 12, segments: int = 1000) -> None:
        self.measures = tuple(measures)
        self.keep = keep
        self.max_segments = segments
        self._windows: dict[Segment, deque[KeptWindow]] = {}
        self._lock = threading.Lock()

    def add(self, summary: WindowSummary) -> None:
        """A finalized window (a newer share of a kept window replaces it)."""
        kept = KeptWindow.of(summary, self.measures)
        with self._lock:
            windows = self._windows.get(summary.segment)
            if windows is None:
                if len(self._windows) >= self.max_segments:
                    return
                windows = self._windows[summary.segment] = deque(maxlen=self.keep)
            for index, old in enumerate(windows):
                if (
                    old.summary.start_ms == summary.start_ms
                    and old.summary.window == summary.window
                ):
                    windows[index] = kept
                    return
            windows.append(kept)

    def correct(
        self, segment: Segment, start_ms: int, measure: str, values: Mapping[str, float]
    ) -> None:
        """Note the kept window's `measure` corrected by the judge's audit (values as
        `JudgingLoop.correct` gives them)."""
        with self._lock:
            for kept in self._windows.get(segment, ()):
                if kept.summary.start_ms == start_ms:
                    kept.corrected.clear()
                    kept.corrected.update(values)
                    kept.corrected["measure"] = measure

    def retire(self, segment: Segment) -> None:
        with self._lock:
            self._windows.pop(segment, None)

    def segments(self) -> dict[Segment, list[KeptWindow]]:
        """Every segment's kept windows, oldest first."""
        with self._lock:
            return {segment: list(windows) for segment, windows in self._windows.items()}

    def windows(self, segment: Segment) -> list[KeptWindow]:
        """The segment's kept windows, oldest first."""
        with self._lock:
            return list(self._windows.get(segment, ()))

    def find(self, segment: Segment, start_ms: int) -> KeptWindow | None:
        for kept in self.windows(segment):
            if kept.summary.start_ms == start_ms:
                return kept
        return None

    def oldest_start(self, segment: Segment) -> int | None:
        kept = self.windows(segment)
        return kept[0].summary.start_ms if kept else None

    def oldest_kept_start(self) -> int | None:
        """The start of the oldest window kept of any segment (None: none kept)."""
        with self._lock:
            starts = [w[0].summary.start_ms for w in self._windows.values() if w]
        return min(starts, default=None)

    def baseline(
        self,
        segment: Segment,
        start_ms: int,
        measure: str,
        span: int,
        bridge: VersionBridge | None = None,
    ) -> tuple[dict[str, float], list[KeptWindow]]:
        """Each query's mean of `measure` over the (up to) `span` kept windows before
        `start_ms` of the same evaluation-set version, or of one `bridge` re-scores to it
        (as the drop rules' baselines are), and those windows."""
        version = self._version_of(segment, start_ms)
        sums: dict[str, list[float]] = {}
        used = []
        for window in self._earlier(segment, start_ms, version, bridge, measure)[-span:]:
            values: Mapping[str, float] | None = window.query_values(measure)
            old = window.summary.evaluation_set_version
            if bridge is not None and version is not None and old != version:
                values = bridge.rescored(
                    segment, window.summary.start_ms, values or {}, measure, old=old, new=version
                )
            if values is None:
                continue
            used.append(window)
            for query, value in values.items():
                sums.setdefault(query, []).append(value)
        return {q: math.fsum(v) / len(v) for q, v in sums.items()}, used

    def has_baseline(
        self,
        segment: Segment,
        start_ms: int,
        measure: str,
        bridge: VersionBridge | None = None,
    ) -> bool:
        """Whether the window is kept with a kept window before it that `baseline` takes."""
        version = self._version_of(segment, start_ms)
        earlier = self._earlier(segment, start_ms, version, bridge, measure)
        return version is not None and bool(earlier)

    def _version_of(self, segment: Segment, start_ms: int) -> str | None:
        current = self.find(segment, start_ms)
        return None if current is None else current.summary.evaluation_set_version

    def _earlier(
        self,
        segment: Segment,
        start_ms: int,
        version: str | None,
        bridge: VersionBridge | None,
        measure: str,
    ) -> list[KeptWindow]:
        """The kept windows before `start_ms` of `version`, or re-scorable to it."""
        return [
            w
            for w in self.windows(segment)
            if w.summary.end_ms <= start_ms
            and (
                version is None
                or w.summary.evaluation_set_version == version
                or (
                    bridge is not None
                    and bridge.bridges(w.summary.evaluation_set_version, version, measure)
                )
            )
        ]
