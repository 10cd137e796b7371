"""Crash points: a step hook that makes the service SIGKILL itself at an exact step.

The recovery tests must kill the service at exact moments (between publishing a window and
committing its offsets, between two windows of one publish) that an outside `kill -9` hits
only by luck. The service reports every step of its commit protocol to a hook
(`monitor.checkpoint.steps`); `CrashPoints` is such a hook, armed for at most one step: the
process kills itself with SIGKILL (no cleanup, no flush, exactly like the OOM killer) the n-th
time that step passes. `python -m monitor.testing.crash_run --config FILE` is `rankmon run`
with the hook armed from `RANKMON_TEST_CRASH_AT=<step>:<n>`; `rankmon run` itself never reads
the variable.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from typing import Final

from monitor.checkpoint.steps import STEPS

__all__ = ["CRASH_ENV", "CrashPoints"]

CRASH_ENV: Final = "RANKMON_TEST_CRASH_AT"


class CrashPoints:
    """A step hook: at most one armed step and the passages left before the kill."""

    def __init__(self, point: str | None = None, nth: int = 1) -> None:
        if point is not None and point not in STEPS:
            raise ValueError(f"unknown crash point {point!r}; known: {', '.join(STEPS)}")
        if nth < 1:
            raise ValueError("the crash must come at the 1st passage or later")
        self.point = point
        self._left = nth

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> CrashPoints:
        """`RANKMON_TEST_CRASH_AT=point:n` (`:n` optional, default 1); inert when unset."""
        spec = environ.get(CRASH_ENV, "").strip()
        if not spec:
            return cls()
        point, _, nth = spec.partition(":")
        try:
            return cls(point, int(nth) if nth else 1)
        except ValueError as error:
            raise ValueError(f"{CRASH_ENV}={spec!r}: {error}") from error

    def armed(self, point: str) -> bool:
        """Whether passing `point` now would kill the process."""
        return point == self.point and self._left == 1

    def __call__(self, point: str) -> None:
        """Pass `point`: SIGKILL this process if it is the armed one's n-th passage."""
        if point != self.point:
            return
        self._left -= 1
        if self._left == 0:
            self.kill(point)

    def kill(self, point: str) -> None:
        """End the process at `point` (subclasses in tests raise instead)."""
        os.kill(os.getpid(), signal.SIGKILL)
