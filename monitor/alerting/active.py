"""An alert rule in one segment: its state, its window track and its last verdict.

The engine (`monitor.alerting.engine`) keeps one per rule and segment; the annotations
(`monitor.alerting.annotations`) describe one. Both import it from here, so neither imports
the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.alerting.conditions import Verdict, WindowTrack
from monitor.alerting.rules import AlertRule
from monitor.alerting.state import AlertState, Status
from monitor.windows.summary import Segment

__all__ = ["ActiveAlert"]


@dataclass
class ActiveAlert:
    """A rule's state in one segment, with the verdict of the last window that had evidence."""

    rule: AlertRule
    segment: Segment
    state: AlertState
    track: WindowTrack
    verdict: Verdict | None = None
    window: tuple[int, int] | None = None
    fired_at_ms: int | None = None
    held_windows: int = 0  # windows held in a row (a drop's `max_hold`)

    @property
    def status(self) -> Status:
        return self.state.status
