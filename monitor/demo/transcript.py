"""The demo without a live view (`--no-live`): one plain line per new window and alert change.

Lines are meant for people and for scripts (the end-to-end test reads them):

```
window 12:00:10-12:00:20 model=v1 ndcg@10:linear=0.821 queries=143 events=498
alert ndcg10-floor model=v1 firing value=0.472
```
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from monitor.demo.live_view import DemoState

__all__ = ["Transcript"]


def _clock_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M:%S")


class Transcript:
    """Remembers what it has printed, and prints only what a new `DemoState` adds."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._windows: set[tuple[str, int]] = set()
        self._alerts: dict[tuple[str, str], str] = {}

    def update(self, state: DemoState) -> None:
        """Print the windows finalized and the alert states changed since the last update."""
        for label in sorted(state.windows):
            for window in state.windows[label]:
                if (label, window.start_ms) in self._windows:
                    continue
                self._windows.add((label, window.start_ms))
                value = window.means.get(state.measure, float("nan"))
                self._write(
                    f"window {_clock_time(window.start_ms)}-{_clock_time(window.end_ms)} "
                    f"{label} {state.measure}={value:.3f} "
                    f"queries={window.queries} events={window.events}"
                )
        current = {(a.name, a.segment): a for a in state.alerts}
        for key in sorted(set(current) | set(self._alerts)):
            alert = current.get(key)
            status = alert.state if alert is not None else "resolved"
            if self._alerts.get(key, "resolved") == status:
                continue
            shown = f" value={alert.value:.3f}" if alert is not None else ""
            self._write(f"alert {key[0]} {key[1]} {status}{shown}")
            self._alerts[key] = status
