"""When to say that Kafka cannot be reached, so a wrong address is seen at once and an outage
is neither silent nor a flood of lines.

- At start, no broker answering within `STARTUP_GRACE_S` gives a warning naming
  `kafka.bootstrap_servers`; a broker that answers later gives `Kafka up`.
- A broker lost after it answered gives `Kafka down` at once.
- While Kafka stays unreachable, `Kafka still unreachable` is logged once every
  `REPEAT_S`, with how long it has lasted.

Times are on the monotonic clock, so a stepped wall clock changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from monitor.clock import Clock
from monitor.logs import fields
from monitor.values import duration_of_ms

__all__ = ["REPEAT_S", "STARTUP_GRACE_S", "Reachability"]

STARTUP_GRACE_S: Final = 10.0
REPEAT_S: Final = 60.0

_log = logging.getLogger("monitor.service")


class Reachability:
    """Fed whether a broker answers after each poll; logs what changed, at a bounded rate."""

    def __init__(self, bootstrap_servers: Sequence[str], clock: Clock) -> None:
        self._servers = ",".join(bootstrap_servers)
        self._clock = clock
        self._up: bool | None = None  # None: no broker has answered since the start
        self._down_since = clock.monotonic()
        self._next_line_at = self._down_since + STARTUP_GRACE_S

    def note(self, up: bool) -> None:
        now = self._clock.monotonic()
        if up:
            if self._up is not True:
                _log.info("Kafka up", extra=fields(bootstrap_servers=self._servers))
            self._up = True
            return
        if self._up is True:
            self._up, self._down_since = False, now
            self._next_line_at = now + REPEAT_S
            _log.warning("Kafka down", extra=fields(bootstrap_servers=self._servers))
            return
        if now < self._next_line_at:
            return
        self._next_line_at = now + REPEAT_S
        down_for = duration_of_ms(max(1, round(now - self._down_since)) * 1000).text
        if self._up is None:
            self._up = False
            _log.warning(
                "Kafka unreachable: no broker of kafka.bootstrap_servers answered",
                extra=fields(bootstrap_servers=self._servers, down_for=down_for),
            )
        else:
            _log.warning(
                "Kafka still unreachable",
                extra=fields(bootstrap_servers=self._servers, down_for=down_for),
            )
