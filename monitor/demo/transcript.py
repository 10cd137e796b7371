"""What the demo saw, in order: every finalized window and every alert change, once each.

Without the live view (`--no-live`) the transcript is also printed, one line per entry, for
people and for scripts (the end-to-end test reads it):

```
window 12:00:10-12:00:20 model=v1 ndcg@10:linear=0.821 queries=143 events=498
alert ndcg10-floor model=v1 firing value=0.472
```

The monitor's snapshot keeps only its latest windows; the transcript keeps them all, which is
what `bench/demo_plot.py` draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from monitor.demo.live_view import DemoState
from monitor.windows.summary import WindowSummary

__all__ = ["AlertChange", "Transcript"]


def _clock_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M:%S")


@dataclass(frozen=True)
class AlertChange:
    """An alert's state changed to `state` ("pending", "firing" or "resolved") at `at_ms`."""

    name: str
    segment: str
    state: str
    at_ms: int
    value: float | None


class Transcript:
    """Records (and prints, if given `write`) what each new `DemoState` adds."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write
        # When the demo started: printed lines then begin with the seconds since (`+37.1s`),
        # so "the alert fires about 35 s after start" can be read off the output.
        self.started_ms: int | None = None
        self.windows: dict[str, dict[int, WindowSummary]] = {}
        self.alert_changes: list[AlertChange] = []
        self._alerts: dict[tuple[str, str], str] = {}

    def update(self, state: DemoState, now_ms: int) -> None:
        """Record the windows finalized and the alert states changed since the last update."""
        for label in sorted(state.windows):
            seen = self.windows.setdefault(label, {})
            for window in state.windows[label]:
                if window.start_ms not in seen:
                    seen[window.start_ms] = window
                    self._print_window(label, window, state.measure, now_ms)
        current = {(a.name, a.segment): a for a in state.alerts}
        for key in sorted(set(current) | set(self._alerts)):
            alert = current.get(key)
            status = alert.state if alert is not None else "resolved"
            if self._alerts.get(key, "resolved") == status:
                continue
            self._alerts[key] = status
            value = alert.value if alert is not None else None
            self.alert_changes.append(AlertChange(key[0], key[1], status, now_ms, value))
            shown = f" value={value:.3f}" if value is not None else ""
            self._print(f"alert {key[0]} {key[1]} {status}{shown}", now_ms)

    def _print_window(self, label: str, window: WindowSummary, measure: str, now_ms: int) -> None:
        value = window.means.get(measure, float("nan"))
        self._print(
            f"window {_clock_time(window.start_ms)}-{_clock_time(window.end_ms)} "
            f"{label} {measure}={value:.3f} queries={window.queries} events={window.events}",
            now_ms,
        )

    def _print(self, line: str, now_ms: int) -> None:
        if self._write is None:
            return
        if self.started_ms is not None:
            line = f"+{(now_ms - self.started_ms) / 1000:.1f}s {line}"
        self._write(line)
