"""Where configuration values come from: the YAML file, `RANKMON_` variables, typed reading.

The file gives a tree of mappings; each environment variable `RANKMON_A__B__C=value` then sets
`a.b.c` in that tree, its value parsed as a YAML scalar or flow list (`9500` is a number,
`[5, 10]` a list, `a:9092,b:9092` a string that list-valued keys split on commas). Only
variables with `__` in their name are overrides, so a password variable such as
`RANKMON_SASL_PASSWORD` (named by `password_env`) is never mistaken for one. Only a variable's
string is split: in the file a list is a YAML list, and `cutoffs: "10"` is refused, not read
as `[10]`.

`ConfigSection` reads one mapping of that tree: every read names the dotted key, every problem
becomes a `ConfigError` naming it (and the variable that set it, if one did), and `finish()`
rejects the keys nobody asked for, suggesting the closest valid one.
"""

from __future__ import annotations

import difflib
import math
import re
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

import yaml

from monitor.errors import ConfigError, InputError
from monitor.values import Duration, parse_duration

__all__ = [
    "ENV_PREFIX",
    "MAX_CONFIG_VALUES",
    "REQUIRED",
    "ConfigSection",
    "apply_environment",
    "as_bool",
    "as_choice",
    "as_duration",
    "as_int",
    "as_int_list",
    "as_number",
    "as_path",
    "as_positive_duration",
    "as_positive_number",
    "as_str",
    "as_str_list",
    "as_str_map",
    "describe",
    "echoes",
    "enclosing_item",
    "expansion_problem",
    "key_lines",
    "line_of",
    "read_path",
    "read_secret",
    "read_yaml",
    "set_aside",
]

ENV_PREFIX: Final = "RANKMON_"
_LEVEL_SEPARATOR: Final = "__"
# The most values a config may hold once its YAML aliases are expanded. A config is a few
# hundred; a "billion laughs" file of 1 KB expands to 10^9 (describing one of its values in
# an error took 23 s and ended in a MemoryError).
MAX_CONFIG_VALUES: Final = 100_000

T = TypeVar("T")


class _EnvironmentText(str):
    """A string an environment variable set: list-valued keys split it on commas."""

    __slots__ = ()


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()


def read_yaml(path: Path) -> dict[str, Any]:
    """The file's top-level mapping; `InputError` ("path:line: problem") if it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(str(path), error.strerror or str(error)) from error
    except UnicodeDecodeError as error:
        raise InputError(str(path), "not UTF-8 text") from error
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or "malformed"
        line = mark.line + 1 if mark is not None else None
        raise InputError(str(path), f"not valid YAML: {problem}", line) from error
    except ValueError as error:
        # PyYAML raises a bare ValueError for impossible dates such as 2026-13-45.
        raise InputError(str(path), f"not valid YAML: {error}") from error
    if data is None:
        return {}
    problem = expansion_problem(data)
    if problem is not None:
        raise InputError(str(path), problem)
    if not isinstance(data, dict):
        raise InputError(str(path), "the top level must be a mapping of sections (kafka, ...)")
    return data


def expansion_problem(data: Any, limit: int = MAX_CONFIG_VALUES) -> str | None:
    """Why `data` (parsed YAML) is refused: more than `limit` values once its aliases are
    expanded, or an alias inside itself. None if it is fine. Linear in the distinct nodes:
    a shared node is sized once."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, dict | list) or (id(node) in sizes and not children_done):
            continue
        children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else node
        if children_done:
            open_nodes.discard(id(node))
            size = 1 + sum(sizes.get(id(c), 1) for c in children)
            if size > limit:
                return (
                    f"not accepted: its aliases expand to more than {limit:,} values "
                    "(a YAML alias bomb?)"
                )
            sizes[id(node)] = size
            continue
        if id(node) in open_nodes:
            return "not accepted: a YAML alias refers to a value inside itself"
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if isinstance(child, dict | list))
    return None


