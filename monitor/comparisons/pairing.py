"""Pairing one window's summaries into per-unit differences for one comparison.

A unit is a query together with the values of the segment keys the comparison's filters do
not fix (none of them, usually: the unit is the query). A window's summaries are one per
segment; the baseline side is every summary whose segment matches the baseline filter, the
candidate side likewise. A unit is common when both sides have a finite value of the
measure for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from monitor.comparisons.settings import ComparisonConfig
from monitor.scoring.catalog import MeasureKey
from monitor.windows.summary import Segment, WindowSummary, segment_label

__all__ = ["Pairing", "matches", "pair_window", "unit_key"]

Unit = tuple[Segment, str]  # (the segment values not fixed by the filters, query id)


def matches(segment: Segment, segment_filter: Segment) -> bool:
    """Whether the segment carries every key = value of the filter."""
    return set(segment_filter) <= set(segment)


@dataclass(frozen=True)
class Pairing:
    """The common units' differences (candidate - baseline) and what the floors look at."""

    differences: npt.NDArray[np.float64]
    units: tuple[str, ...]  # the common units, in the order of `differences` (`unit_key`)
    baseline_mean: float
    candidate_mean: float
    coverage: float  # the smaller side's queries / evaluation-set queries
    judged: float  # the smaller side's mean judged@k (NaN when not computed)
    version: str


def unit_key(unit: Unit) -> str:
    """A unit as text: its query id, after the unfixed segment values when there are any."""
    rest, query = unit
    return f"{segment_label(rest)}/{query}" if rest else query


def _side(summaries: Iterable[WindowSummary], segment_filter: Segment) -> list[WindowSummary]:
    return [s for s in summaries if matches(s.segment, segment_filter)]


def _values(
    side: Sequence[WindowSummary], measure: str, fixed: frozenset[str]
) -> dict[Unit, float]:
    values: dict[Unit, float] = {}
    for summary in side:
        rest = tuple((k, v) for k, v in summary.segment if k not in fixed)
        for query, means in summary.query_means.items():
            value = means.get(measure, math.nan)
            if math.isfinite(value):
                values[(rest, query)] = value
    return values


def _coverage(side: Sequence[WindowSummary]) -> float:
    set_queries = max((s.evaluation_set_queries for s in side), default=0)
    queries = {q for s in side for q in s.query_means}
    return len(queries) / set_queries if set_queries else 0.0


def _judged(side: Sequence[WindowSummary], measure: str) -> float:
    k = MeasureKey.parse(measure).k
    if k is None:
        return math.nan
    key = f"judged@{k}"
    weighted = [
        (s.means[key], s.queries) for s in side if math.isfinite(s.means.get(key, math.nan))
    ]
    total = sum(n for _, n in weighted)
    return math.fsum(m * n for m, n in weighted) / total if total else math.nan


def pair_window(
    summaries: Sequence[WindowSummary], config: ComparisonConfig, measure: str
) -> Pairing | None:
    """The pairing of one window (all its summaries), None when either side is absent."""
    baseline, candidate = _side(summaries, config.baseline), _side(summaries, config.candidate)
    if not baseline or not candidate:
        return None
    fixed = config.paired_keys
    before, after = _values(baseline, measure, fixed), _values(candidate, measure, fixed)
    common = sorted(before.keys() & after.keys())
    differences = np.array([after[u] - before[u] for u in common], dtype=np.float64)
    judged = [_judged(baseline, measure), _judged(candidate, measure)]
    return Pairing(
        differences=differences,
        units=tuple(unit_key(u) for u in common),
        baseline_mean=math.fsum(before[u] for u in common) / len(common) if common else math.nan,
        candidate_mean=math.fsum(after[u] for u in common) / len(common) if common else math.nan,
        coverage=min(_coverage(baseline), _coverage(candidate)),
        judged=math.nan if any(math.isnan(j) for j in judged) else min(judged),
        version=candidate[0].evaluation_set_version,
    )
