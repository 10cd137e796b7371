"""Clocks: the wall clock in production, a settable one in tests.

Nothing deep inside rankmon calls `time.time()`: the stages take a `Clock`, so tests of
watermarks, idle partitions, staleness and alert states run on a fake one.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "FakeClock", "SystemClock"]


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


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now_ms = start_ms

    def now_ms(self) -> int:
        return self._now_ms

    def monotonic(self) -> float:
        return self._now_ms / 1000.0

    def advance(self, ms: int) -> None:
        """Move the clock forward by `ms` milliseconds."""
        if ms < 0:
            raise ValueError("a clock does not go backwards")
        self._now_ms += ms

    def set(self, now_ms: int) -> None:
        """Jump to `now_ms` (not earlier than the current reading)."""
        self.advance(now_ms - self._now_ms)
