"""The exception tree: every error rankmon reports to a user derives from `RankmonError`.

```
RankmonError
 ├── InputError        a file's content is wrong: "path:line: problem"
 ├── ConfigError       a config key is wrong: "config key 'kafka.topic': problem"
 └── MeasureError      an unknown or unsupported measure name
```

The command line turns any `RankmonError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

__all__ = ["ConfigError", "InputError", "MeasureError", "RankmonError"]


class RankmonError(Exception):
    """Base of every error rankmon reports to a user as one line."""


class InputError(RankmonError):
    """A file (qrels, run, config) could not be read or has a bad line."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}")


class ConfigError(RankmonError):
    """A configuration key has a bad or missing value."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        # A key from YAML can hold any character; the message stays on one line.
        shown = key if key.isprintable() else key.encode("unicode_escape").decode("ascii")
        super().__init__(f"config key '{shown}': {problem}")


class MeasureError(RankmonError):
    """A measure name is unknown or not supported."""
