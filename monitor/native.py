"""rankmon's optional C accelerators (`monitor._speedups`, built from the C sources setup.py lists:
`_native/speedups.c`, the module, and each stage's own C next to its Python).

pip builds the extension with gcc when it installs rankmon. Without it (or with
RANKMON_SPEEDUPS=off, to compare or to rule the C code out) every caller takes the
pure-Python path, which is the reference the accelerators are tested against: same numbers,
same outcomes, only slower. `speedups_active()` says which path this process takes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from monitor.errors import ConfigError

if TYPE_CHECKING:  # annotations only
    import numpy.typing as npt

try:
    from monitor import _speedups
except ImportError:  # built without a C compiler: the pure-Python path only
    _speedups = None  # type: ignore[assignment]

__all__ = [
    "DecodedEvents",
    "decode_events",
    "ideal_rows",
    "judgment_index",
    "measure_codes",
    "order_run",
    "parse_records",
    "qrels_index",
    "speedups_active",
    "speedups_built",
]


def speedups_built() -> bool:
    """True when the extension module was built and imports."""
    return _speedups is not None


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
) -> _speedups.JudgmentIndex | None:
    """Per query (by position) its doc id -> grade code 1..255, in C; None: no speedups.

    `judgments[i]` maps doc -> code, or doc -> grade when `code_of` (grade -> code) is given."""
    if not speedups_active():
        return None
    return _speedups.JudgmentIndex(query_ids, judgments, code_of)


class DecodedEvents(NamedTuple):
    """What the C scanner made of a poll's record values.

    `status` has one byte per record (0 accepted, 1 punted to the reference decoder, 2
    unknown query); the other fields hold the accepted records only, in record order.
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


def decode_events(
    index: _speedups.JudgmentIndex,
    values: Sequence[bytes | None],
    timestamps_ms: Sequence[int],
    *,
    now_ms: int,
    max_depth: int,
    max_bytes: int,
    max_future_ms: int,
    segment_keys: Sequence[str],
    use_event_time: bool,
    depth: int,
    grade_codes: bytes | None,
    max_id_bytes: int = sys.maxsize,
    max_value_bytes: int = sys.maxsize,
) -> DecodedEvents:
    """Scan a poll's record values in C (see monitor/_native/speedups.c).

    `grade_codes` (inline grade -> code, `BatchScorer.inline_grade_codes`) scores each event's
    inline judgments with it; None ignores them. An event holding an id longer than
    `max_id_bytes`, or a segment value longer than `max_value_bytes`, as written, is punted
    (the reference decoder measures it)."""
    scanned = _speedups.decode_events(
        index,
        values,
        timestamps_ms,
        now_ms,
        max_depth,
        max_bytes,
        max_future_ms,
        segment_keys,
        use_event_time,
        depth,
        grade_codes,
        max_id_bytes,
        max_value_bytes,
    )
    return DecodedEvents(*scanned)


def measure_codes(
    codes: bytes,
    *,
    taken: npt.NDArray[Any],
    lengths: npt.NDArray[Any],
    rows: npt.NDArray[Any],
    kinds: npt.NDArray[Any],
    gain_of: npt.NDArray[Any],
    cutoffs: npt.NDArray[Any],
    ideal_of: npt.NDArray[Any],
    gains: npt.NDArray[Any],
    relevant: npt.NDArray[Any],
    judged: npt.NDArray[Any],
    discounts: npt.NDArray[Any],
    ideals: npt.NDArray[Any],
    n_ideals: int,
    num_rel: npt.NDArray[Any],
    when_zero: float,
    out: npt.NDArray[Any],
) -> None:
    """Fill `out` with the measures of coded rankings (see monitor/scoring/plan.py)."""
    _speedups.measure_codes(
        codes,
        taken,
        lengths,
        rows,
        kinds,
        gain_of,
        cutoffs,
        ideal_of,
        gains,
        relevant,
        judged,
        discounts,
        ideals,
        n_ideals,
        num_rel,
        when_zero,
        out,
    )


def ideal_rows(
    offsets: npt.NDArray[Any],
    ideal_codes: npt.NDArray[Any],
    rows: npt.NDArray[Any],
    added: bytes,
    added_counts: npt.NDArray[Any],
    *,
    spec_gain: npt.NDArray[Any],
    spec_cutoff: npt.NDArray[Any],
    gains: npt.NDArray[Any],
    order: npt.NDArray[Any],
    n_codes: int,
    relevant: npt.NDArray[Any],
    discounts: npt.NDArray[Any],
    base_ideal: npt.NDArray[Any],
    base_num_rel: npt.NDArray[Any],
    out_ideal: npt.NDArray[Any],
    out_num_rel: npt.NDArray[Any],
) -> None:
    """Fill the IDCG columns and num_rel of each ranking: its query's, or recomputed where its
    inline grades add to its ideal ranking; with `base_ideal` and `base_num_rel` empty, every
    ranking's from its query's ideal codes (see monitor/scoring/plan.py)."""
    _speedups.ideal_rows(
        offsets,
        ideal_codes,
        rows,
        added,
        added_counts,
        spec_gain,
        spec_cutoff,
        gains,
        order,
        n_codes,
        relevant,
        discounts,
        base_ideal,
        base_num_rel,
        out_ideal,
        out_num_rel,
    )


_Record = TypeVar("_Record", bound=tuple[Any, ...])


def qrels_index(data: bytes) -> _speedups.JudgmentIndex | None:
    """TREC qrels read straight into a judgment index, or None to leave the file to the Python
    path (see monitor/scoring/qrels_scan.h); callers check speedups_active() first."""
    return _speedups.JudgmentIndex.from_qrels(data)


def order_run(
    data: bytes, float32: bool, max_retrieved: int
) -> tuple[str, dict[str, tuple[str, ...]]] | None:
    """A TREC run's tag and rankings ordered as trec_eval orders them, or None to leave the file
    to the Python path (see monitor/trec/run_order.h); callers check speedups_active() first."""
    result: tuple[str, dict[str, tuple[str, ...]]] | None = _speedups.order_run(
        data, float32, max_retrieved
    )
    return result


def parse_records(
    buffer: bytes | bytearray,
    *,
    pos: int,
    count: int,
    base_offset: int,
    first_timestamp: int,
    max_timestamp: int,
    log_append_time: bool,
    topic: str,
    partition: int,
    record_type: type[_Record],
) -> tuple[list[_Record], str | None]:
    """The records of one decompressed Kafka v2 batch, and what is corrupt if anything is
    (see monitor/kafka/record_batch.h); callers check speedups_active() first."""
    return _speedups.parse_records(
        buffer,
        pos,
        count,
        base_offset,
        first_timestamp,
        max_timestamp,
        log_append_time,
        topic,
        partition,
        record_type,
    )
