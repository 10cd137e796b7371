"""The alerting stage's two Prometheus metrics, registered on the registry the service passes.

- `rankmon_alert_firing{alert,severity}`: how many segments the rule is firing in (0 when
  none; the series exists from start so `absent()` and dashboards see every rule);
- `rankmon_alert_deliveries_total{sink,result}`: alerts handed to a sink, by result:
  `delivered`, `failed` (the attempt failed and will be retried), `dropped` (the bounded
  queue was full and the alert's notification was given up).
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

__all__ = ["AlertMetrics", "register_alert_metrics"]


@dataclass(frozen=True)
class AlertMetrics:
    """Handles on the two metrics."""

    firing: Gauge
    deliveries: Counter


def register_alert_metrics(registry: CollectorRegistry) -> AlertMetrics:
    """Create both metrics on `registry` (never the global one)."""
    firing = Gauge(
        "rankmon_alert_firing",
        "Segments in which the alert rule is firing.",
        ["alert", "severity"],
        registry=registry,
    )
    deliveries = Counter(
        "rankmon_alert_deliveries",
        "Alert notifications handed to a sink, by result (delivered, failed, dropped).",
        ["sink", "result"],
        registry=registry,
    )
    return AlertMetrics(firing=firing, deliveries=deliveries)
