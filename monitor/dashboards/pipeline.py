"""The pipeline dashboard: is rankmon itself healthy and keeping up?

Events by outcome and the dead-letter rate (bad input), watermark delay and consumer lag
(keeping up), the broker connection, alert delivery, and the instances running.
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


def pipeline_dashboard() -> Dashboard:
    """The pipeline dashboard; it does not depend on the config."""
    instance = Variable(
        "instance",
        "Instance",
        "query",
        "label_values(rankmon_build_info, instance)",
        multi=True,
        include_all=True,
        default=ALL,
    )
    return Dashboard(
        uid=PIPELINE_UID,
        title="rankmon: pipeline",
        description="rankmon's own health: input by outcome, dead letters, lag, delivery.",
        rows=(_input_row(), _progress_row(), _health_row()),
        variables=(datasource_variable(), instance),
    )


def _input_row() -> Row:
    total = f"sum(rate(rankmon_events_total{{{_ON}}}{_RATE}))"
    rejected = f'sum(rate(rankmon_events_total{{{_ON},outcome!="accepted"}}{_RATE}))'
    by_outcome = f"sum by (outcome) (rate(rankmon_events_total{{{_ON}}}{_RATE}))"
    by_reason = (
        f'sum by (outcome, reason) (rate(rankmon_events_total{{{_ON},outcome!="accepted"}}{_RATE}))'
    )
    return Row(
        "Input",
        (
            Panel(
                "timeseries",
                "Events by outcome",
                (Query(by_outcome, "{{outcome}}"),),
                "Every record read, by what became of it.",
                "ops",
                8,
                stacked=True,
            ),
            # Every record not accepted goes to the dead-letter topic with its reason.
            Panel(
                "timeseries",
                "Dead-letter rate",
                (Query(f"{rejected} / {total}", "rejected"),),
                "Share of records sent to the dead-letter topic.",
                "percentunit",
                8,
            ),
            Panel(
                "timeseries",
                "Dead letters by reason",
                (Query(by_reason, "{{outcome}} {{reason}}"),),
                unit="ops",
                width=8,
                stacked=True,
            ),
        ),
    )


def _progress_row() -> Row:
    watermark = (
        f"time() - max by (instance, partition) (rankmon_watermark_timestamp_seconds{{{_ON}}})"
    )
    lag = f"max by (instance, partition) (rankmon_consumer_lag_records{{{_ON}}})"
    finalized = f"time() - max by (instance) (rankmon_window_end_timestamp_seconds{{{_ON}}})"
    return Row(
        "Keeping up",
        (
            Panel(
                "timeseries",
                "Watermark delay",
                (Query(watermark, "{{instance}} p{{partition}}"),),
                "Wall clock minus each partition's event-time watermark.",
                "s",
                8,
            ),
            Panel(
                "timeseries",
                "Consumer lag",
                (Query(lag, "{{instance}} p{{partition}}"),),
                "Records behind the end of each partition.",
                width=8,
            ),
            Panel(
                "timeseries",
                "Age of the latest finalized window",
                (Query(finalized, "{{instance}}"),),
                "Wall clock minus the end of the newest finalized window.",
                "s",
                8,
            ),
        ),
    )


def _health_row() -> Row:
    broker = Query(f"min(rankmon_broker_up{{{_ON}}})", "broker up", instant=True)
    ready = Query(f"sum(rankmon_ready{{{_ON}}})", "ready", instant=True)
    versions = Query(f"count by (version) (rankmon_build_info{{{_ON}}})", instant=True, table=True)
    deliveries = f"sum by (sink, result) (rate(rankmon_alert_deliveries_total{{{_ON}}}{_RATE}))"
    return Row(
        "Health",
        (
            Panel(
                "stat",
                "Broker connection",
                (broker,),
                "1 when every instance reaches Kafka.",
                width=6,
                height=6,
                thresholds=(Step(None, "red"), Step(1, "green")),
            ),
            Panel(
                "stat",
                "Instances ready",
                (ready,),
                "Instances whose /readyz holds: evaluation set loaded, group joined, broker up.",
                width=6,
                height=6,
            ),
            Panel("table", "Instances by version", (versions,), width=6, height=6),
            Panel(
                "timeseries",
                "Alert deliveries",
                (Query(deliveries, "{{sink}} {{result}}"),),
                "Alert notifications sent, by sink and result.",
                "ops",
                6,
                6,
            ),
        ),
    )
