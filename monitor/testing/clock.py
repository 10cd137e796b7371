"""`FakeClock`: a `monitor.clock.Clock` that moves only when a test or a bench tells it to."""

from __future__ import annotations

__all__ = ["FakeClock"]


class FakeClock:
    """A clock that moves only when told to.

    `advance` moves both readings (time passes); `step_wall` moves the wall clock alone,
    either way, as an operator or NTP stepping the system time does.
    """

    def __init__(self, start_ms: int = 0) -> None:
        self._elapsed_ms = start_ms
        self._wall_offset_ms = 0

    def now_ms(self) -> int:
        return self._elapsed_ms + self._wall_offset_ms

    def monotonic(self) -> float:
        return self._elapsed_ms / 1000.0

    def advance(self, ms: int) -> None:
        """Let `ms` milliseconds pass."""
        if ms < 0:
            raise ValueError("time does not go backwards: use step_wall for the wall clock")
        self._elapsed_ms += ms

    def set(self, now_ms: int) -> None:
        """Let time pass until the wall clock reads `now_ms` (not earlier than now)."""
        self.advance(now_ms - self.now_ms())

    def step_wall(self, ms: int) -> None:
        """Step the wall clock by `ms` (negative: back); the monotonic reading stays."""
        self._wall_offset_ms += ms
