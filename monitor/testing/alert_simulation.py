"""Simulated window streams for calibrating the alert conditions (tests and `bench/alerts.py`).

A fixed evaluation set of `queries` queries, each with its own true quality drawn uniformly
from [0.2, 0.95]. In each window a query is served Poisson(`events_per_query`) times (so some
queries are not seen); each event scores its query's quality plus Normal(0, `noise`), clipped
to [0, 1], which gives the lumpy, bounded per-query values real nDCG has. From window
`drop_at` on (until `recover_at`, if given), every query's quality is multiplied by
(1 - `drop`).

`drop_verdicts` runs a rule over such a stream as the engine would; `false_alarm_bound` is
the rate a calibrated test may show on a finite sample (the level plus two standard errors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from monitor.alerting.conditions import Verdict, WindowTrack, evaluate_window
from monitor.alerting.rules import AlertRule
from monitor.alerting.state import Evidence
from monitor.windows.summary import Segment, WindowSummary

__all__ = [
    "StreamModel",
    "drop_verdicts",
    "false_alarm_bound",
    "simulate_windows",
    "windows_to_detection",
]


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
    recover_at: int | None = None,
    start_ms: int = 1_700_000_000_000,
) -> list[WindowSummary]:
    """`windows` consecutive window summaries of one segment."""
    rng = np.random.default_rng(seed)
    quality = rng.uniform(0.2, 0.95, size=model.queries)
    summaries = []
    for index in range(windows):
        until = windows if recover_at is None else recover_at
        dropped = drop_at is not None and drop_at <= index < until
        factor = 1.0 - drop if dropped else 1.0
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


def drop_verdicts(
    rule: AlertRule,
    model: StreamModel,
    windows: int,
    *,
    seed: int,
    drop_at: int | None = None,
    drop: float = 0.0,
    recover_at: int | None = None,
) -> list[Verdict]:
    """The rule's verdict on each window of a simulated stream, each window entering the
    baseline after it was evaluated, as in the engine (and as there, a pinned drop rule
    takes only the windows at or above its level)."""
    track = WindowTrack.for_rule(rule)
    verdicts = []
    stream = simulate_windows(
        model, windows, seed=seed, drop_at=drop_at, drop=drop, recover_at=recover_at
    )
    for summary in stream:
        verdict = evaluate_window(rule, summary, track)
        track.remember(rule, summary)
        verdicts.append(verdict)
    return verdicts


def windows_to_detection(verdicts: list[Verdict], drop_at: int) -> int | None:
    """How many windows from `drop_at` on until the first bad one (1 = window `drop_at`)."""
    bad = [verdict.evidence is Evidence.BAD for verdict in verdicts[drop_at:]]
    return bad.index(True) + 1 if True in bad else None


def false_alarm_bound(level: float, windows: int) -> float:
    """The highest false-alarm rate over `windows` tested windows that still agrees with a
    test holding `level`: the level plus two binomial standard errors.

    The windows of one stream share baselines, so they are not quite independent: many short
    streams keep the sample closer to the binomial than a few long ones.
    """
    return level + 2.0 * math.sqrt(level * (1.0 - level) / windows)
