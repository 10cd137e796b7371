"""Alerting: rules on finalized windows, baselines, a paired test, drift, states, delivery.

The service parses the `alerts:` section once (`parse_alerting_config`), builds delivery
(`AlertDelivery.from_config`, started in the background) and one `AlertEngine`, restores it
from the windows topic, then calls `observe` and `tick` on every scheduler tick. `rankmon rules
render` writes the same conditions as Prometheus rules (`render_prometheus_rules`).
"""

from __future__ import annotations

from monitor.alerting.config import (
    AlertingConfig,
    DeliveryConfig,
    alerting_config_from,
    parse_alerting_config,
)
from monitor.alerting.delivery import AlertDelivery, RetryPolicy
from monitor.alerting.engine import ActiveAlert, AlertEngine, AlertTransition
from monitor.alerting.metrics import AlertMetrics, AlertSignals, register_alert_metrics
from monitor.alerting.render import render_prometheus_rules
from monitor.alerting.rules import AlertRule
from monitor.alerting.state import Status

__all__ = [
    "ActiveAlert",
    "AlertDelivery",
    "AlertEngine",
    "AlertMetrics",
    "AlertRule",
    "AlertSignals",
    "AlertTransition",
    "AlertingConfig",
    "DeliveryConfig",
    "RetryPolicy",
    "Status",
    "alerting_config_from",
    "parse_alerting_config",
    "register_alert_metrics",
    "render_prometheus_rules",
]
