"""Who is judging at `/judge`: a person's name from the header the operator's auth proxy sets
(`judging.people_header`, `X-Forwarded-User` by default), or from a token of
`judging.people_tokens` sent as `Authorization: Bearer <token>`. Nobody else writes.

The header is trusted as the proxy sets it: a service reachable without the proxy must set
`people_header: ""` (tokens only), or anyone could name themselves. A name is 1 to
`MAX_NAME_CHARS` printable characters, no space: it becomes the judgments' source
`human:<name>`. The token file holds `name token` lines (`#` starts a comment), each token at
least `MIN_TOKEN_CHARS` long and unique; tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from monitor.errors import InputError

__all__ = ["MAX_NAME_CHARS", "MIN_TOKEN_CHARS", "People", "read_tokens"]

MAX_NAME_CHARS: Final = 64
MIN_TOKEN_CHARS: Final = 16
_NAME: Final = re.compile(r"[^\s\x00-\x1f\x7f]{1,64}")  # MAX_NAME_CHARS


def read_tokens(path: Path) -> dict[str, str]:
    """The people of a token file, token -> name; an `InputError` names the bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(str(path), f"cannot read the people's tokens: {error}") from None
    tokens: dict[str, str] = {}
    for number, written in enumerate(text.splitlines(), start=1):
        line = written.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise InputError(str(path), "expected 'name token'", number)
        name, token = parts
        if not _NAME.fullmatch(name):
            raise InputError(str(path), f"a name is 1 to {MAX_NAME_CHARS} characters", number)
        if len(token) < MIN_TOKEN_CHARS:
            raise InputError(str(path), f"a token is {MIN_TOKEN_CHARS} characters at least", number)
        if token in tokens:
            raise InputError(str(path), "a token is given twice", number)
        tokens[token] = name
    return tokens


class People:
    """Tells who sends a request (module docstring)."""

    def __init__(self, header: str, tokens: Mapping[str, str] | None = None) -> None:
        self.header = header.lower()
        self._tokens = dict(tokens or {})

    @property
    def ways(self) -> str:
        """How a person signs in, for the page's message."""
        ways = []
        if self.header:
            ways.append(f"the {self.header} header your auth proxy sets")
        if self._tokens:
            ways.append("a token of judging.people_tokens")
        return " or ".join(ways)

    def who(self, headers: Mapping[str, str]) -> str | None:
        """The person's name, or None: nobody known."""
        authorization = headers.get("authorization", "")
        if authorization.startswith("Bearer ") and self._tokens:
            sent = authorization.removeprefix("Bearer ").strip().encode()
            found = None
            for token, name in self._tokens.items():  # every token compared: constant time
                if hmac.compare_digest(sent, token.encode()):
                    found = name
            if found is not None:
                return found
        if self.header:
            name = headers.get(self.header, "").strip()
            if _NAME.fullmatch(name):
                return name
        return None
