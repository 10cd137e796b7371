"""Reaching a Kafka cluster: a cheap reachability probe and the backoff between attempts.

kafka-python 3.0.12's client constructors block up to `bootstrap_timeout_ms` when no broker
answers, and leave their IO thread running when they give up. So rankmon first checks that
some bootstrap server accepts a TCP connection and only then builds a client; while none
does, it waits with `Backoff` and reports the broker down instead of raising.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence

__all__ = [
    "RECONNECT_BACKOFF_MAX_MS",
    "Backoff",
    "KafkaUnavailableError",
    "bootstrap_reachable",
    "parse_servers",
]


class KafkaUnavailableError(Exception):
    """Kafka could not be reached, or did not acknowledge records in time.

    Transient: the caller keeps what it meant to send or read, commits nothing past it, and
    tries again later. (Not a `RankmonError`: it is never a user's mistake to report.)
    """


def parse_servers(bootstrap_servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """`"a:9092,b:9092"` or `["a:9092"]` -> [(host, port)]; a missing port means 9092."""
    items = (
        bootstrap_servers.split(",") if isinstance(bootstrap_servers, str) else bootstrap_servers
    )
    servers: list[tuple[str, int]] = []
    for item in (entry.strip() for entry in items):
        if item.startswith("["):  # [::1]:9092
            host, _, rest = item[1:].partition("]")
            port = rest.lstrip(":")
        elif item.count(":") == 1:
            host, port = item.split(":")
        else:
            host, port = item, ""
        if host:
            servers.append((host, int(port) if port else 9092))
    if not servers:
        raise ValueError("bootstrap_servers is empty")
    return servers


def bootstrap_reachable(bootstrap_servers: str | Sequence[str], timeout_s: float = 1.0) -> bool:
    """Whether any bootstrap server accepts a TCP connection within `timeout_s`."""
    for host, port in parse_servers(bootstrap_servers):
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return True
        except OSError:
            continue
    return False


# The longest wait between two attempts to reach a broker that went away, for every
# kafka-python client of rankmon (Kafka's Java clients use 1 s; kafka-python 3 uses 30 s,
# which left the monitor blind that long beside a broker that was back).
RECONNECT_BACKOFF_MAX_MS = 5_000


class Backoff:
    """Exponential delays, `initial_s` doubling up to `max_s`; `reset()` after a success."""

    def __init__(self, initial_s: float = 0.2, max_s: float = 10.0) -> None:
        if not 0 < initial_s <= max_s:
            raise ValueError("backoff needs 0 < initial_s <= max_s")
        self.initial_s = initial_s
        self.max_s = max_s
        self._next_s = initial_s

    def next_delay(self) -> float:
        """The delay before the next attempt (grows on every call)."""
        delay = self._next_s
        self._next_s = min(self._next_s * 2, self.max_s)
        return delay

    def reset(self) -> None:
        """Back to the initial delay."""
        self._next_s = self.initial_s
