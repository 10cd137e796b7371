"""The exception tree: every error rankmon reports to a user derives from `RankmonError`.

```
RankmonError
 ├── InputError        a file's content is wrong: "path:line: problem"
 ├── ConfigError       a config key is wrong: "config key 'kafka.topic': problem"
 │    └── ConfigKeysError   several are: one such line each, in the file's order
 └── MeasureError      an unknown or unsupported measure name
```

The command line turns any `RankmonError` into one line on stderr (a line per problem for
`ConfigKeysError`) and exit code 2. A problem
quotes what it found, so its text is bounded (`MAX_PROBLEM_CHARS`) and kept on one line: a
value of a megabyte, or with newlines, must not make an error of a megabyte or forge lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = [
    "MAX_PROBLEM_CHARS",
    "ConfigError",
    "ConfigKeysError",
    "InputError",
    "MeasureError",
    "RankmonError",
    "one_line",
]

MAX_PROBLEM_CHARS: Final = 400


def one_line(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    """`text` with control characters escaped, cut to `limit` characters (marked ...)."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class RankmonError(Exception):
    """Base of every error rankmon reports to a user as one line."""


class InputError(RankmonError):
    """A file (qrels, run, config) could not be read or has a bad line."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.problem = one_line(problem)
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{one_line(where)}: {self.problem}")

    @classmethod
    def unreadable(cls, path: str, what: str, error: OSError | UnicodeDecodeError) -> InputError:
        """`PATH: cannot read the WHAT: <what the system said>`, the same for every file."""
        if isinstance(error, UnicodeDecodeError):
            reason = f"not UTF-8 text (byte {error.start})"
        else:
            reason = error.strerror or str(error)
        return cls(path, f"cannot read the {what}: {reason}")


class ConfigError(RankmonError):
    """A configuration key has a bad or missing value."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = one_line(problem)
        # A key from YAML can hold any character; the message stays on one line.
        shown = one_line(key, 120)
        super().__init__(f"config key '{shown}': {self.problem}")


class ConfigKeysError(ConfigError):
    """Several config keys are wrong; its text is one `ConfigError` line per key, in order.

    `key` and `problem` are the first one's; `problems` holds them all."""

    def __init__(self, problems: Sequence[ConfigError]) -> None:
        if not problems:
            raise ValueError("ConfigKeysError needs at least one problem")
        first = problems[0]
        super().__init__(first.key, first.problem)
        self.problems = tuple(problems)
        self.args = ("\n".join(str(problem) for problem in self.problems),)


class MeasureError(RankmonError):
    """A measure name is unknown or not supported."""
