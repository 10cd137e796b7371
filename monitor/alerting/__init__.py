"""Alerting: rules on finalized windows, baselines, a paired test, drift, states, delivery.

The config reads the `alerts:` section once into `AlertingConfig` (`monitor.config.alerts`);
the service builds delivery
(`AlertDelivery.from_config`, started in the background) and one `AlertEngine`, restores it
from the windows topic, then calls `observe` and `tick` on every scheduler tick. `rankmon rules
render` writes the same conditions as Prometheus rules (`render_prometheus_rules`).
"""

from __future__ import annotations

from monitor.alerting.active import ActiveAlert
from monitor.alerting.delivery import AlertDelivery, RetryPolicy
from monitor.alerting.engine import AlertEngine, AlertTransition
from monitor.alerting.metrics import AlertSignals
from monitor.alerting.render import render_prometheus_rules
from monitor.alerting.rules import AlertRule
from monitor.alerting.settings import AlertingConfig
from monitor.alerting.state import Status

__all__ = [
    "ActiveAlert",
    "AlertDelivery",
    "AlertEngine",
    "AlertRule",
    "AlertSignals",
    "AlertTransition",
    "AlertingConfig",
    "RetryPolicy",
    "Status",
    "render_prometheus_rules",
]
