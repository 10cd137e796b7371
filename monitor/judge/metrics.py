"""The judge worker's own metrics (`judge.metrics_port`), read from its `JudgeReport` at each
scrape: pairs by outcome, failures by reason, requests and tokens spent, pairs waiting, the
to-judge partitions the group gave it, whether the hourly budget is spent, and when the last
batch ended."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor.judge.worker import JudgeReport

__all__ = ["JUDGE_SERIES", "JudgeCollector"]

# Every name the worker's /metrics carries (the docs' alerts and dashboards may query these).
JUDGE_SERIES: Final = frozenset(
    {
        "rankmon_judge_pairs_total",
        "rankmon_judge_failures_total",
        "rankmon_judge_requests_total",
        "rankmon_judge_tokens_total",
        "rankmon_judge_pairs_waiting",
        "rankmon_judge_partitions",
        "rankmon_judge_budget_spent",
        "rankmon_judge_last_batch_timestamp_seconds",
    }
)


class JudgeCollector(Collector):
    """The series of one worker's report (module docstring)."""

    def __init__(self, report: JudgeReport, source: str) -> None:
        self.report = report
        self.source = source

    def collect(self) -> Iterator[Metric]:
        report, source = self.report, self.source
        pairs = CounterMetricFamily(
            "rankmon_judge_pairs",
            "Pairs the worker asked about, by outcome (graded, refused, unparsable, error, "
            "unknown_query, unknown_document).",
            labels=["source", "outcome"],
        )
        for outcome, count in sorted(report.outcomes.items()):
            pairs.add_metric([source, outcome], count)
        yield pairs
        failures = CounterMetricFamily(
            "rankmon_judge_failures",
            "Pairs whose endpoint failed after its retries, by reason (http_429, timeout, ...).",
            labels=["source", "reason"],
        )
        for reason, count in sorted(report.reasons.items()):
            failures.add_metric([source, reason], count)
        yield failures
        for name, text, value in (
            ("requests", "Requests sent to the chat endpoint, retries included.", report.requests),
            ("tokens", "Tokens the chat endpoint counted, prompts and answers.", report.tokens),
        ):
            family = CounterMetricFamily(f"rankmon_judge_{name}", text, labels=["source"])
            family.add_metric([source], value)
            yield family
        for name, text, gauge in (
            ("pairs_waiting", "Pairs read and not yet asked about.", report.pending),
            ("partitions", "Partitions of the to-judge topic the group gave this worker.",
             report.partitions),
            ("budget_spent", "1 while the hourly request or token budget is spent.",
             float(report.budget_spent)),
            ("last_batch_timestamp_seconds", "When the last batch of judgments was written "
             "(Unix seconds; 0: none yet).", report.last_batch_s),
        ):  # fmt: skip
            family_gauge = GaugeMetricFamily(f"rankmon_judge_{name}", text, labels=["source"])
            family_gauge.add_metric([source], gauge)
            yield family_gauge
