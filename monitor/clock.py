"""Clocks: the wall clock in production; tests and benches take a fake one
(`monitor.testing.clock.FakeClock`).

Nothing deep inside rankmon calls `time.time()`: the stages take a `Clock`, so tests of
watermarks, idle partitions, staleness and alert states run on a fake one.

Two readings, for two jobs. `now_ms()` is the wall clock: it stamps what leaves rankmon
(alert times) and is compared with event times. `monotonic()` only ever moves forward at the
pace of real time: every interval and timeout (the tick schedule, idle partitions, stale
rules, retries) is measured on it, so a wall clock stepped back an hour (NTP, a VM restored)
neither stops the ticks for an hour nor, stepped forward, bursts them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from monitor.declare import setting
from monitor.sections import as_positive_duration
from monitor.values import Duration, duration_of_ms, parse_duration

__all__ = ["Clock", "ScheduleConfig", "SystemClock", "TickSchedule"]


class Clock(Protocol):
    """Milliseconds since the epoch, and a monotonic reading in seconds."""

    def now_ms(self) -> int: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()


class TickSchedule:
    """When the next tick is due, on the monotonic clock; polled by the loop.

    A tick comes every `interval_s`. A loop held up for several intervals (a long flush, a
    stop in the debugger) gets one tick, not a burst, and the next one an interval later.
    """

    def __init__(self, interval_s: float, clock: Clock) -> None:
        if interval_s <= 0:
            raise ValueError(f"the tick interval must be positive, got {interval_s} s")
        self.interval_s = interval_s
        self._clock = clock
        self._next_s = clock.monotonic() + interval_s

    def due(self) -> bool:
        """Whether a tick is due now; if so, the next one is scheduled."""
        now = self._clock.monotonic()
        if now < self._next_s:
            return False
        self._next_s += self.interval_s
        if self._next_s <= now:  # behind by more than an interval: no burst of ticks
            self._next_s = now + self.interval_s
        return True


def _four_ticks(values: Mapping[str, Any]) -> Duration:
    interval: Duration = values["interval"]
    return duration_of_ms(max(60_000, 4 * interval.ms))


@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    """How often closed windows are finalized, exported, published and committed, and how
    long the poll loop may make no progress before `/healthz` fails (default: the larger of
    a minute and four intervals)."""

    interval: Duration = setting(
        parse_duration("15s"),
        read=as_positive_duration,
        doc="how often closed windows are finalized, exported, published and committed",
    )
    liveness_timeout: Duration = setting(
        parse_duration("1m"),
        read=as_positive_duration,
        derive=_four_ticks,
        doc="the loop making no progress this long fails /healthz (null: max(1m, 4 ticks))",
    )

    def problem(self) -> tuple[str, str] | None:
        """The liveness probe outlasts two ticks."""
        if self.liveness_timeout.ms < 2 * self.interval.ms:
            return (
                "liveness_timeout",
                f"{self.liveness_timeout} is shorter than two ticks ({self.interval} each): "
                "every tick would fail the liveness probe",
            )
        return None
