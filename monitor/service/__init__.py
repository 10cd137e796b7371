"""The streaming monitor: one instance of the consumer group and its metrics endpoint.

`loop.py` is `Monitor`, the poll loop (step, tick, rebalance; its docstring tells the tick's
order and the recovery story); `wiring.py` builds each stage from the config and the IO it is
handed; `views.py` is what other threads see (the live view's snapshot, the alerts on the
page, the explanations' routes).
"""

from __future__ import annotations

from monitor.service.loop import Monitor
from monitor.service.views import MonitorSnapshot
from monitor.service.wiring import MonitorIo, event_decoder

__all__ = ["Monitor", "MonitorIo", "MonitorSnapshot", "event_decoder"]
