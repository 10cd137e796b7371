"""`WindowSummary`: what one finalized window says about one segment.

It is the contract between the stages after a window closes: the exporter sets its gauges from
it, the publisher writes it as one JSON record to the windows topic (keyed by window and
segment), the alerting stage tests it against baselines, and on start the monitor reads the
records back to restore baselines and to skip windows already published.

Measure keys are those of `monitor.scoring.catalog` (`ndcg@10:linear`, `precision@5`, `mrr`, ...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "SUMMARY_SCHEMA_VERSION",
    "Segment",
    "WindowSummary",
    "segment_label",
    "standard_error",
]

SUMMARY_SCHEMA_VERSION = 1

# A segment is the sorted tuple of (key, value) pairs of the configured segment keys.
Segment = tuple[tuple[str, str], ...]


def segment_label(segment: Segment) -> str:
    """A stable, readable form of a segment: `model=v42,market=de` (empty: `all`)."""
    return ",".join(f"{key}={value}" for key, value in segment) or "all"


@dataclass(frozen=True)
class WindowSummary:
    """One finalized window of one segment.

    `query_means[qid][key]` is the mean of the query's events in the window; `means[key]` is
    the mean of those over queries (the headline), `sums[key]` their sum and `squares[key]`
    the sum of their squares (both mergeable across instances with `queries`: the merged
    standard error, `stderr`), `event_means[key]` the mean over events.

    `failed_queries` counts the queries a replay asked and the ranker did not answer (its
    failed-query records, `monitor.replay.events`) that have no ranking in the window: they
    are not among `queries`, so they lower the coverage, and `failure_share` is their share
    of the queries asked. Live traffic has none. `replays` names the replays the window holds,
    `stopped_replays` those of them a stop (SIGTERM, SIGINT) ended before every query was
    asked: the window then measures a part of the set, not the ranker (`stopped`).
    """

    window: str  # the configured size as written, e.g. "5m"
    start_ms: int  # inclusive, epoch milliseconds
    end_ms: int  # exclusive
    segment: Segment
    evaluation_set_version: str
    events: int
    queries: int
    evaluation_set_queries: int
    means: Mapping[str, float]
    sums: Mapping[str, float]
    event_means: Mapping[str, float]
    query_means: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    hop_ms: int = 0  # the window spec's hop (0: tumbling, the window's own length)
    # The segment labels admitted after this window (`monitor.windows.segments.LabelState.to_json`):
    # a restart continues from them, a replay labels this window's events by them.
    segment_labels: Mapping[str, Any] = field(default_factory=dict)
    # sum over queries of the squared query means (absent in records of rankmon < 0.6:
    # then computed from `query_means`)
    squares: Mapping[str, float] = field(default_factory=dict)
    failed_queries: int = 0
    # The `rankmon replay` replays the window holds, by replay_id (oldest first); none for
    # live traffic (`monitor.windows.replay_ends.ReplayEnds.replays_in`).
    replays: tuple[str, ...] = ()
    stopped_replays: tuple[str, ...] = ()

    @property
    def stopped(self) -> bool:
        """Whether every replay the window holds was stopped before it ended (none: False)."""
        return bool(self.replays) and set(self.replays) <= set(self.stopped_replays)

    @property
    def failure_share(self) -> float:
        """Failed queries / queries asked (ranked or failed); 0 without a replay's failures."""
        asked = self.queries + self.failed_queries
        return self.failed_queries / asked if asked else 0.0

    def defined_queries(self, key: str) -> int:
        """The queries with a value of `key` (all of them unless the measure leaves some out,
        e.g. IDCG = 0 under `idcg_zero: exclude`)."""
        if not self.query_means:
            return self.queries
        return sum(1 for m in self.query_means.values() if math.isfinite(m.get(key, math.nan)))

    def stderr(self, key: str) -> float:
        """The standard error of the headline mean of `key`: sd over queries / sqrt(n), from
        the sums and squares (NaN with fewer than 2 queries)."""
        n = self.defined_queries(key)
        squares = self.squares.get(key, math.nan) if self.squares else _squares(self, key)
        return standard_error(self.sums.get(key, math.nan), squares, n)

    @property
    def hop(self) -> int:
        """The spacing of window starts of the spec this window belongs to."""
        return self.hop_ms or self.end_ms - self.start_ms

    @property
    def coverage(self) -> float:
        """Share of the evaluation set's queries seen in the window."""
        if self.evaluation_set_queries == 0:
            return 0.0
        return self.queries / self.evaluation_set_queries

    @property
    def key(self) -> str:
        """The Kafka record key: window start and segment, unique per published record."""
        return f"{self.window}/{self.start_ms}/{segment_label(self.segment)}"

    def to_json(self) -> bytes:
        """The windows-topic record value."""
        extra: dict[str, Any] = {}
        if self.hop_ms:
            extra["hop_ms"] = self.hop_ms
        if self.segment_labels:
            extra["segment_labels"] = self.segment_labels
        if self.failed_queries:
            extra["failed_queries"] = self.failed_queries
        if self.replays:
            extra["replays"] = list(self.replays)
        if self.stopped_replays:
            extra["stopped_replays"] = list(self.stopped_replays)
        return orjson.dumps(
            {
                **extra,
                "schema_version": SUMMARY_SCHEMA_VERSION,
                "window": self.window,
                "start_ms": self.start_ms,
                "end_ms": self.end_ms,
                "segment": dict(self.segment),
                "evaluation_set_version": self.evaluation_set_version,
                "events": self.events,
                "queries": self.queries,
                "evaluation_set_queries": self.evaluation_set_queries,
                "coverage": self.coverage,
                "means": _finite(self.means),
                "sums": _finite(self.sums),
                "event_means": _finite(self.event_means),
                "query_means": {q: _finite(m) for q, m in self.query_means.items()},
                "squares": _finite(self.squares),
            },
            option=orjson.OPT_SORT_KEYS,
        )

    @classmethod
    def from_json(cls, data: bytes) -> WindowSummary:
        """Parse a windows-topic record value; raises `ValueError` if it is not one."""
        try:
            raw: Any = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise ValueError(f"malformed window summary: {error}") from error
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: Any) -> WindowSummary:
        """`from_json` on an already parsed value."""
        try:
            if not isinstance(raw, dict) or raw.get("schema_version") != SUMMARY_SCHEMA_VERSION:
                raise ValueError("not a rankmon window summary (schema_version 1)")
            return cls(
                window=str(raw["window"]),
                start_ms=int(raw["start_ms"]),
                end_ms=int(raw["end_ms"]),
                segment=tuple(sorted((str(k), str(v)) for k, v in raw["segment"].items())),
                evaluation_set_version=str(raw["evaluation_set_version"]),
                events=int(raw["events"]),
                queries=int(raw["queries"]),
                evaluation_set_queries=int(raw["evaluation_set_queries"]),
                means=_floats(raw["means"]),
                sums=_floats(raw["sums"]),
                event_means=_floats(raw["event_means"]),
                query_means={str(q): _floats(m) for q, m in raw["query_means"].items()},
                hop_ms=int(raw.get("hop_ms", 0)),
                segment_labels=dict(raw.get("segment_labels") or {}),
                squares=_floats(raw.get("squares") or {}),
                failed_queries=int(raw.get("failed_queries", 0)),
                replays=tuple(str(r) for r in raw.get("replays") or ()),
                stopped_replays=tuple(str(r) for r in raw.get("stopped_replays") or ()),
            )
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"malformed window summary: {error}") from error


