"""The prompt a judge worker sends: a rubric on the 0-3 scale (UMBRELA-style) by default, or
the user's own template file.

A template is text with `{query}`, `{title}` and `{text}` placeholders (and `{doc_id}`,
`{query_id}`); a line `---` alone splits it into the system message (before) and the user
message (after); without one it is all the user message. Placeholders are filled with the
values as they are, never evaluated: `{` and `}` in a value stay as they are. `prompt_hash`
(the first 12 hex digits of the template's SHA-256) goes into each judgment's provenance,
so grades from another prompt can be told apart.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from monitor.errors import ConfigError

__all__ = ["DEFAULT_TEMPLATE", "Prompt"]

DEFAULT_TEMPLATE: Final = """\
You are a search quality rater. You judge how well a passage answers a search query, on a \
scale of 0 to 3:
3 = perfectly relevant: the passage is dedicated to the query and contains the exact answer.
2 = highly relevant: the passage has some answer for the query, but it may be a bit unclear \
or hidden amongst extraneous information.
1 = related: the passage seems related to the query but does not answer it.
0 = irrelevant: the passage has nothing to do with the query.
Judge the passage alone, not what its source might contain elsewhere. Give one short sentence \
of reason, then a last line of the form "Grade: N".
---
Query: {query}

Passage title: {title}
Passage: {text}
"""

_PLACEHOLDER: Final = re.compile(r"\{(query|title|text|doc_id|query_id)\}")
_SPLIT: Final = re.compile(r"^---\s*$", re.M)


@dataclass(frozen=True)
class Prompt:
    """A template split into its system and user parts, and its hash."""

    system: str
    user: str
    hash: str

    @classmethod
    def of(cls, template: str) -> Prompt:
        parts = _SPLIT.split(template, maxsplit=1)
        system, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
        if "{query}" not in user or "{text}" not in user:
            raise ValueError("the user part needs {query} and {text}")
        digest = hashlib.sha256(template.encode()).hexdigest()[:12]
        return cls(system.strip(), user.strip(), digest)

    @classmethod
    def read(cls, path: Path | None) -> Prompt:
        """The template at `path` (None: the default); a ConfigError names the problem."""
        if path is None:
            return cls.of(DEFAULT_TEMPLATE)
        try:
            return cls.of(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ConfigError("judge.prompt_file", f"{path}: {error}") from error

    def messages(self, values: Mapping[str, str]) -> list[dict[str, str]]:
        """The chat messages for one pair: its query, title, text and ids filled in."""

        def fill(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), text)

        messages = [{"role": "user", "content": fill(self.user)}]
        if self.system:
            messages.insert(0, {"role": "system", "content": fill(self.system)})
        return messages
