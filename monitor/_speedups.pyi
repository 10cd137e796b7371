"""monitor._speedups: the per-document work of rankmon's hot paths, in C (built from the
sources setup.py lists: `_speedups.c` and each stage's binding next to its C).

This stub is the one Python signature of every function here, with its contract; the C
docstrings point to it. Grade codes are one byte: 0 = not judged (or right padding),
1..255 = the caller's codes.
"""

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy.typing as npt

_Buffer = bytes | npt.NDArray[Any]

# decode_events' status of each record: accepted, punted (decode it with
# monitor.ingest.events, which decides every rejection and its reason), unknown query.
SCAN_ACCEPTED: int
SCAN_PUNTED: int
SCAN_UNKNOWN_QUERY: int

class JudgmentIndex:
    """Per query row, doc id -> grade code 1..255 (`judgments[row]` maps doc -> code, or
    doc -> grade with `code_of`, a dict grade -> code)."""

    def __init__(
        self,
        query_ids: Sequence[str],
        judgments: Sequence[dict[str, int]],
        code_of: dict[int, int] | None = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    def codes(
        self, rows: Sequence[int], rankings: Sequence[Sequence[str]], depth: int, /
    ) -> tuple[bytes, list[int]]:
        """Grade codes of each ranking's first `depth` documents (all if depth < 0),
        concatenated; and each ranking's length."""
    def inline_codes(
        self,
        rows: Sequence[int],
        rankings: Sequence[Sequence[str]],
        depth: int,
        extras: Sequence[Mapping[str, int | None] | None],
        grade_codes: bytes,
        /,
    ) -> tuple[bytes, list[int], bytes, list[int]] | None:
        """`codes()` with each ranking's inline grades (`extras[i]`: dict doc -> grade, or
        None) laid over its unjudged documents, and the codes of the inline grades of
        documents the evaluation set has not judged (`added`, `added_counts[i]` of them
        ranking i's); None when an inline grade has no code in `grade_codes`."""

    def row_of(self, query_id: str, /) -> int:
        """The query's row, or -1 when it is not in the index."""

    @classmethod
    def from_qrels(cls, data: bytes, /) -> JudgmentIndex | None:
        """TREC qrels read in C straight into an index, with no Python object per judgment
        (codes: each grade's rank among the distinct grades, 1 the lowest); None leaves the
        file to the Python path (monitor/scoring/qrels_scan.h)."""

    def judgments(self) -> list[dict[str, int]]:
        """Each row's judgments, doc -> grade, in the order they were given."""

    def ideal_codes(self) -> tuple[bytes, bytes]:
        """(offsets, codes): the codes of each row's judgments with a grade >= 0 (its ideal
        ranking's, unordered), concatenated; row q's are codes[offsets[q]:offsets[q + 1]],
        offsets being queries + 1 native int64s."""
    @property
    def code_grades(self) -> tuple[int, ...] | None:
        """The distinct grades, ascending (a qrels index codes grade code_grades[c - 1] as
        c); None when there are more than 255."""
    @property
    def query_ids(self) -> tuple[str, ...]: ...

class RunCoder:
    """A run file fed in chunks and coded query by query (`run_coder`)."""

    split: bool
    """True when finish() gave None because a query's lines are in two blocks: code_run then
    reads the file whole; any other None leaves it to the Python path."""

    def feed(self, chunk: bytes | bytearray | memoryview, /) -> bool:
        """Read the next bytes of the run; False once the coder has given up (a query in two
        blocks, or a line it leaves to the Python path)."""

    def read(self, fd: int, chunk: int, parts: int = 1, /) -> bool:
        """feed() the rest of the open file `fd`, read `chunk` bytes at a time straight into
        the coder's buffer; with parts=2 a regular file of at least 2 chunks, read from its
        start, is read in two parts at once (two threads): the same result. OSError when a
        read fails."""

    def finish(self) -> tuple[str, list[str], list[int], bytes, list[int]] | None:
        """(tag, qids, rows, codes, lengths) or None: as `code_run`."""

def decode_events(
    index: JudgmentIndex,
    values: Sequence[bytes | None],
    timestamps_ms: Sequence[int],
    now_ms: int,
    max_depth: int,
    max_bytes: int,
    max_future_ms: int,
    segment_keys: Sequence[str],
    use_event_time: bool,
    depth: int,
    grade_codes: bytes | None,
    max_id_bytes: int = ...,
    max_value_bytes: int = ...,
) -> tuple[
    bytes,
    list[str],
    list[str],
    list[int],
    list[int],
    list[tuple[str, ...]],
    bytes,
    list[int],
    bytes,
    list[int],
]:
    """A poll's record values -> (status, event_ids, query_ids, rows, event_times_ms,
    segments, codes, lengths, added, added_counts), scanned from the bytes
    (monitor/ingest/event_scan.c) without a Python string per document.

    `status[i]` is record i's SCAN_* code; the other lists hold the accepted events in order.
    `segments[i]` is the tuple of the event's values of `segment_keys`, '' for a key it lacks;
    `codes` their first `depth` grade codes (all if depth < 0) concatenated. `grade_codes`
    (inline grade -> code) lays each event's inline judgments over its unjudged documents,
    `added` holding the codes of those grades, `added_counts[i]` of them event i's; None
    ignores inline judgments. An event with an id or doc id longer than `max_id_bytes`, or a
    segment value longer than `max_value_bytes`, as written, is punted."""

def measure_codes(
    codes: bytes,
    *,
    taken: _Buffer,
    lengths: _Buffer,
    rows: _Buffer,
    kinds: _Buffer,
    gain_of: _Buffer,
    cutoffs: _Buffer,
    ideal_of: _Buffer,
    gains: _Buffer,
    relevant: _Buffer,
    judged: _Buffer,
    discounts: _Buffer,
    ideals: _Buffer,
    n_ideals: int,
    num_rel: _Buffer,
    when_zero: float,
    out: npt.NDArray[Any],
    tops: _Buffer = b"",
    top_depth: int = 0,
    levels: _Buffer = b"",
    n_levels: _Buffer = b"",
) -> None:
    """Fill `out` (rankings x columns, float64) with the measures of rankings given as grade
    codes (monitor/scoring/measure_kernel.h; the plan: monitor/scoring/plan.py). `tops`:
    queries x gains x `top_depth` highest gains, and `levels` (gains x 256, `n_levels` of
    each row used: the scale's gains, highest first), for the bounds of nDCG@k."""

def ideal_rows(
    offsets: _Buffer,
    ideal_codes: _Buffer,
    rows: _Buffer,
    added: bytes,
    added_counts: _Buffer,
    *,
    spec_gain: _Buffer,
    spec_cutoff: _Buffer,
    gains: _Buffer,
    order: _Buffer,
    n_codes: int,
    relevant: _Buffer,
    discounts: _Buffer,
    base_ideal: _Buffer,
    base_num_rel: _Buffer,
    out_ideal: npt.NDArray[Any],
    out_num_rel: npt.NDArray[Any],
) -> None:
    """The IDCG columns and num_rel of each ranking: its query's or, when its inline grades
    add to its ideal ranking, recomputed (every ranking's, from its codes, when `base_ideal`
    and `base_num_rel` are empty); see monitor/scoring/plan.py."""

_Record = TypeVar("_Record", bound=tuple[Any, ...])

def code_run(
    index: JudgmentIndex, data: bytes, float32: bool, max_retrieved: int, depth: int, /
) -> tuple[str, list[str], list[int], bytes, list[int]] | None:
    """(tag, qids, rows, codes, lengths): a TREC run parsed and ordered as `order_run` does,
    each query's first `depth` documents (all if depth < 0) as grade codes of `index`; None
    leaves the file to the Python path (monitor/trec/run_order.h)."""

def run_coder(index: JudgmentIndex, float32: bool, max_retrieved: int, depth: int, /) -> RunCoder:
    """`code_run` on a file fed in chunks, one query's lines in memory at a time."""

def set_hash_seed(key: bytes, /) -> None:
    """Key the hash tables with these 16 bytes (random at import). For benchmarks that craft
    colliding ids; indexes built before keep their layout and must not be used after."""

def order_run(
    data: bytes, float32: bool, max_retrieved: int, /
) -> tuple[str, dict[str, tuple[str, ...]]] | None:
    """(tag, {qid: (docno, ...)}): a TREC run parsed and each query ordered as trec_eval
    orders it; None leaves the file to the Python path (monitor/trec/run_order.h)."""

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
    """(records, error): the records of one decompressed Kafka v2 record batch as
    record_type(topic, partition, offset, timestamp_ms, key, value); error is None or what is
    corrupt (monitor/kafka/record_batch.h)."""
