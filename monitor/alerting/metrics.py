"""The alerting stage's two metrics, reported through `AlertSignals`.

- `rankmon_alert_firing{alert,severity,<segment keys>}`: 1 while the rule fires in that
  segment, 0 once it has been evaluated there and is not firing;
- `rankmon_alert_firings_total{alert,severity,<segment keys>}`: each time the rule started
  firing there, also when it resolved within the same tick (a backlog of windows), which the
  gauge cannot show;
- `rankmon_alert_deliveries_total{sink,result}`: alert notifications handed to a sink, one per
  alert, by result: `delivered`, `failed` (the attempt failed and will be retried), `dropped`
  (the bounded queue was full and the notification was given up).

The service passes its `monitor.exporter.Exporter`, which owns these series on the shared
registry (`set_alert_firing`, `count_alert_delivery`); `register_alert_metrics` makes the same
two series on a registry of their own, for tools and tests that run alerting without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from monitor.summary import Segment

__all__ = ["AlertMetrics", "AlertSignals", "register_alert_metrics"]


class AlertSignals(Protocol):
    """Where the engine and delivery report; `monitor.exporter.Exporter` is one."""

    def set_alert_firing(
        self, alert: str, severity: str, segment: Segment, firing: bool
    ) -> None: ...

    def count_alert_firing(self, alert: str, severity: str, segment: Segment) -> None: ...

    def count_alert_delivery(self, sink: str, result: str) -> None: ...


class AlertMetrics:
    """The two series on a registry passed in (never the global one)."""

    def __init__(self, registry: CollectorRegistry, segment_keys: Sequence[str] = ()) -> None:
        self.segment_keys = tuple(sorted(segment_keys))
        self.firing = Gauge(
            "rankmon_alert_firing",
            "1 while an alert rule fires (per rule and segment).",
            ["alert", "severity", *self.segment_keys],
            registry=registry,
        )
        self.firings = Counter(
            "rankmon_alert_firings",
            "Times an alert rule started firing (per rule and segment), also those that "
            "resolved within one tick (a backlog finalizing many windows at once).",
            ["alert", "severity", *self.segment_keys],
            registry=registry,
        )
        self.deliveries = Counter(
            "rankmon_alert_deliveries",
            "Alert notifications handed to a sink, by result (delivered, failed, dropped).",
            ["sink", "result"],
            registry=registry,
        )

    def set_alert_firing(self, alert: str, severity: str, segment: Segment, firing: bool) -> None:
        self.firing.labels(alert, severity, *self._values(segment)).set(float(firing))

    def count_alert_firing(self, alert: str, severity: str, segment: Segment) -> None:
        self.firings.labels(alert, severity, *self._values(segment)).inc()

    def _values(self, segment: Segment) -> list[str]:
        values = dict(segment)
        return [values.get(key, "") for key in self.segment_keys]

    def count_alert_delivery(self, sink: str, result: str) -> None:
        self.deliveries.labels(sink, result).inc()


def register_alert_metrics(
    registry: CollectorRegistry, segment_keys: Sequence[str] = ()
) -> AlertMetrics:
    """Create both series on `registry`."""
    return AlertMetrics(registry, segment_keys)
