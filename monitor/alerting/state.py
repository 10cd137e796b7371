"""Alert states, as Prometheus keeps them: inactive -> pending -> firing -> (resolved) inactive.

Each window gives a rule one piece of evidence for one segment: bad, good, or unknown (no
value, too few queries, an untrustworthy window). With `for = F` and `keep_firing_for = K`:

```
evidence   bad  bad  good  bad  bad  good good   (F = 2, K = 1)
status     pend FIRE FIRE  FIRE FIRE FIRE inact
                 ^ the F-th consecutive bad window fires
                                           ^ the (K+1)-th consecutive good window resolves
```

A good window while pending clears back to inactive without a notification; unknown evidence
changes nothing, so a gap in the data neither fires nor resolves an alert.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum

__all__ = ["AlertState", "Evidence", "Status", "StatusChange"]


class Status(StrEnum):
    """Where an alert is."""

    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"


class Evidence(Enum):
    """What one window says about a rule's condition."""

    BAD = "bad"
    GOOD = "good"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class StatusChange:
    """A move from one status to another; firing -> inactive is a resolution."""

    before: Status
    after: Status

    @property
    def resolved(self) -> bool:
        """True when a firing alert stopped firing."""
        return self.before is Status.FIRING and self.after is Status.INACTIVE


class AlertState:
    """The status of one rule in one segment, driven by one piece of evidence per window."""

    def __init__(self, for_windows: int, keep_firing_for: int) -> None:
        if for_windows < 1 or keep_firing_for < 0:
            raise ValueError("for must be >= 1 and keep_firing_for >= 0")
        self.for_windows = for_windows
        self.keep_firing_for = keep_firing_for
        self.status = Status.INACTIVE
        self.bad_streak = 0
        self.good_streak = 0
        self.active_since_ms: int | None = None

    def observe(self, evidence: Evidence, at_ms: int) -> StatusChange | None:
        """Apply one window's evidence observed at `at_ms`; the change, if the status moved."""
        before = self.status
        if evidence is Evidence.BAD:
            self._bad(at_ms)
        elif evidence is Evidence.GOOD:
            self._good()
        if self.status is before:
            return None
        return StatusChange(before, self.status)

    def _bad(self, at_ms: int) -> None:
        self.good_streak = 0
        self.bad_streak += 1
        if self.active_since_ms is None:
            self.active_since_ms = at_ms
        if self.status is Status.FIRING:
            return
        self.status = Status.FIRING if self.bad_streak >= self.for_windows else Status.PENDING

    def _good(self) -> None:
        self.bad_streak = 0
        if self.status is Status.FIRING:
            self.good_streak += 1
            if self.good_streak <= self.keep_firing_for:
                return
        self.status = Status.INACTIVE
        self.good_streak = 0
        self.active_since_ms = None
