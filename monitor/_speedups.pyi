from collections.abc import Sequence

class JudgmentIndex:
    def __init__(self, query_ids: Sequence[str], judgments: Sequence[dict[str, int]]) -> None: ...
    def __len__(self) -> int: ...
    def codes(
        self, rows: Sequence[int], rankings: Sequence[Sequence[str]], depth: int, /
    ) -> tuple[bytes, list[int]]: ...
    def row_of(self, query_id: str, /) -> int: ...

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
    punt_judgments: bool,
) -> tuple[
    bytes,
    list[str],
    list[str],
    list[int],
    list[int],
    list[tuple[str, ...]],
    bytes,
    list[int],
]: ...
