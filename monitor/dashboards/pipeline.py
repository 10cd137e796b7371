"""The pipeline dashboard: is rankmon itself healthy and keeping up?

Events by outcome and the dead-letter rate (bad input), watermark delay and consumer lag
(keeping up), the broker connection, alert delivery, the instances running, and the replays
of `rankmon replay` (by result, since the last complete one, the ranker's latency, the
queries that failed).
"""

from __future__ import annotations

from typing import Final

from monitor.dashboards.model import ALL, Dashboard, Panel, Query, Row, Variable
from monitor.dashboards.model import ThresholdStep as Step
from monitor.dashboards.variables import datasource_variable

__all__ = ["PIPELINE_UID", "pipeline_dashboard"]

PIPELINE_UID: Final = "rankmon-pipeline"
_ON: Final = 'instance=~"$instance"'
_RATE: Final = "[$__rate_interval]"
_PARTITION: Final = "{{instance}} p{{partition}}"


_TOTAL: Final = f"sum(rate(rankmon_events_total{{{_ON}}}{_RATE}))"
# Neither accepted nor a replay's notice (a failed query, an end marker): dead-lettered.
_REJECTED: Final = f'rate(rankmon_events_total{{{_ON},outcome!~"accepted|replay_notice"}}{_RATE})'
_WATERMARK: Final = "rankmon_watermark_timestamp_seconds"

_INPUT: Final = Row(
    "Input",
    (
        Panel(
            "timeseries",
            "Events by outcome",
            (
                Query(
                    f"sum by (outcome) (rate(rankmon_events_total{{{_ON}}}{_RATE}))", "{{outcome}}"
                ),
            ),
            "Every record read, by what became of it.",
            "ops",
            8,
            stacked=True,
        ),
        # Every record not accepted goes to the dead-letter topic with its reason.
        Panel(
            "timeseries",
            "Dead-letter rate",
            (Query(f"sum({_REJECTED}) / {_TOTAL}", "rejected"),),
            "Share of records sent to the dead-letter topic.",
            "percentunit",
            8,
        ),
        Panel(
            "timeseries",
            "Dead letters by reason",
            (Query(f"sum by (outcome, reason) ({_REJECTED})", "{{outcome}} {{reason}}"),),
            unit="ops",
            width=8,
            stacked=True,
        ),
    ),
)

_KEEPING_UP: Final = Row(
    "Keeping up",
    (
        Panel(
            "timeseries",
            "Watermark delay",
            (Query(f"time() - max by (instance, partition) ({_WATERMARK}{{{_ON}}})", _PARTITION),),
            "Wall clock minus each partition's event-time watermark.",
            "s",
            8,
        ),
        Panel(
            "timeseries",
            "Consumer lag",
            (
                Query(
                    f"max by (instance, partition) (rankmon_consumer_lag_records{{{_ON}}})",
                    _PARTITION,
                ),
            ),
            "Records behind the end of each partition.",
            width=8,
        ),
        Panel(
            "timeseries",
            "Age of the latest finalized window",
            (
                Query(
                    f"time() - max by (instance) (rankmon_window_end_timestamp_seconds{{{_ON}}})",
                    "{{instance}}",
                ),
            ),
            "Wall clock minus the end of the newest finalized window.",
            "s",
            8,
        ),
    ),
)

_HEALTH: Final = Row(
    "Health",
    (
        Panel(
            "stat",
            "Broker connection",
            (Query(f"min(rankmon_broker_up{{{_ON}}})", "broker up", instant=True),),
            "1 when every instance reaches Kafka.",
            width=6,
            height=6,
            thresholds=(Step(None, "red"), Step(1, "green")),
        ),
        Panel(
            "stat",
            "Instances ready",
            (Query(f"sum(rankmon_ready{{{_ON}}})", "ready", instant=True),),
            "Instances whose /readyz holds: evaluation set loaded, group joined, broker up.",
            width=6,
            height=6,
        ),
        Panel(
            "table",
            "Instances by version",
            (Query(f"count by (version) (rankmon_build_info{{{_ON}}})", instant=True, table=True),),
            width=6,
            height=6,
        ),
        Panel(
            "timeseries",
            "Alert deliveries",
            (
                Query(
                    f"sum by (sink, result) (rate(rankmon_alert_deliveries_total{{{_ON}}}{_RATE}))",
                    "{{sink}} {{result}}",
                ),
            ),
            "Alert notifications sent, by sink and result.",
            "ops",
            6,
            6,
        ),
    ),
)


_REPLAYS: Final = Row(
    "Replays",
    (
        Panel(
            "timeseries",
            "Replays by result",
            (Query(f"sum by (result) (increase(rankmon_replays_total{_RATE}))", "{{result}}"),),
            "rankmon replay's replays: complete (every query ranked), partial, failed, "
            "aborted (the circuit breaker ended it).",
            width=6,
            height=6,
            stacked=True,
        ),
        Panel(
            "stat",
            "Since the last replay that ranked",
            (
                Query(
                    "time() - max(rankmon_replay_last_timestamp_seconds"
                    '{result=~"complete|partial"})',
                    "since",
                    instant=True,
                ),
            ),
            "Since the newest replay with a ranked query, complete or partial: alert when it "
            "passes two replay periods (a query that always fails keeps every replay partial).",
            "s",
            6,
            6,
        ),
        Panel(
            "timeseries",
            "Ranker latency",
            (
                Query(
                    "histogram_quantile(0.95, sum by (le) "
                    f"(rate(rankmon_replay_ranker_latency_seconds_bucket{_RATE})))",
                    "p95",
                ),
            ),
            "The ranker's answer time per replayed query, 95th percentile.",
            "s",
            6,
            6,
        ),
        Panel(
            "timeseries",
            "Failed replayed queries",
            (
                Query(
                    "sum(rate(rankmon_events_total{"
                    f'{_ON},outcome="replay_notice",reason="failed_query"}}{_RATE}))',
                    "failed",
                ),
            ),
            "Replayed queries the ranker did not answer, as the monitor read them.",
            "ops",
            6,
            6,
        ),
    ),
)


def pipeline_dashboard() -> Dashboard:
    """The pipeline dashboard; it does not depend on the config."""
    instances = "label_values(rankmon_build_info, instance)"
    return Dashboard(
        uid=PIPELINE_UID,
        title="rankmon: pipeline",
        description="rankmon's own health: input by outcome, dead letters, lag, delivery.",
        rows=(_INPUT, _KEEPING_UP, _HEALTH, _REPLAYS),
        variables=(
            datasource_variable(),
            Variable("instance", "Instance", "query", instances, True, True, ALL),
        ),
    )
