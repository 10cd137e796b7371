"""The replayer's own metrics (`replay.metrics_port`): replays and queries by outcome, when
the last replay of each result ended, the last success, the last duration, and the ranker's
latency per query."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from monitor.replay.ranker import OUTCOMES
from monitor.replay.runner import ReplayReport

__all__ = ["REPLAY_SERIES", "ReplayMetrics"]

# Every name the replayer's /metrics carries (the dashboards may query these).
REPLAY_SERIES: Final = frozenset(
    {
        "rankmon_replays_total",
        "rankmon_replay_queries_total",
        "rankmon_replay_missed_total",
        "rankmon_replay_last_success_timestamp_seconds",
        "rankmon_replay_last_timestamp_seconds",
        "rankmon_replay_duration_seconds",
        "rankmon_replay_ranker_latency_seconds_bucket",
        "rankmon_replay_ranker_latency_seconds_sum",
        "rankmon_replay_ranker_latency_seconds_count",
    }
)

# Seconds: a search API answers in milliseconds to a few seconds.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ReplayMetrics:
    """Series of `registry`, updated after each replay (`record`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.replays = Counter(
            "rankmon_replays",
            "Replays by result: complete (every query ranked), partial, failed (none), or "
            "aborted (the circuit breaker ended it: the ranker failed queries in a row).",
            ["result"],
            registry=registry,
        )
        self.queries = Counter(
            "rankmon_replay_queries",
            "Replayed queries by outcome (ranked, error, timeout).",
            ["outcome"],
            registry=registry,
        )
        self.missed = Counter(
            "rankmon_replay_missed",
            "Scheduled replays skipped: not started within replay.schedule.misfire_grace, or "
            "the previous replay still running.",
            registry=registry,
        )
        self.last_success = Gauge(
            "rankmon_replay_last_success_timestamp_seconds",
            "When the last replay with every query ranked ended (Unix time).",
            registry=registry,
        )
        self.last = Gauge(
            "rankmon_replay_last_timestamp_seconds",
            "When the last replay of each result ended (Unix time): alert on the newest of "
            'result=~"complete|partial" for a replayer that ranks nothing any more.',
            ["result"],
            registry=registry,
        )
        self.duration = Gauge(
            "rankmon_replay_duration_seconds",
            "How long the last replay took, first request to end marker.",
            registry=registry,
        )
        self.latency = Histogram(
            "rankmon_replay_ranker_latency_seconds",
            "The ranker's answer time per query (last attempt).",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        for result in ("complete", "partial", "failed", "aborted"):
            self.replays.labels(result)
        for outcome in OUTCOMES:
            self.queries.labels(outcome)

    def record(self, report: ReplayReport) -> None:
        self.replays.labels(report.result).inc()
        for outcome, count in report.outcomes.items():
            self.queries.labels(outcome).inc(count)
        for latency in report.latencies_s:
            self.latency.observe(latency)
        self.duration.set((report.ended_ms - report.started_ms) / 1000)
        self.last.labels(report.result).set(report.ended_ms / 1000)
        if report.result == "complete":
            self.last_success.set(report.ended_ms / 1000)
