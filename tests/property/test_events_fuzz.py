"""Fuzzing the decoder: whatever the bytes, no exception escapes and each gets one outcome.

Three sources of input: arbitrary bytes, arbitrary JSON documents, and valid events mutated
(a field removed or replaced by any JSON value, the ranking corrupted, the bytes cut or
flipped). An accepted event must also satisfy every promise of the schema, so a validator
that let something through by mistake fails here too.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.ingest.events import RankingEvent, Rejection, decode_event, outcome_of
from monitor.ingest.schema import MAX_GRADE, MIN_EPOCH_MS, Outcome

NOW_MS = 1_800_000_000_000
MAX_DEPTH = 50
MAX_FUTURE_MS = 300_000
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ids = st.text(min_size=1, max_size=12)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=20,
)
valid_events = st.fixed_dictionaries(
    {
        "event_id": ids,
        "query_id": ids,
        "ranking": st.lists(ids, min_size=1, max_size=MAX_DEPTH, unique=True),
    },
    optional={
        "event_time": st.integers(MIN_EPOCH_MS, NOW_MS + MAX_FUTURE_MS),
        "judgments": st.dictionaries(ids, st.integers(0, MAX_GRADE), max_size=10),
        "segment": st.dictionaries(ids, st.text(max_size=10), max_size=4),
        "schema_version": st.just(1),
    },
)


def decode(value: bytes | None) -> RankingEvent | Rejection:
    return decode_event(value, NOW_MS - 1_000, now_ms=NOW_MS, max_depth=MAX_DEPTH, max_bytes=64_000)


def assert_one_outcome_and_schema_kept(result: RankingEvent | Rejection) -> None:
    assert isinstance(result, RankingEvent | Rejection)
    assert outcome_of(result) in (Outcome.ACCEPTED, Outcome.INVALID)
    if isinstance(result, Rejection):
        return
    assert result.event_id and type(result.event_id) is str
    assert result.query_id and type(result.query_id) is str
    assert 1 <= len(result.ranking) <= MAX_DEPTH
    assert len(set(result.ranking)) == len(result.ranking)
    assert all(type(doc) is str and doc for doc in result.ranking)
    assert 0 <= result.event_time_ms <= NOW_MS + MAX_FUTURE_MS  # RFC 3339 may be 1970
    for grade in (result.judgments or {}).values():
        assert type(grade) is int and 0 <= grade <= MAX_GRADE
    assert all(type(v) is str for v in result.segment.values())


@FUZZ
@given(st.binary(max_size=2_000))
def test_arbitrary_bytes_get_exactly_one_outcome(value: bytes) -> None:
    assert_one_outcome_and_schema_kept(decode(value))


@FUZZ
@given(json_values)
def test_arbitrary_json_documents_get_exactly_one_outcome(document: Any) -> None:
    assert_one_outcome_and_schema_kept(decode(orjson.dumps(document)))


@FUZZ
@given(valid_events)
def test_valid_events_are_accepted_with_their_fields(fields: dict[str, Any]) -> None:
    result = decode(orjson.dumps(fields))
    assert isinstance(result, RankingEvent)
    assert list(result.ranking) == fields["ranking"]
    assert result.event_time_ms == fields.get("event_time", NOW_MS - 1_000)
    assert (result.judgments or {}) == fields.get("judgments", {})


@FUZZ
@given(
    valid_events,
    st.sampled_from(
        sorted(
            [
                "event_id",
                "query_id",
                "ranking",
                "event_time",
                "judgments",
                "segment",
                "schema_version",
            ]
        )
    ),
    json_values,
)
def test_a_field_replaced_by_any_json_value_never_escapes(
    fields: dict[str, Any], name: str, replacement: Any
) -> None:
    assert_one_outcome_and_schema_kept(decode(orjson.dumps({**fields, name: replacement})))


@FUZZ
@given(valid_events, st.lists(json_values, min_size=1, max_size=3), st.integers(0, MAX_DEPTH))
def test_a_corrupted_ranking_never_escapes(
    fields: dict[str, Any], inserted: list[Any], at: int
) -> None:
    ranking = list(fields["ranking"])
    ranking[at:at] = inserted
    assert_one_outcome_and_schema_kept(decode(orjson.dumps({**fields, "ranking": ranking})))


@FUZZ
@given(valid_events, st.data())
def test_cut_or_flipped_bytes_of_a_valid_event_never_escape(
    fields: dict[str, Any], data: st.DataObject
) -> None:
    value = bytearray(orjson.dumps(fields))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(value) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            value[at] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del value[at:]
            if not value:
                break
        else:
            value[at:at] = data.draw(st.binary(min_size=1, max_size=4))
    assert_one_outcome_and_schema_kept(decode(bytes(value)))