def apply_environment(tree: dict[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """Set each `RANKMON_A__B=value` override in `tree`; return dotted key -> variable name."""
    origins: dict[str, str] = {}
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or _LEVEL_SEPARATOR not in name:
            continue
        parts = name[len(ENV_PREFIX) :].lower().split(_LEVEL_SEPARATOR)
        dotted = ".".join(parts)
        if not all(parts):
            raise ConfigError(dotted, f"{name} has an empty level (use one '__' between keys)")
        try:
            value = yaml.safe_load(environ[name])
        except (yaml.YAMLError, ValueError):  # ValueError: impossible dates
            # Not YAML, so text as written: a cron expression (`*/10 * * * *` starts like a
            # YAML alias), a query string. The key's own reader says if text will not do.
            value = environ[name]
        problem = expansion_problem(value)
        if problem is not None:
            raise ConfigError(dotted, f"{name} is {problem}")
        if isinstance(value, str):
            value = _EnvironmentText(value)
        _set_path(tree, parts, value, name)
        origins[dotted] = name
    return origins


def _set_path(tree: dict[str, Any], parts: list[str], value: Any, variable: str) -> None:
    node = tree
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            where = ".".join(parts[: depth + 1])
            raise ConfigError(where, f"is not a section, so {variable} cannot set a key in it")
        node = child
    node[parts[-1]] = value


_PART: Final = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")


def _parts(key: str) -> list[tuple[str, list[int]]] | None:
    """`alerts.rules[1].drop` -> [("alerts", []), ("rules", [1]), ("drop", [])]; None when
    `key` is not such a dotted key."""
    parts = []
    for text in key.split("."):
        match = _PART.fullmatch(text)
        if match is None:
            return None
        parts.append((match[1], [int(i) for i in re.findall(r"\d+", match[2])]))
    return parts


class _SetAside:
    """What stands in a list for an item `set_aside` took out: `ConfigSection.sections`
    skips it, and the items after it keep their numbers."""

    def __repr__(self) -> str:
        return "<set aside>"


def set_aside(tree: dict[str, Any], key: str) -> bool:
    """Take `key` (a `ConfigError`'s dotted key) out of `tree`, so that reading the tree again
    takes its default and goes on to the next problem: a key is deleted where it is (inside a
    list's item too: `comparisons[0].since`), an item (`alerts.rules[1]`) is marked set
    aside. False when there is nothing to take out: a missing key (a required one), an item
    set aside already, or no key of the tree."""
    parts = _parts(key) if key else None
    if not parts:
        return False
    node: Any = tree
    for depth, (name, indexes) in enumerate(parts):
        if not isinstance(node, dict) or name not in node:
            return False
        if depth == len(parts) - 1 and not indexes:
            del node[name]
            return True
        node = node[name]
        for position, index in enumerate(indexes):
            if not isinstance(node, list) or index >= len(node):
                return False
            if depth == len(parts) - 1 and position == len(indexes) - 1:
                if isinstance(node[index], _SetAside):
                    return False
                node[index] = _SetAside()
                return True
            node = node[index]
    return False


def enclosing_item(key: str) -> str | None:
    """The list item `key` lies in (`alerts.rules[1].drop` -> `alerts.rules[1]`; an item is
    its own), or None for a key outside every list."""
    end = key.rfind("]")
    return key[: end + 1] if end >= 0 else None


def echoes(key: str, set_aside_keys: Iterable[str]) -> bool:
    """Whether a problem at `key` may only be the echo of keys set aside: one of them again
    (a required key now missing) or a key holding one (a rule left without its condition)."""
    return any(
        key == gone or gone.startswith(key + ".") or gone.startswith(key + "[")
        for gone in set_aside_keys
    )


def key_lines(path: Path) -> dict[str, int]:
    """The line (from 1) each dotted key of the YAML file at `path` is written on, for
    reporting problems in the file's order; empty when the file cannot be read again."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):
        return {}
    return dict(_node_lines(root, "")) if root is not None else {}


def _node_lines(node: yaml.Node, prefix: str) -> Iterator[tuple[str, int]]:
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            name = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            yield name, key_node.start_mark.line + 1
            yield from _node_lines(value, name)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            name = f"{prefix}[{index}]"
            yield name, item.start_mark.line + 1
            yield from _node_lines(item, name)


def line_of(key: str, lines: Mapping[str, int]) -> int | None:
    """The line of `key`, or of its nearest ancestor written in the file (None: neither)."""
    while key:
        if key in lines:
            return lines[key]
        cut = max(key.rfind("."), key.rfind("["))
        key = key[:cut] if cut > 0 else ""
    return None


class ConfigSection:
    """One mapping of the config tree, read key by key with typed parsers."""

    def __init__(
        self,
        data: Mapping[str, Any],
        prefix: str,
        origins: Mapping[str, str],
        label: str = "",
        base: Path | None = None,
    ) -> None:
        self._data = data
        self._prefix = prefix
        self._origins = origins
        self._asked: set[str] = set()
        self.label = label  # starts every problem of this section and those below it
        self.base = base if base is not None else Path()  # relative paths start here

    def key(self, name: str) -> str:
        """The dotted key of `name` in this section (`""`: the section itself)."""
        if not name:
            return self._prefix
        return f"{self._prefix}.{name}" if self._prefix else name

    def error(self, name: str, problem: str) -> ConfigError:
        """A `ConfigError` for `name`, saying which environment variable set it, if one did."""
        dotted = self.key(name)
        for key, variable in self._origins.items():
            if dotted == key or dotted.startswith(key + ".") or key.startswith(dotted + "."):
                problem = f"{problem} (set by {variable})"
                break
        return ConfigError(dotted, self.label + problem)

    def get(self, name: str, parse: Callable[[Any], T], default: T | _Required = REQUIRED) -> T:
        """The parsed value of `name`; a missing or null value gives `default`."""
        self._asked.add(name)
        raw = self._data.get(name)
        if raw is None:
            if isinstance(default, _Required):
                raise self.error(name, "is required")
            return default
        if isinstance(raw, _EnvironmentText):
            # A variable's string: read as plain text (nothing keeps the marker), and only
            # where that is refused, marked, so that a list-valued key splits it on commas.
            try:
                return parse(str(raw))
            except ValueError:
                pass
        try:
            return parse(raw)
        except ValueError as error:
            raise self.error(name, str(error)) from error

    def has(self, name: str) -> bool:
        """Whether `name` is set to something other than null."""
        return self._data.get(name) is not None

    def section(self, name: str) -> ConfigSection:
        """The sub-mapping `name` (missing or null: empty)."""
        return ConfigSection(
            self.mapping(name), self.key(name), self._origins, self.label, self.base
        )

    def sections(self, name: str) -> list[ConfigSection]:
        """The list of mappings `name` (missing or null: none), `name[i]` each."""
        return [item for _, item in self.indexed_sections(name)]

    def indexed_sections(self, name: str) -> list[tuple[int, ConfigSection]]:
        """`sections` with each item's index in the list (items `set_aside` took out are
        skipped; the others keep their index)."""
        none: list[Mapping[str, Any]] = []
        items = self.get(name, _as_list_of_mappings, none)
        return [
            (
                index,
                ConfigSection(
                    item, f"{self.key(name)}[{index}]", self._origins, self.label, self.base
                ),
            )
            for index, item in enumerate(items)
            if not isinstance(item, _SetAside)
        ]

    def labelled(self, label: str) -> ConfigSection:
        """This section with its problems (and its sub-sections') starting with `label`."""
        section = ConfigSection(self._data, self._prefix, self._origins, label, self.base)
        section._asked = self._asked
        return section

    def present(self, name: str) -> bool:
        """Whether `name` is written in this section (even as null)."""
        return name in self._data

    def names(self) -> list[str]:
        """The keys written in this section, in order."""
        return [str(name) for name in self._data]

    def mapping(self, name: str) -> Mapping[str, Any]:
        """The sub-mapping `name` as it is, for parts that parse their own keys."""
        empty: Mapping[str, Any] = {}
        return self.get(name, _as_mapping, empty)

    def finish(self) -> None:
        """Reject keys nobody asked for, naming the closest valid key."""
        for name in self._data:
            if name in self._asked:
                continue
            if not isinstance(name, str):
                raise self.error(str(name), "keys must be strings")
            close = difflib.get_close_matches(name, sorted(self._asked), n=1, cutoff=0.6)
            hint = f"; did you mean '{self.key(close[0])}'?" if close else ""
            valid = ", ".join(sorted(self._asked))
            raise self.error(name, f"unknown key{hint} (valid here: {valid})")


def _short_repr() -> reprlib.Repr:
    short = reprlib.Repr()  # keyword arguments only from Python 3.12 on
    short.maxlevel, short.maxdict, short.maxlist = 2, 4, 4
    short.maxstring = short.maxother = 60
    return short


_SHORT = _short_repr()


def describe(value: Any) -> str:
    """A short text of a value for an error message: bounded however large the value."""
    return _SHORT.repr(value)


def _kind(value: Any) -> str:
    kind = "str" if isinstance(value, str) else type(value).__name__
    return f"{describe(value)} ({kind})"


def _as_list_of_mappings(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(
        isinstance(item, Mapping | _SetAside) for item in value
    ):
        raise ValueError(f"expected a list of mappings, got {_kind(value)}")
    return value


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of keys, got {_kind(value)}")
    return value


def as_str(value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {_kind(value)}")
    return str(value)


def as_path(value: Any) -> Path:
    """A file path; `~` and `~user` expand to home directories."""
    text = as_str(value)
    if "\0" in text:
        raise ValueError("a path cannot contain a NUL character")
    try:
        return Path(text).expanduser()
    except RuntimeError as error:  # ~user of an unknown user
        raise ValueError(f"cannot expand {text!r}: {error}") from error


def as_bool(value: Any) -> bool:
    """`true` or `false`."""
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {_kind(value)}")
    return value


def as_number(minimum: float | None = None, maximum: float | None = None) -> Callable[[Any], float]:
    """A number (integer or float) in [minimum, maximum]."""

    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise ValueError(f"expected a number, got {_kind(value)}")
        if minimum is not None and value < minimum:
            raise ValueError(f"must be at least {minimum:g}, got {describe(value)}")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be at most {maximum:g}, got {describe(value)}")
        return float(value)

    return parse


def as_positive_number(value: Any) -> float:
    """A number greater than zero."""
    number = as_number(0.0)(value)
    if not number > 0.0:
        raise ValueError(f"must be > 0, got {describe(value)}")
    return number


def as_int(minimum: int, maximum: int | None = None) -> Callable[[Any], int]:
    """An integer in [minimum, maximum] (booleans are not integers here)."""

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {_kind(value)}")
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            raise ValueError(f"must be at least {minimum}{upper}, got {value}")
        return value

    return parse


def as_choice(*choices: str) -> Callable[[Any], str]:
    """One of `choices`, spelled exactly."""

    def parse(value: Any) -> str:
        if value not in choices:
            near = [c for c in choices if isinstance(value, str) and c.lower() == value.lower()]
            hint = f": did you mean {near[0]!r}? (spelled exactly)" if near else ""
            raise ValueError(f"expected one of {', '.join(choices)}, got {_kind(value)}{hint}")
        return str(value)

    return parse


def as_duration(value: Any) -> Duration:
    """A duration with its unit (`15s`); a bare number is refused, its unit is ambiguous."""
    if not isinstance(value, str):
        raise ValueError(f"expected a duration with a unit such as 15s or 5m, got {_kind(value)}")
    return parse_duration(value)


def as_positive_duration(value: Any) -> Duration:
    """`as_duration`, longer than zero (an interval, a timeout, a window)."""
    duration = as_duration(value)
    if duration.ms <= 0:
        raise ValueError(f"must be longer than zero, got {duration.text}")
    return duration


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, _EnvironmentText):
        # An environment override such as `a:9092,b:9092` arrives as one string.
        try:
            return [yaml.safe_load(item) for item in value.split(",")]
        except (yaml.YAMLError, ValueError) as error:
            raise ValueError(f"cannot split {value!r} into a list") from error
    if isinstance(value, str):
        raise ValueError(
            f"expected a list, got {_kind(value)}: write [{value}] for a list of one "
            "(only an environment variable's value is split on commas)"
        )
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {_kind(value)}")
    return value


def as_str_list(value: Any) -> tuple[str, ...]:
    """A list of non-empty strings (from an environment variable: a comma-separated one)."""
    items = _as_list(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"expected a list of non-empty strings, found {_kind(item)}")
    return tuple(str(item) for item in items)


def as_str_map(value: Any) -> tuple[tuple[str, str], ...]:
    """A mapping of non-empty string keys to string values (numbers and booleans are
    refused, not coerced: write them quoted), as (key, value) pairs in the file's order."""
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of strings, got {_kind(value)}")
    pairs = []
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"keys must be non-empty strings, found {_kind(key)}")
        if not isinstance(item, str):
            raise ValueError(f"{key}: expected a string, got {_kind(item)}")
        pairs.append((key, item))
    return tuple(pairs)


def as_int_list(minimum: int, maximum: int | None = None) -> Callable[[Any], tuple[int, ...]]:
    """A non-empty list of distinct integers in [minimum, maximum] (from an environment
    variable: a comma-separated string)."""
    item_parse = as_int(minimum, maximum)

    def parse(value: Any) -> tuple[int, ...]:
        items = tuple(item_parse(item) for item in _as_list(value))
        if not items:
            raise ValueError("must not be empty")
        duplicates = sorted({item for item in items if items.count(item) > 1})
        if duplicates:
            raise ValueError(f"lists {duplicates[0]} more than once")
        return items

    return parse


def read_path(section: ConfigSection, name: str, base: Path) -> Path | None:
    """An optional path to an existing file, relative to `base` unless absolute."""
    relative = section.get(name, as_path, None)
    if relative is None:
        return None
    path = base / relative
    if not path.is_file():
        raise section.error(name, f"file not found: {path}")
    return path


def read_secret(
    section: ConfigSection,
    stem: str,
    environ: Mapping[str, str],
    base: Path,
    *,
    inline: bool = False,
) -> tuple[str, str | None, Path | None] | None:
    """The secret's value and where it comes from, `(value, variable, file)`: `<stem>_env`
    names an environment variable, `<stem>_file` a file; None when neither is set.

    An inline `<stem>` is refused unless `inline` (a URL that may carry credentials):
    plaintext secrets in a config file end up in git and in ConfigMaps. At most one of the
    ways is set. Surrounding line breaks of a secret file (as `echo` writes) are not part
    of it, nor, for an inline-capable one, surrounding spaces.
    """
    if section.has(stem) and not inline:
        raise section.error(stem, f"inline secrets are refused; use {stem}_env or {stem}_file")
    written = section.get(stem, as_str, None)  # (also marks it known when refused above)
    variable = section.get(f"{stem}_env", as_str, None)
    file = read_path(section, f"{stem}_file", base)
    ways = [f"{stem}_env"] if variable is not None else []
    ways += [f"{stem}_file"] if file is not None else []
    if written is not None:
        ways.insert(0, stem)
    if len(ways) > 1:
        every = f"{stem}, {stem}_env or {stem}_file" if inline else f"{stem}_env or {stem}_file"
        raise section.error(ways[1], f"set one of {every}, not {' and '.join(ways)}")
    strip = str.strip if inline else _strip_line_breaks
    if written is not None:
        return strip(written), None, None
    if variable is not None:
        value = environ.get(variable, "")
        if not value:
            raise section.error(f"{stem}_env", f"environment variable {variable} is not set")
        return value, variable, None
    if file is not None:
        try:
            value = strip(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            raise section.error(f"{stem}_file", f"cannot read {file}: {error}") from error
        if not value:
            raise section.error(f"{stem}_file", f"{file} is empty")
        return value, None, file
    return None


def _strip_line_breaks(text: str) -> str:
    return text.rstrip("\r\n")
