"""Settings declared once: each field of a stage's settings dataclass says how it is written.

```python
@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    interval: Duration = setting(FIFTEEN_SECONDS, read=as_positive_duration,
                                 doc="how often closed windows are finalized")
```

A field made with `setting` carries its default, the reader of its config value (one of
`monitor.sections`' `as_*`), the writer of its value back to config data (durations as
written, paths and tuples as plain YAML), its one-line doc and, when they differ from the
field's name, its key (`tls.certfile`: a key of a sub-section). From that one declaration:

- `read_settings(cls, section)` reads the section (a missing or null key takes the default;
  `derive` computes a default from the keys read before it; unknown keys are refused by
  `ConfigSection.finish`), then asks the settings' own `problem()` for what only the keys
  together can say (`hop` longer than `size`), as a `ConfigError` naming the key;
- `write_settings(settings)` gives the section back as YAML-ready data for `check-config`;
- `declared_keys(cls)` lists each key with its default as written and its doc, for the
  example config's test and the docs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from monitor.sections import REQUIRED, ConfigSection, as_path
from monitor.values import Duration

__all__ = [
    "DeclaredKey",
    "Setting",
    "declared_keys",
    "read_settings",
    "setting",
    "write_settings",
    "written",
]

S = TypeVar("S")
PathKind = Literal["", "file", "path"]


@dataclass(frozen=True)
class Setting:
    """How one field is written in the config (see `setting`)."""

    read: Callable[[Any], Any]
    doc: str
    write: Callable[[Any], Any]
    key: str | None = None
    derive: Callable[[Mapping[str, Any]], Any] | None = None
    path: PathKind = ""


def written(value: Any) -> Any:
    """A settings value as config data: durations as written, paths as text, tuples as
    lists, everything else as it is."""
    if isinstance(value, Duration):
        return value.text
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [written(item) for item in value]
    return value


def setting(
    default: Any = REQUIRED,
    *,
    read: Callable[[Any], Any],
    doc: str,
    write: Callable[[Any], Any] = written,
    key: str | None = None,
    derive: Callable[[Mapping[str, Any]], Any] | None = None,
    path: PathKind = "",
) -> Any:
    """A dataclass field declared as a config key. `derive`: the default computed from the
    fields read before this one (the default written in the example config is then null);
    `path`: a file path relative to the config file's directory, `file` when it must be an
    existing file."""
    spec = Setting(read, doc, write, key, derive, path)
    metadata = {"setting": spec}
    if default is REQUIRED:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def _settings(cls: type[Any]) -> Iterator[tuple[dataclasses.Field[Any], Setting]]:
    for item in dataclasses.fields(cls):
        spec = item.metadata.get("setting")
        if isinstance(spec, Setting):
            yield item, spec


def read_settings(cls: type[S], section: ConfigSection, **given: Any) -> S:
    """`cls` read from `section` (its declared fields; `given` fills the others) and checked;
    `section` is finished (an unknown key is refused)."""
    values: dict[str, Any] = dict(given)
    parts: dict[str, ConfigSection] = {}
    for item, spec in _settings(cls):
        if item.name in given:
            continue
        *parents, name = (spec.key or item.name).split(".")
        where = section
        for depth in range(len(parents)):
            dotted = ".".join(parents[: depth + 1])
            if dotted not in parts:
                parts[dotted] = where.section(parents[depth])
            where = parts[dotted]
        if spec.derive is not None:
            default = spec.derive(values)
        elif item.default is not dataclasses.MISSING:
            default = item.default
        else:
            default = REQUIRED
        reader = as_path if spec.path else spec.read
        value = where.get(name, reader, default)
        if spec.path and value is not None and where.has(name):
            value = where.base / value
            if spec.path == "file" and not value.is_file():
                raise where.error(name, f"file not found: {value}")
        values[item.name] = value
    for part in sorted(parts, key=len, reverse=True):
        parts[part].finish()
    section.finish()
    settings = cls(**values)
    problem = getattr(settings, "problem", None)
    found = problem() if callable(problem) else None
    if found is not None:
        key, text = found
        raise section.error(key, text)
    return settings


def write_settings(settings: Any) -> dict[str, Any]:
    """The declared fields of `settings` as config data, nested by their keys."""
    out: dict[str, Any] = {}
    for item, spec in _settings(type(settings)):
        *parents, name = (spec.key or item.name).split(".")
        node = out
        for parent in parents:
            node = node.setdefault(parent, {})
        node[name] = spec.write(getattr(settings, item.name))
    return out


@dataclass(frozen=True)
class DeclaredKey:
    """One declared key: its dotted name in its section, its default as the example config
    writes it (`REQUIRED` for a required key), its doc, and whether the default is derived
    from other keys (then the example may write null or the value it derives)."""

    key: str
    default: Any
    doc: str
    derived: bool


def declared_keys(cls: type[Any]) -> list[DeclaredKey]:
    """The declared keys of `cls`, in the order they are read."""
    keys = []
    for item, spec in _settings(cls):
        if item.default is dataclasses.MISSING:
            default: Any = REQUIRED
        else:
            default = spec.write(item.default)
        keys.append(DeclaredKey(spec.key or item.name, default, spec.doc, spec.derive is not None))
    return keys
