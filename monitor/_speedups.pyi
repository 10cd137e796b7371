from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy.typing as npt

_Buffer = bytes | npt.NDArray[Any]

class JudgmentIndex:
    def __init__(
        self,
        query_ids: Sequence[str],
        judgments: Sequence[dict[str, int]],
        code_of: dict[int, int] | None = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    def codes(
        self, rows: Sequence[int], rankings: Sequence[Sequence[str]], depth: int, /
    ) -> tuple[bytes, list[int]]: ...
    def inline_codes(
        self,
        rows: Sequence[int],
        rankings: Sequence[Sequence[str]],
        depth: int,
        extras: Sequence[Mapping[str, int | None] | None],
        grade_codes: bytes,
        /,
    ) -> tuple[bytes, list[int], bytes, list[int]] | None: ...
    def code_run(
        self, data: bytes, float32: bool, max_retrieved: int, depth: int, /
    ) -> tuple[str, list[str], list[int], bytes, list[int]] | None: ...
    def run_coder(self, float32: bool, max_retrieved: int, depth: int, /) -> RunCoder: ...
    def row_of(self, query_id: str, /) -> int: ...
    @classmethod
    def from_qrels(cls, data: bytes, /) -> JudgmentIndex | None: ...
    def judgments(self) -> list[dict[str, int]]: ...
    def ideal_codes(self) -> tuple[bytes, bytes]: ...
    @property
    def code_grades(self) -> tuple[int, ...] | None: ...
    @property
    def query_ids(self) -> tuple[str, ...]: ...

class RunCoder:
    split: bool
    def feed(self, chunk: bytes | bytearray | memoryview, /) -> bool: ...
    def read(self, fd: int, chunk: int, parts: int = 1, /) -> bool: ...
    def finish(self) -> tuple[str, list[str], list[int], bytes, list[int]] | None: ...

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
]: ...
def measure_codes(
    codes: bytes,
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
    /,
) -> None: ...
def ideal_rows(
    offsets: _Buffer,
    ideal_codes: _Buffer,
    rows: _Buffer,
    added: bytes,
    added_counts: _Buffer,
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
    /,
) -> None: ...

_Record = TypeVar("_Record", bound=tuple[Any, ...])

def set_hash_seed(key: bytes) -> None: ...
def order_run(
    data: bytes, float32: bool, max_retrieved: int, /
) -> tuple[str, dict[str, tuple[str, ...]]] | None: ...
def parse_records(
    buffer: bytes | bytearray,
    pos: int,
    count: int,
    base_offset: int,
    first_timestamp: int,
    max_timestamp: int,
    log_append_time: bool,
    topic: str,
    partition: int,
    record_type: type[_Record],
    /,
) -> tuple[list[_Record], str | None]: ...
