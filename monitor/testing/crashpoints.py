"""Crash points: named places where a fault test makes the service SIGKILL itself.

The recovery tests must kill the service at exact moments (between publishing a window and
committing its offsets, half-way through a finalize) that an outside `kill -9` hits only by
luck. `rankmon run` arms at most one point from the environment variable
`RANKMON_TEST_CRASH_AT=<point>:<n>`: the process kills itself with SIGKILL (no cleanup, no
flush, exactly like the OOM killer) the n-th time it reaches that point. Unset, every point is
inert (one dictionary lookup). The variable has no `__`, so the config never reads it.

| point | where, in `Monitor` |
|---|---|
| `after-intake` | a poll's records are in the windows; nothing published or committed since |
| `mid-finalize` | a tick with window summaries: the first half is acknowledged, the rest unsent |
| `after-publish` | every summary of the tick is acknowledged; the commit has not been made |
| `after-commit` | the tick's commit is made |
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from typing import Final

__all__ = ["CRASH_ENV", "POINTS", "CrashPoints"]

CRASH_ENV: Final = "RANKMON_TEST_CRASH_AT"
POINTS: Final = ("after-intake", "mid-finalize", "after-publish", "after-commit")


class CrashPoints:
    """At most one armed point and the number of times it may be passed before the kill."""

    def __init__(self, point: str | None = None, nth: int = 1) -> None:
        if point is not None and point not in POINTS:
            raise ValueError(f"unknown crash point {point!r}; known: {', '.join(POINTS)}")
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

    def reach(self, point: str) -> None:
        """Pass `point`: SIGKILL this process if it is the armed one's n-th passage."""
        if point != self.point:
            return
        self._left -= 1
        if self._left == 0:
            os.kill(os.getpid(), signal.SIGKILL)
