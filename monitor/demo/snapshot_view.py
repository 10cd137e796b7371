"""The monitor's snapshot as the demo's view shows it (`MonitorSnapshot` -> `DemoState`)."""

from __future__ import annotations

import math

from monitor.demo.live_view import AlertView, DemoState
from monitor.service import MonitorSnapshot
from monitor.windows.summary import segment_label

__all__ = ["demo_state"]


def demo_state(
    snapshot: MonitorSnapshot, measure: str, metrics_url: str, elapsed_s: float
) -> DemoState:
    """Windows keyed by segment label, outcome totals, and the pending or firing alerts.

    An alert's value is the measure in the last window that gave it evidence (NaN before).
    """
    alerts = [
        AlertView(
            name=alert.rule.name,
            segment=segment_label(alert.segment),
            state=str(alert.status),
            value=alert.verdict.value if alert.verdict is not None else math.nan,
        )
        for alert in snapshot.alerts
    ]
    return DemoState(
        measure=measure,
        metrics_url=metrics_url,
        elapsed_s=elapsed_s,
        windows={segment_label(seg): list(ws) for seg, ws in snapshot.history.items()},
        outcomes=dict(snapshot.outcomes),
        alerts=alerts,
    )
