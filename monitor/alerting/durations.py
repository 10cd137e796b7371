"""Durations as written in the config (`15s`, `5m`, `1h`, `1d`) and as Prometheus wants them."""

from __future__ import annotations

import re
from typing import Any

from monitor.errors import ConfigError

__all__ = ["format_duration", "parse_duration"]

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_PATTERN = re.compile(r"^(\d+)(ms|s|m|h|d)$")


def parse_duration(value: Any, key: str) -> int:
    """Milliseconds of `5m`-style text (or a plain number of seconds); `ConfigError` otherwise."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value * 1000)
    match = _PATTERN.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) == 0:
        raise ConfigError(key, f"must be a positive duration such as 30s, 5m or 1h, got {value!r}")
    return int(match.group(1)) * _UNITS_MS[match.group(2)]


def format_duration(ms: int) -> str:
    """The shortest exact Prometheus duration for `ms` (`0s` for zero)."""
    if ms == 0:
        return "0s"
    for unit in ("d", "h", "m", "s"):
        if ms % _UNITS_MS[unit] == 0:
            return f"{ms // _UNITS_MS[unit]}{unit}"
    return f"{ms}ms"
