"""Window summaries of disjoint queries (shares from the windows topic) merged into whole windows.

An instance owns a set of partitions, and each query lives on one partition, so the records
of one window and segment published by different owners (or for different partitions) hold
disjoint queries. Merged, they are the window as this instance would have seen it: the union
of the per-query means, the summed counts and sums, and means recomputed over the queries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from monitor.windows.summary import Segment, WindowSummary

__all__ = ["merge_window_shares"]

ShareKey = tuple[int, Segment, str]


def merge_window_shares(summaries: Iterable[WindowSummary]) -> list[WindowSummary]:
    """One summary per window, segment and evaluation-set version, oldest window first."""
    groups: dict[ShareKey, list[WindowSummary]] = {}
    for summary in summaries:
        key = (summary.start_ms, summary.segment, summary.evaluation_set_version)
        groups.setdefault(key, []).append(summary)
    merged = [shares[0] if len(shares) == 1 else _merge(shares) for shares in groups.values()]
    return sorted(merged, key=lambda s: (s.end_ms, s.segment))


def _merge(shares: Sequence[WindowSummary]) -> WindowSummary:
    first = shares[0]
    query_means = {q: m for share in shares for q, m in share.query_means.items()}
    if any(share.queries and not share.query_means for share in shares):
        # A share published without its per-query means (too large for one record): the
        # others' alone are part of the window; means come from the sums, no paired test.
        query_means = {}
    queries = sum(share.queries for share in shares)
    events = sum(share.events for share in shares)
    keys = {key for share in shares for key in share.sums}
    sums = {key: math.fsum(share.sums.get(key, 0.0) for share in shares) for key in keys}
    squares = {key: math.fsum(share.squares.get(key, math.nan) for share in shares) for key in keys}
    return WindowSummary(
        window=first.window,
        start_ms=first.start_ms,
        end_ms=first.end_ms,
        segment=first.segment,
        evaluation_set_version=first.evaluation_set_version,
        events=events,
        queries=queries,
        evaluation_set_queries=max(share.evaluation_set_queries for share in shares),
        means={key: _mean_over_queries(key, shares, query_means) for key in keys},
        sums=sums,
        event_means={key: _mean_over_events(key, shares) for key in keys},
        query_means=query_means,
        squares=squares if all(share.squares for share in shares) else {},
        failed_queries=sum(share.failed_queries for share in shares),
        replays=tuple(dict.fromkeys(r for share in shares for r in share.replays)),
        stopped_replays=tuple(dict.fromkeys(r for share in shares for r in share.stopped_replays)),
    )


def _mean_over_queries(
    key: str, shares: Sequence[WindowSummary], query_means: Mapping[str, Mapping[str, float]]
) -> float:
    # From the per-query means when they are there: a measure may leave some queries out
    # (IDCG = 0 excluded), so `sums / queries` would be wrong for it.
    values = [m[key] for m in query_means.values() if key in m and not math.isnan(m[key])]
    if values:
        return math.fsum(values) / len(values)
    queries = sum(share.queries for share in shares)
    return (
        math.fsum(share.sums.get(key, 0.0) for share in shares) / queries if queries else math.nan
    )


def _mean_over_events(key: str, shares: Sequence[WindowSummary]) -> float:
    weighted = [
        (share.event_means[key], share.events)
        for share in shares
        if key in share.event_means and not math.isnan(share.event_means[key])
    ]
    total = sum(events for _, events in weighted)
    return math.fsum(mean * events for mean, events in weighted) / total if total else math.nan
