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

A sub-section made with `subsection` is declared by its own class (read, written and listed
through it, null when `optional` and not written); a `secret` is a `Secret` read from
`<key>_env` or `<key>_file`, never from the file itself, and written as where it comes from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from monitor.sections import REQUIRED, ConfigSection, as_path, read_secret
from monitor.values import Duration, Secret

__all__ = [
    "DeclaredKey",
    "Setting",
    "declared_keys",
    "read_setting",
    "read_settings",
    "secret",
    "setting",
    "subsection",
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
    secret: bool = False  # read from `<key>_env` or `<key>_file`, written as where it is
    inline: bool = False  # a secret that may also be written inline (a URL)
    make: Callable[[str, str | None, Path | None], Any] | None = None  # the secret's value
    part: type[Any] | None = None  # a sub-section whose keys this class declares
    optional: bool = False  # a part that is None unless written


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


def secret(
    *,
    doc: str,
    required: bool = False,
    key: str | None = None,
    inline: bool = False,
    make: Callable[[str, str | None, Path | None], Any] | None = None,
) -> Any:
    """A `Secret` field: its value never sits in the file; `<key>_env` names the environment
    variable holding it, `<key>_file` a file (a mounted Kubernetes secret), not both. An
    inline `<key>` is refused, unless `inline` (a URL, printed masked). `make(value,
    variable, file)` builds the field's value (default: a `Secret`). Written back (and in
    `check-config`) as where it comes from."""
    spec = Setting(_not_read, doc, written, key, secret=True, inline=inline, make=make)
    if required:
        return field(metadata={"setting": spec})
    return field(default=None, metadata={"setting": spec})


def subsection(cls: type[Any], *, doc: str, optional: bool = False, key: str | None = None) -> Any:
    """A sub-section whose keys `cls` declares in turn. `optional`: None unless the file
    writes it (its keys are then checked only when it is there)."""
    spec = Setting(_not_read, doc, written, key, part=cls, optional=optional)
    if optional:
        return field(default=None, metadata={"setting": spec})
    return field(default_factory=cls, metadata={"setting": spec})


def _not_read(value: Any) -> Any:
    raise AssertionError("secrets and sub-sections are read by read_settings itself")


def _settings(cls: type[Any]) -> Iterator[tuple[dataclasses.Field[Any], Setting]]:
    for item in dataclasses.fields(cls):
        spec = item.metadata.get("setting")
        if isinstance(spec, Setting):
            yield item, spec


def read_settings(
    cls: type[S], section: ConfigSection, *, environ: Mapping[str, str] | None = None, **given: Any
) -> S:
    """`cls` read from `section` (its declared fields; `given` fills the others) and checked;
    `section` is finished (an unknown key is refused). Secrets named by `<key>_env` are read
    from `environ` (none: every such variable is unset)."""
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
        if spec.part is not None:
            values[item.name] = _read_part(spec, where, name, environ)
            continue
        if spec.secret:
            values[item.name] = _read_secret(spec, where, name, environ, required=_required(item))
            continue
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


def read_setting(cls: type[Any], name: str, section: ConfigSection) -> Any:
    """The one declared field `name` of `cls` read from `section` (a plain key with a
    literal default), for a key others depend on before the rest is read; pass it on to
    `read_settings` as given."""
    for item, spec in _settings(cls):
        if item.name == name and "." not in (spec.key or name):
            if spec.part is not None or spec.secret or spec.derive is not None or spec.path:
                break
            default = REQUIRED if item.default is dataclasses.MISSING else item.default
            return section.get(spec.key or name, spec.read, default)
    raise ValueError(f"{cls.__name__}.{name} is not a plain declared key")


def _required(item: dataclasses.Field[Any]) -> bool:
    missing = dataclasses.MISSING
    return item.default is missing and item.default_factory is missing


def _read_part(
    spec: Setting, where: ConfigSection, name: str, environ: Mapping[str, str] | None
) -> Any:
    assert spec.part is not None
    part = where.section(name)
    if spec.optional and not where.has(name):
        return None
    return read_settings(spec.part, part, environ=environ)


def _read_secret(
    spec: Setting,
    where: ConfigSection,
    name: str,
    environ: Mapping[str, str] | None,
    *,
    required: bool,
) -> Any:
    env = {} if environ is None else environ
    found = read_secret(where, name, env, where.base, inline=spec.inline)
    if found is None:
        if required:
            ways = (
                f"{name}, {name}_env or {name}_file"
                if spec.inline
                else f"{name}_env or {name}_file"
            )
            # An inline secret is missing at its own key: after a bad `url` was set aside to
            # read on, its absence is that problem's echo, not a second problem.
            key = name if spec.inline else f"{name}_env"
            raise where.error(key, f"{name} is required: set {ways}")
        return None
    value, variable, file = found
    if spec.make is None:
        return Secret(value, env=variable, file=file)
    try:
        return spec.make(value, variable, file)
    except ValueError as error:
        way = f"{name}_env" if variable is not None else f"{name}_file" if file else name
        raise where.error(way, str(error)) from None


def write_settings(settings: Any) -> dict[str, Any]:
    """The declared fields of `settings` as config data, nested by their keys."""
    out: dict[str, Any] = {}
    for item, spec in _settings(type(settings)):
        *parents, name = (spec.key or item.name).split(".")
        node = out
        for parent in parents:
            node = node.setdefault(parent, {})
        value = getattr(settings, item.name)
        if spec.secret:
            if spec.inline:  # masked when printed
                inline = value is not None and value.env is None and value.file is None
                node[name] = str(value) if inline else None
            node[f"{name}_env"] = None if value is None else value.env
            node[f"{name}_file"] = None if value is None or value.file is None else str(value.file)
        elif spec.part is not None:
            node[name] = None if value is None else write_settings(value)
        else:
            node[name] = spec.write(value)
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


def declared_keys(cls: type[Any], prefix: str = "") -> list[DeclaredKey]:
    """The declared keys of `cls`, in the order they are read: a sub-section's keys dotted
    (an optional one as itself, null by default), a secret's two (`<key>_env`, `_file`)."""
    keys = []
    for item, spec in _settings(cls):
        key = prefix + (spec.key or item.name)
        if spec.part is not None and not spec.optional:
            keys.extend(declared_keys(spec.part, key + "."))
        elif spec.secret:
            required = _required(item)
            if spec.inline:  # one of the three ways: the inline one is the example's
                keys.append(DeclaredKey(key, REQUIRED if required else None, spec.doc, False))
            default = REQUIRED if required and not spec.inline else None
            keys.append(DeclaredKey(f"{key}_env", default, spec.doc, False))
            keys.append(DeclaredKey(f"{key}_file", None, spec.doc, False))
        elif item.default is dataclasses.MISSING and spec.part is None:
            keys.append(DeclaredKey(key, REQUIRED, spec.doc, spec.derive is not None))
        else:
            default = None if spec.part is not None else spec.write(item.default)
            keys.append(DeclaredKey(key, default, spec.doc, spec.derive is not None))
    return keys
