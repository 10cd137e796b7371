"""A segment filter as the config writes it: `{key: value}` over configured segment keys.

An alert rule's `segment`, a comparison's `baseline` and `candidate` are such filters. A filter
names a subset of the keys; windows carry all of them, so a filter matches by subset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from monitor.sections import REQUIRED, ConfigSection, describe
from monitor.windows.summary import Segment

__all__ = ["read_segment_filter"]


def read_segment_filter(
    section: ConfigSection, name: str, segment_keys: Sequence[str], *, required: bool = False
) -> Segment | None:
    """The filter under `name` in `section`, as a sorted `Segment`; None when absent and not
    `required`. A key that is not a configured segment key, or a value that is not a string,
    is a `ConfigError` naming it."""
    raw = section.get(name, _segment_mapping, REQUIRED if required else None)
    if raw is None:
        return None
    for key, value in raw.items():
        if key not in segment_keys:
            raise section.error(
                f"{name}.{key}", f"is not a configured segment key {list(segment_keys)}"
            )
        if not isinstance(value, str):
            raise section.error(f"{name}.{key}", f"must be a string, got {describe(value)}")
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def _segment_mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise ValueError("must be a mapping of segment key to value")
    return value
