"""Value types every stage shares: durations as written, and secrets that never print.

`Duration` keeps the text the user wrote (`5m`), because that text is the `window` label of
every quality gauge; `Secret` holds a password read from the environment or a file and shows
`***` wherever it is printed, logged or put in an error.
"""

from __future__ import annotations

import hmac
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "MASK",
    "Duration",
    "Secret",
    "SecretUrl",
    "duration_of_ms",
    "format_duration",
    "mask_url",
    "parse_duration",
]

_UNIT_MS: Final = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION: Final = re.compile(r"(\d+)(ms|s|m|h|d)")
MASK: Final = "***"


@dataclass(frozen=True, slots=True)
class Duration:
    """A span of time as written in the config (`15s`, `5m`, `1h`, `1d`, `500ms`).

    `text` is kept verbatim: `Duration("5m", 300_000)` prints as `5m`, never as `300s`.
    """

    text: str
    ms: int

    @property
    def seconds(self) -> float:
        """The span in seconds (for schedulers and sleeps)."""
        return self.ms / 1000

    def __str__(self) -> str:
        return self.text


def parse_duration(text: str) -> Duration:
    """Parse `<integer><unit>` with unit ms, s, m, h or d; raises `ValueError` otherwise.

    One unit only (`90s`, not `1m30s`): the text doubles as a label value, and one spelling
    per span keeps labels comparable across instances.
    """
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"expected a duration such as 500ms, 15s, 5m, 1h or 1d, got {text!r}")
    return Duration(text, int(match.group(1)) * _UNIT_MS[match.group(2)])


def duration_of_ms(ms: int) -> Duration:
    """A span given in milliseconds, written in the largest unit that divides it (`60s`
    stays `1m`); for defaults derived from other keys."""
    for unit, size in sorted(_UNIT_MS.items(), key=lambda item: -item[1]):
        if ms % size == 0 and ms >= size:
            return Duration(f"{ms // size}{unit}", ms)
    return Duration(f"{ms}ms", ms)


def format_duration(ms: int) -> str:
    """`ms` as the config and PromQL write it, in the largest unit that divides it (`3600000`
    -> `1h`; `0s` for zero): rendered rules, dashboards, alert texts."""
    return "0s" if ms == 0 else duration_of_ms(ms).text


class Secret:
    """A secret string (password, key passphrase) that prints as `***`.

    Call `reveal()` only where the value leaves rankmon (the kafka-python keyword arguments).
    Where it came from, the variable `env` or the file `file`, is safe to show.
    """

    __slots__ = ("_value", "env", "file")

    def __init__(self, value: str, *, env: str | None = None, file: Path | None = None) -> None:
        if (env is None) == (file is None):
            raise ValueError("a Secret comes from exactly one of an environment variable or a file")
        self._value = value
        self.env = env
        self.file = file

    @property
    def source(self) -> str:
        """Where the value was read, e.g. `environment variable KAFKA_PASSWORD`."""
        return f"environment variable {self.env}" if self.env is not None else f"file {self.file}"

    def reveal(self) -> str:
        """The plain value."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK}, source={self.source!r})"

    def __str__(self) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        # Constant time, so that comparing configs never becomes a timing oracle.
        same = hmac.compare_digest(self._value.encode(), other._value.encode())
        return same and (self.env, self.file) == (other.env, other.file)

    def __hash__(self) -> int:
        return hash((Secret, self.env, self.file))

    def __reduce__(self) -> tuple[object, ...]:
        # Pickling would carry the value into places (process pools, caches) it should not go.
        raise TypeError("a Secret cannot be pickled")


def mask_url(url: str, *, keep_path: bool = True) -> str:
    """A URL as it may be printed: user info, query and fragment masked, and the path too
    unless `keep_path` (a webhook's path often is its token: Slack's /services/T/B/secret)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return MASK  # not a URL anyone can read safely
    if ":" in host:
        host = f"[{host}]"
    netloc = (f"{MASK}@" if parts.username or parts.password else "") + host
    if port is not None:
        netloc += f":{port}"
    path = parts.path if keep_path else ("/" + MASK if parts.path.strip("/") else parts.path)
    query = f"?{MASK}" if parts.query else ""
    fragment = f"#{MASK}" if parts.fragment else ""
    return f"{parts.scheme}://{netloc}{path}{query}{fragment}"


class SecretUrl:
    """A URL that may carry credentials (user info, a token in its path or query): printed,
    logged or put in an error, it shows `mask_url` of itself.

    Inline in the config, or from an environment variable (`env`) or a file (`file`), like
    the other secrets. Call `reveal()` only where the request is made.
    """

    __slots__ = ("_value", "env", "file", "keep_path")

    def __init__(
        self,
        value: str,
        *,
        keep_path: bool = True,
        env: str | None = None,
        file: Path | None = None,
    ) -> None:
        if env is not None and file is not None:
            raise ValueError("a URL comes from one place at most")
        self._value = value
        self.keep_path = keep_path
        self.env = env
        self.file = file

    @property
    def source(self) -> str:
        """Where the URL was read: inline, or the variable or file named."""
        if self.env is not None:
            return f"environment variable {self.env}"
        return "inline" if self.file is None else f"file {self.file}"

    def reveal(self) -> str:
        """The plain URL."""
        return self._value

    def __str__(self) -> str:
        return mask_url(self._value, keep_path=self.keep_path)

    def __repr__(self) -> str:
        return f"SecretUrl({str(self)!r}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretUrl):
            return NotImplemented
        same = hmac.compare_digest(self._value.encode(), other._value.encode())
        return same and (self.env, self.file, self.keep_path) == (
            other.env,
            other.file,
            other.keep_path,
        )

    def __hash__(self) -> int:
        return hash((SecretUrl, self.env, self.file, self.keep_path))

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a SecretUrl cannot be pickled")
