"""rankmon's optional C accelerators (`monitor._speedups`, built from the C sources setup.py lists:
`_speedups.c`, the module, and each stage's own C and binding next to its Python).

pip builds the extension with gcc when it installs rankmon. Without it (or with
RANKMON_SPEEDUPS=off, to compare or to rule the C code out) every caller takes the
pure-Python path, which is the reference the accelerators are tested against: same numbers,
same outcomes, only slower. `speedups_active()` says which path this process takes, and
`speedups` is the module (None when it was not built): its signatures are
`monitor/_speedups.pyi`, the one place they are written in Python.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from monitor.errors import ConfigError

if TYPE_CHECKING:  # annotations only
    pass

try:
    from monitor import _speedups as speedups
except ImportError:  # built without a C compiler: the pure-Python path only
    speedups = None  # type: ignore[assignment]

__all__ = [
    "DecodedEvents",
    "judgment_index",
    "speedups",
    "speedups_active",
    "speedups_built",
]


def speedups_built() -> bool:
    """True when the extension module was built and imports."""
    return speedups is not None


_ON = ("", "on", "1", "true", "yes")
_OFF = ("off", "0", "false", "no")


def speedups_active() -> bool:
    """Built, and not turned off by RANKMON_SPEEDUPS (off, 0, false, no; on, 1, true, yes or
    unset: on). Any other value raises `ConfigError`: a typo must not pass for "on"."""
    setting = os.environ.get("RANKMON_SPEEDUPS", "on").strip().lower()
    if setting in _OFF:
        return False
    if setting not in _ON:
        raise ConfigError(
            "RANKMON_SPEEDUPS", f"must be on or off (or 1/0, true/false, yes/no), got {setting!r}"
        )
    return speedups_built()


def judgment_index(
    query_ids: Sequence[str],
    judgments: Sequence[dict[str, int]],
    code_of: dict[int, int] | None = None,
) -> speedups.JudgmentIndex | None:
    """Per query (by position) its doc id -> grade code 1..255, in C; None: no speedups.

    `judgments[i]` maps doc -> code, or doc -> grade when `code_of` (grade -> code) is given."""
    if not speedups_active():
        return None
    return speedups.JudgmentIndex(query_ids, judgments, code_of)


class DecodedEvents(NamedTuple):
    """What the C scanner made of a poll's record values: `speedups.decode_events`' result
    (monitor/_speedups.pyi) with its fields named.

    `status` has one byte per record, its `speedups.SCAN_*` code (accepted, punted to the
    reference decoder, unknown query); the other fields hold the accepted records only, in
    record order.
    """

    status: bytes
    event_ids: list[str]
    query_ids: list[str]
    rows: list[int]  # evaluation-set rows (`JudgmentIndex.row_of`)
    times_ms: list[int]
    segments: list[tuple[str, ...]]  # values of the segment keys asked for, in that order
    codes: bytes  # grade codes of each ranking's first `depth` documents, concatenated
    lengths: list[int]  # full ranking lengths
    added: bytes  # codes of inline grades of unjudged documents (the ideal's), concatenated
    added_counts: list[int]  # how many of `added` are each event's
