"""The steps of the commit protocol, and the hook that may watch them pass.

| step | what has just happened |
|---|---|
| `after-intake` | a poll's records are in the windows; nothing published or committed since |
| `after-window-publish` | one window's shares are acknowledged; later windows' are not sent |
| `after-publish` | every share of the tick is acknowledged; the commit has not been made |
| `after-commit` | the tick's commit is made |

A tick publishes its shares window by window, oldest first, so the windows topic holds whole windows
whatever happens between two of them. The service calls its `StepHook` with each step's name as the
step passes; the default does nothing. The recovery tests pass one that SIGKILLs the process at an
exact step (`monitor.testing.crashpoints`), which an outside `kill -9` hits only by luck. Nothing in
the product depends on what a hook does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = ["STEPS", "StepHook", "ignore_step"]

StepHook = Callable[[str], None]
STEPS: Final = ("after-intake", "after-window-publish", "after-publish", "after-commit")


def ignore_step(step: str) -> None:
    """The default hook: a step passes unobserved."""
