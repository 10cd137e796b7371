"""Where the alerting stage reports: `AlertSignals`, implemented by the exporter.

The series themselves are defined once, by `monitor.export.exporter.AlertSeries`:

- `rankmon_alert_firing{alert,severity,<segment keys>}`: 1 while the rule fires in that
  segment, 0 once it has been evaluated there and is not firing;
- `rankmon_alert_firings_total{alert,severity,<segment keys>}`: each time the rule started
  firing there, also when it resolved within the same tick (a backlog of windows), which the
  gauge cannot show;
- `rankmon_alert_deliveries_total{sink,result}`: alert notifications handed to a sink, one per
  alert, by result: `delivered`, `failed` (the attempt failed and will be retried), `dropped`
  (the bounded queue was full and the notification was given up).

The service passes its `monitor.export.exporter.Exporter`; tools and tests that alert
without one pass an `AlertSeries` on a registry of their own.
"""

from __future__ import annotations

from typing import Protocol

from monitor.windows.summary import Segment

__all__ = ["AlertSignals"]


class AlertSignals(Protocol):
    """Where the engine and delivery report; `monitor.export.exporter.Exporter` is one."""

    def set_alert_firing(
        self, alert: str, severity: str, segment: Segment, firing: bool
    ) -> None: ...

    def count_alert_firing(self, alert: str, severity: str, segment: Segment) -> None: ...

    def count_alert_delivery(self, sink: str, result: str) -> None: ...
