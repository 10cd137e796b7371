"""Simulated window streams for calibrating the alert conditions (tests and `bench/alerts.py`).

A fixed evaluation set of `queries` queries, each with its own true quality drawn uniformly
from [0.2, 0.95]. In each window a query is served Poisson(`events_per_query`) times (so some
queries are not seen); each event scores its query's quality plus Normal(0, `noise`), clipped
to [0, 1], which gives the lumpy, bounded per-query values real nDCG has. From window
`drop_at` on, every query's quality is multiplied by (1 - `drop`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from monitor.summary import Segment, WindowSummary

__all__ = ["StreamModel", "simulate_windows"]


@dataclass(frozen=True)
class StreamModel:
    """The knobs of a simulated stream."""

    queries: int = 200
    events_per_query: float = 3.0
    noise: float = 0.15
    measure: str = "ndcg@10:linear"
    window: str = "5m"
    window_ms: int = 300_000
    segment: Segment = ()


def simulate_windows(
    model: StreamModel,
    windows: int,
    *,
    seed: int,
    drop_at: int | None = None,
    drop: float = 0.0,
    start_ms: int = 1_700_000_000_000,
) -> list[WindowSummary]:
    """`windows` consecutive window summaries of one segment."""
    rng = np.random.default_rng(seed)
    quality = rng.uniform(0.2, 0.95, size=model.queries)
    summaries = []
    for index in range(windows):
        factor = 1.0 - drop if drop_at is not None and index >= drop_at else 1.0
        counts = rng.poisson(model.events_per_query, size=model.queries)
        query_means: dict[str, dict[str, float]] = {}
        for query in np.flatnonzero(counts):
            scores = quality[query] * factor + rng.normal(0.0, model.noise, counts[query])
            query_means[f"q{query}"] = {model.measure: float(np.clip(scores, 0.0, 1.0).mean())}
        summaries.append(_summary(model, start_ms + index * model.window_ms, query_means, counts))
    return summaries


def _summary(
    model: StreamModel,
    start_ms: int,
    query_means: dict[str, dict[str, float]],
    counts: np.ndarray,
) -> WindowSummary:
    values = [means[model.measure] for means in query_means.values()]
    total = float(sum(values))
    mean = total / len(values) if values else float("nan")
    return WindowSummary(
        window=model.window,
        start_ms=start_ms,
        end_ms=start_ms + model.window_ms,
        segment=model.segment,
        evaluation_set_version="simulated",
        events=int(counts.sum()),
        queries=len(values),
        evaluation_set_queries=model.queries,
        means={model.measure: mean},
        sums={model.measure: total},
        event_means={model.measure: mean},
        query_means=query_means,
    )
