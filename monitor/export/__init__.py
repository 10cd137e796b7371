"""Export: what Prometheus scrapes and what the log says about windows.

Enters: finalized `WindowSummary`s, outcome counts, consumer and loop state. Leaves: the
`rankmon_*` series (one registry, `Exporter`), served with `/healthz` and `/readyz` by
`MetricsServer`, and one log line per finalized window.
"""

from __future__ import annotations

from monitor.export.exporter import Exporter
from monitor.export.http import MetricsServer

__all__ = ["Exporter", "MetricsServer"]
