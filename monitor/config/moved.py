"""Keys that moved to another section, still read from where they were through 0.2.x.

Each key lives in the section of the stage that consumes it. Four limits of an event sat in
the sections of other stages and moved to `events` (ingest's) after 0.1.0; a file or a
`RANKMON_A__B` variable that still writes the old key is read as if it wrote the new one,
with a notice that `run`, `replay` and `check-config` print at start. Writing both is an
error (which one is meant?). A problem with the value names the key as it was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from monitor.errors import ConfigError

__all__ = ["MOVED", "as_written", "move_keys", "notices"]

# old dotted key -> new dotted key; the old keys are read through 0.2.x and refused from 0.3.0.
MOVED: Final[Mapping[str, str]] = {
    "metrics.max_depth": "events.max_depth",
    "kafka.max_id_bytes": "events.max_id_bytes",
    "windows.max_future": "events.max_future",
    "windows.time_source": "events.time_source",
}


def move_keys(tree: dict[str, Any], origins: dict[str, str]) -> dict[str, str]:
    """Move each old key `tree` writes to its new place (and its variable in `origins`);
    return new key -> old key for those moved. Raises `ConfigError` when both are written."""
    moved: dict[str, str] = {}
    for old, new in MOVED.items():
        old_section, key = old.split(".")
        new_section, new_key = new.split(".")
        section = tree.get(old_section)
        if not isinstance(section, dict) or key not in section:
            continue
        target = tree.get(new_section)
        if target is None:
            target = tree[new_section] = {}
        if not isinstance(target, dict):
            continue  # the new section's own reader says what is wrong with it
        if new_key in target:
            raise ConfigError(old, f"moved to {new}, which is written too: keep {new} only")
        target[new_key] = section.pop(key)
        variable = origins.pop(old, None)
        if variable is not None:
            origins[new] = variable
        moved[new] = old
    return moved


def notices(moved: Mapping[str, str]) -> tuple[str, ...]:
    """One line per moved key, for the log at start."""
    return tuple(
        f"config key '{old}' is now '{new}': read from its old place through 0.2.x, "
        "refused from 0.3.0; move it"
        for new, old in moved.items()
    )


def as_written(problem: ConfigError, moved: Mapping[str, str]) -> ConfigError:
    """`problem`, naming a moved key as the file or variable wrote it."""
    old = moved.get(problem.key)
    if old is None:
        return problem
    return ConfigError(old, f"{problem.problem} (the key is now {problem.key})")
