"""The `windows` settings, declared once (`monitor.declare`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from monitor.declare import setting
from monitor.sections import (
    as_duration,
    as_positive_duration,
)
from monitor.values import Duration, parse_duration

__all__ = ["WindowsConfig"]

_FIVE_MINUTES: Final = parse_duration("5m")


def _size(values: Mapping[str, Any]) -> Duration:
    size: Duration = values["size"]
    return size


@dataclass(frozen=True, slots=True)
class WindowsConfig:
    """Event-time windows, aligned to the epoch.

    Tumbling when `hop == size`, sliding otherwise (each event is in size/hop windows). An
    event is placed by the time ingest gave it (`events.time_source`), and moves the
    watermark no further than its record timestamp plus `max_clock_skew`.
    """

    size: Duration = setting(
        _FIVE_MINUTES, read=as_positive_duration, doc="the window length (event time)"
    )
    hop: Duration = setting(
        _FIVE_MINUTES,
        read=as_positive_duration,
        derive=_size,
        doc="between window starts: null or the size is tumbling, less is sliding",
    )
    allowed_lateness: Duration = setting(
        parse_duration("1m"), read=as_duration, doc="how long after its end a window waits"
    )
    idle_timeout: Duration = setting(
        _FIVE_MINUTES,
        read=as_positive_duration,
        doc="a partition without events this long stops holding the watermark",
    )
    max_clock_skew: Duration = setting(
        parse_duration("10s"),
        read=as_duration,
        doc="an event moves the watermark at most this far past its record timestamp",
    )

    @property
    def sliding(self) -> bool:
        """Whether windows overlap."""
        return self.hop.ms != self.size.ms

    def problem(self) -> tuple[str, str] | None:
        """What the keys say only together: the hop fits the size a whole number of times."""
        if self.hop.ms > self.size.ms:
            return "hop", f"{self.hop} is longer than the window size {self.size}"
        if self.size.ms % self.hop.ms:
            return "hop", f"the window size {self.size} must be a multiple of {self.hop}"
        return None
