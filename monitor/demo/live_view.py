"""The demo's terminal view (rich): quality per segment, events by outcome, alerts.

`render(state)` is a pure function of a `DemoState`, so what the view shows is tested by
rendering it to a recording console; `LiveView` redraws it a few times a second.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from monitor.windows.summary import WindowSummary

__all__ = ["AlertView", "DemoState", "LiveView", "render", "sparkline"]

# Eight heights: a value v in [0, 1] is drawn as _BARS[round(v * 7)].
_BARS = "▁▂▃▄▅▆▇█"
_ALERT_STYLES = {"firing": "bold red", "pending": "yellow"}


@dataclass(frozen=True)
class AlertView:
    """One alert as the view shows it: rule name, segment label, state and last value."""

    name: str
    segment: str
    state: str  # "pending" or "firing"
    value: float


@dataclass(frozen=True)
class DemoState:
    """What the view shows at one moment.

    `windows[segment label]` lists the finalized windows of the segment, oldest first;
    `measure` is the summary key shown (e.g. `ndcg@10:linear`).
    """

    measure: str
    metrics_url: str
    elapsed_s: float
    windows: Mapping[str, Sequence[WindowSummary]] = field(default_factory=dict)
    outcomes: Mapping[str, int] = field(default_factory=dict)
    alerts: Sequence[AlertView] = ()


def sparkline(values: Sequence[float], low: float = 0.0, high: float = 1.0) -> str:
    """One block character per value, scaled from `low` to `high`; undefined values blank."""
    if high <= low:
        raise ValueError("high must be above low")
    marks = []
    for value in values:
        if math.isnan(value):
            marks.append(" ")
            continue
        share = min(1.0, max(0.0, (value - low) / (high - low)))
        marks.append(_BARS[round(share * (len(_BARS) - 1))])
    return "".join(marks)


def render(state: DemoState, history: int = 24) -> RenderableType:
    """The three tables, with at most `history` windows in each sparkline."""
    return Group(
        Text(
            f"rankmon demo · {state.elapsed_s:.0f}s · metrics at {state.metrics_url}",
            style="bold",
        ),
        _quality_table(state, history),
        _outcome_table(state.outcomes),
        _alert_table(state.alerts),
    )


def _quality_table(state: DemoState, history: int) -> Table:
    table = Table(title=f"{state.measure} per segment, latest windows")
    for column in ("segment", "latest", "trend", "queries", "events", "coverage"):
        table.add_column(column, justify="left" if column in ("segment", "trend") else "right")
    for label in sorted(state.windows):
        windows = list(state.windows[label])[-history:]
        if not windows:
            continue
        values = [w.means.get(state.measure, math.nan) for w in windows]
        latest = windows[-1]
        table.add_row(
            label,
            f"{values[-1]:.3f}",
            sparkline(values),
            str(latest.queries),
            str(latest.events),
            f"{latest.coverage:.0%}",
        )
    return table


def _outcome_table(outcomes: Mapping[str, int]) -> Table:
    table = Table(title="events by outcome")
    table.add_column("outcome")
    table.add_column("events", justify="right")
    for outcome, count in sorted(outcomes.items()):
        table.add_row(outcome, str(count))
    return table


def _alert_table(alerts: Sequence[AlertView]) -> Table:
    table = Table(title="alerts")
    for column in ("alert", "segment", "state", "value"):
        table.add_column(column)
    if not alerts:
        table.add_row("none", "", "", "")
    for alert in sorted(alerts, key=lambda a: (a.name, a.segment)):
        style = _ALERT_STYLES.get(alert.state, "")
        table.add_row(
            alert.name, alert.segment, Text(alert.state, style=style), f"{alert.value:.3f}"
        )
    return table


class LiveView:
    """Redraws `render(state())` `refreshes_per_second` times a second while open."""

    def __init__(
        self,
        state: Callable[[], DemoState],
        *,
        console: Console | None = None,
        refreshes_per_second: float = 4,
    ) -> None:
        self._state = state
        self._live = Live(
            _Latest(state),
            console=console,
            refresh_per_second=refreshes_per_second,
            transient=False,
        )

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._live.__exit__(exc_type, exc, traceback)


class _Latest:
    """A renderable that asks for the current state each time rich draws it."""

    def __init__(self, state: Callable[[], DemoState]) -> None:
        self._state = state

    def __rich__(self) -> RenderableType:
        return render(self._state())