def standard_error(total: float, squares: float, n: int) -> float:
    """sd / sqrt(n) of n values from their sum and sum of squares (sd with n - 1)."""
    if n < 2 or not (math.isfinite(total) and math.isfinite(squares)):
        return math.nan
    variance = max(0.0, (squares - total * total / n) / (n - 1))
    return math.sqrt(variance / n)


def _squares(summary: WindowSummary, key: str) -> float:
    values = (m.get(key, math.nan) for m in summary.query_means.values())
    return math.fsum(v * v for v in values if math.isfinite(v)) if summary.query_means else math.nan


def _finite(values: Mapping[str, float]) -> dict[str, float | None]:
    # JSON has no NaN: a measure with no defined value (e.g. every IDCG was 0 and the
    # configured policy excludes such queries) is written as null.
    return {k: (v if math.isfinite(v) else None) for k, v in values.items()}


def _floats(values: Mapping[str, Any]) -> dict[str, float]:
    # A share holds ~5,000 of these: copy in C (JSON keys are strings, numbers are floats or
    # ints, which compute alike), convert one by one only where a null stands for NaN.
    copied = dict(values)
    if not set(map(type, copied.values())) <= _NUMBERS:
        return {str(k): (math.nan if v is None else float(v)) for k, v in values.items()}
    return copied


_NUMBERS = frozenset({float, int})
