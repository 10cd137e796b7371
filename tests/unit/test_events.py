"""Decoding and validating ranking events: what is accepted, and the reason for each rejection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from monitor.config.loader import load_config
from monitor.ingest.events import RankingEvent, Rejection, decode_event, outcome_of
from monitor.ingest.schema import MIN_EPOCH_MS, Outcome, Reason
from monitor.service import event_decoder

NOW_MS = 1_796_039_108_000  # 2026-12-01T... (any fixed instant: the tests' clock)
RECORD_MS = NOW_MS - 5_000
VALID: dict[str, Any] = {
    "event_id": "e-1",
    "query_id": "q-1",
    "ranking": ["d3", "d1", "d2"],
    "event_time": NOW_MS - 60_000,
    "judgments": {"d3": 2, "d9": 0},
    "segment": {"model": "v42", "market": "de"},
    "schema_version": 1,
}


def event(**changes: Any) -> bytes:
    """The valid event with fields replaced (a value of ... removes the field)."""
    fields = {**VALID, **changes}
    return orjson.dumps({k: v for k, v in fields.items() if v is not ...})


def decode(value: bytes | None, **options: Any) -> RankingEvent | Rejection:
    return decode_event(value, RECORD_MS, now_ms=NOW_MS, **options)


def reason_of(value: bytes | None, **options: Any) -> Reason | None:
    result = decode(value, **options)
    return result.reason if isinstance(result, Rejection) else None


def test_valid_event_keeps_every_field_and_the_served_order() -> None:
    result = decode(event())
    assert result == RankingEvent(
        event_id="e-1",
        query_id="q-1",
        ranking=("d3", "d1", "d2"),
        event_time_ms=NOW_MS - 60_000,
        judgments={"d3": 2, "d9": 0},
        segment={"model": "v42", "market": "de"},
    )
    assert outcome_of(result) is Outcome.ACCEPTED


def test_optional_fields_may_be_absent_and_unknown_fields_are_ignored() -> None:
    value = event(judgments=..., segment=..., schema_version=..., event_time=..., extra=[1])
    result = decode(value)
    assert isinstance(result, RankingEvent)
    assert (result.judgments, dict(result.segment)) == (None, {})
    assert result.event_time_ms == RECORD_MS  # the record timestamp stands in


@pytest.mark.parametrize(
    ("text", "epoch_ms"),
    [
        ("2026-11-30T12:00:00Z", 1_796_040_000_000),
        ("2026-11-30T12:00:00.250Z", 1_796_040_000_250),
        ("2026-11-30T13:30:00+01:30", 1_796_040_000_000),
        ("2026-11-30T07:00:00.999999-05:00", 1_796_040_000_999),
        ("2026-11-30t12:00:00z", 1_796_040_000_000),
        ("2026-11-30 12:00:00+00:00", 1_796_040_000_000),
    ],
)
def test_rfc3339_event_time_with_offsets_becomes_exact_epoch_ms(text: str, epoch_ms: int) -> None:
    result = decode(event(event_time=text), max_future_ms=10**12)
    assert isinstance(result, RankingEvent)
    assert result.event_time_ms == epoch_ms


def test_epoch_ms_event_time_is_taken_as_is() -> None:
    result = decode(event(event_time=NOW_MS - 123))
    assert isinstance(result, RankingEvent)
    assert result.event_time_ms == NOW_MS - 123


def test_an_event_time_in_epoch_seconds_is_refused_saying_so_not_read_as_1970() -> None:
    result = decode(event(event_time=1_796_120_000))
    assert isinstance(result, Rejection)
    assert result.reason is Reason.BAD_EVENT_TIME and "epoch seconds" in result.detail
    earliest = decode(event(event_time=MIN_EPOCH_MS))
    assert isinstance(earliest, RankingEvent) and earliest.event_time_ms == MIN_EPOCH_MS


def test_record_time_source_ignores_the_event_time_field() -> None:
    result = decode(event(event_time="not a time"), use_event_time=False)
    assert isinstance(result, RankingEvent)
    assert result.event_time_ms == RECORD_MS


def test_segment_keeps_only_the_allowed_keys_when_given_them() -> None:
    result = decode(event(), segment_keys=frozenset({"model"}))
    assert isinstance(result, RankingEvent)
    assert dict(result.segment) == {"model": "v42"}


def test_ranking_of_exactly_max_depth_documents_is_accepted() -> None:
    result = decode(event(ranking=[f"d{i}" for i in range(1000)]), max_depth=1000)
    assert isinstance(result, RankingEvent)
    assert len(result.ranking) == 1000


def test_strings_exactly_at_their_byte_limits_are_accepted() -> None:
    value = event(
        event_id="e" * 512,
        query_id="\u00e9" * 256,
        ranking=["d1", "x" * 512],
        judgments={"y" * 512: 1},
        segment={"model": "\u20ac" * 42 + "vv"},  # 42 x 3 + 2 = 128 bytes
    )
    assert isinstance(decode(value), RankingEvent)


def test_a_long_value_of_a_segment_key_that_is_not_kept_is_ignored() -> None:
    value = event(segment={"model": "v1", "request": "r" * 10_000})
    assert isinstance(decode(value, segment_keys=frozenset({"model"})), RankingEvent)


def test_event_time_exactly_max_future_ahead_is_accepted_one_ms_more_is_not() -> None:
    assert isinstance(decode(event(event_time=NOW_MS + 300_000)), RankingEvent)
    assert reason_of(event(event_time=NOW_MS + 300_001)) is Reason.TOO_FAR_IN_FUTURE


def test_ten_megabyte_record_is_too_large_before_it_is_parsed() -> None:
    huge = event(ranking=["d" * 1000 + str(i) for i in range(10_000)])
    assert len(huge) > 10_000_000
    assert reason_of(huge) is Reason.TOO_LARGE


def test_ranking_of_100k_documents_is_rejected_past_max_depth() -> None:
    value = event(ranking=[f"doc{i}" for i in range(100_000)])
    assert reason_of(value, max_bytes=10_000_000, max_depth=1000) is Reason.TOO_DEEP


INVALID = [
    (b"\xff\xfe{}", Reason.INVALID_UTF8),
    (b'{"event_id": "\xe9"}', Reason.INVALID_UTF8),
    (None, Reason.INVALID_JSON),
    (b"", Reason.INVALID_JSON),
    (b'{"event_id": "e-1", ', Reason.INVALID_JSON),
    (b"{'event_id': 'e-1'}", Reason.INVALID_JSON),
    (b"NaN", Reason.INVALID_JSON),
    (b"[" * 5000, Reason.INVALID_JSON),
    (b"[1, 2]", Reason.NOT_AN_OBJECT),
    (b'"an event"', Reason.NOT_AN_OBJECT),
    (b"null", Reason.NOT_AN_OBJECT),
    (b"42", Reason.NOT_AN_OBJECT),
    (event(event_id=...), Reason.MISSING_FIELD),
    (event(query_id=...), Reason.MISSING_FIELD),
    (event(ranking=...), Reason.MISSING_FIELD),
    (event(event_id=""), Reason.MISSING_FIELD),
    (event(event_id=7), Reason.WRONG_TYPE),
    (event(query_id=["q"]), Reason.WRONG_TYPE),
    (event(ranking="d1 d2"), Reason.WRONG_TYPE),
    (event(ranking=["d1", 2]), Reason.WRONG_TYPE),
    (event(ranking=["d1", None]), Reason.WRONG_TYPE),
    (event(ranking=["d1", ""]), Reason.WRONG_TYPE),
    (event(judgments=[["d1", 1]]), Reason.WRONG_TYPE),
    (event(segment={"model": 42}), Reason.WRONG_TYPE),
    (event(segment="v42"), Reason.WRONG_TYPE),
    (event(ranking=[]), Reason.EMPTY_RANKING),
    (event(ranking=["d1", "d2", "d1"]), Reason.DUPLICATE_DOC),
    (event(ranking=[f"d{i}" for i in range(1001)]), Reason.TOO_DEEP),
    (event(judgments={"d1": 10**15}), Reason.BAD_GRADE),
    (event().replace(b'"d9":0', b'"d9":' + b"9" * 40), Reason.BAD_GRADE),
    (event(judgments={"d1": 1001}), Reason.BAD_GRADE),
    (event(judgments={"d1": -1}), Reason.BAD_GRADE),
    (event(judgments={"d1": 1.5}), Reason.BAD_GRADE),
    (event(judgments={"d1": 2.0}), Reason.BAD_GRADE),
    (event(judgments={"d1": True}), Reason.BAD_GRADE),
    (event(judgments={"d1": "3"}), Reason.BAD_GRADE),
    (event(judgments={"d1": None}), Reason.BAD_GRADE),
    (event(event_time="yesterday"), Reason.BAD_EVENT_TIME),
    (event(event_time="2026-11-30T12:00:00"), Reason.BAD_EVENT_TIME),
    (event(event_time="2026-11-30"), Reason.BAD_EVENT_TIME),
    (event(event_time="2026-02-30T12:00:00Z"), Reason.BAD_EVENT_TIME),
    (event(event_time="1969-12-31T23:59:59Z"), Reason.BAD_EVENT_TIME),
    (event(event_time=1.7e12), Reason.BAD_EVENT_TIME),
    (event(event_time=-1), Reason.BAD_EVENT_TIME),
    (event(event_time=True), Reason.BAD_EVENT_TIME),
    (event(event_time=NOW_MS + 3_600_000), Reason.TOO_FAR_IN_FUTURE),
    (event(event_time="2099-01-01T00:00:00Z"), Reason.TOO_FAR_IN_FUTURE),
    (event(schema_version=2), Reason.UNSUPPORTED_SCHEMA_VERSION),
    (event(schema_version="1"), Reason.UNSUPPORTED_SCHEMA_VERSION),
    (event(schema_version=True), Reason.UNSUPPORTED_SCHEMA_VERSION),
    (event(schema_version=1.0), Reason.UNSUPPORTED_SCHEMA_VERSION),
    (event(event_id="e" * 513), Reason.STRING_TOO_LONG),
    (event(query_id="\u00e9" * 257), Reason.STRING_TOO_LONG),  # 257 characters, 514 bytes
    (event(ranking=["d1", "x" * 513]), Reason.STRING_TOO_LONG),
    (event(judgments={"y" * 513: 1}), Reason.STRING_TOO_LONG),
    (event(segment={"model": "v" * 129}), Reason.STRING_TOO_LONG),
]


@pytest.mark.parametrize(("value", "reason"), INVALID)
def test_invalid_record_is_rejected_with_its_reason(value: bytes | None, reason: Reason) -> None:
    result = decode(value, max_bytes=100_000)
    assert isinstance(result, Rejection)
    assert result.reason is reason
    assert outcome_of(result) is Outcome.INVALID is result.outcome


def test_every_reason_is_exercised_by_the_invalid_records() -> None:
    covered = {reason for _, reason in INVALID} | {Reason.TOO_LARGE}
    notices = {Reason.FAILED_QUERY, Reason.START_OF_REPLAY, Reason.END_OF_REPLAY}  # below
    assert covered == set(Reason) - notices


def test_a_replays_failed_query_and_end_are_notices_and_its_rankings_are_events() -> None:
    failed = {"id": "r1", "outcome": "timeout", "reason": "timeout"}
    notice = decode(event(ranking=..., replay=failed))
    assert isinstance(notice, Rejection)
    assert (notice.outcome, notice.reason) == (Outcome.REPLAY_NOTICE, Reason.FAILED_QUERY)
    assert "r1" in notice.detail and "timeout" in notice.detail
    marker = {"schema_version": 1, "replay": {"id": "r1", "end": True, "events": 3}}
    # A marker names the replay's start, which closes its windows: without one it is invalid.
    unstarted = decode(orjson.dumps(marker))
    assert isinstance(unstarted, Rejection) and unstarted.reason is Reason.BAD_EVENT_TIME
    marker["replay"]["started"] = RECORD_MS - 60_000  # type: ignore[index]
    end = decode(orjson.dumps(marker))
    assert isinstance(end, Rejection)
    assert (end.outcome, end.reason) == (Outcome.REPLAY_NOTICE, Reason.END_OF_REPLAY)
    begun = {"schema_version": 1, "replay": {"id": "r1", "start": True}}
    unstarted = decode(orjson.dumps(begun))  # a start marker names its start too
    assert isinstance(unstarted, Rejection) and unstarted.reason is Reason.BAD_EVENT_TIME
    begun["replay"]["started"] = RECORD_MS - 1  # type: ignore[index]
    start = decode(orjson.dumps(begun))
    assert isinstance(start, Rejection)
    assert (start.outcome, start.reason) == (Outcome.REPLAY_NOTICE, Reason.START_OF_REPLAY)
    ranked = decode(event(replay={"id": "r1"}))
    assert isinstance(ranked, RankingEvent)
    # Without the replay's id, or with neither an end nor an outcome, it is bad input.
    for replay in ({"outcome": "error", "reason": "x"}, {"id": "r1"}, "r1", {"id": 5}):
        result = decode(event(ranking=..., replay=replay))
        assert isinstance(result, Rejection) and result.outcome is Outcome.INVALID
        assert result.reason is Reason.MISSING_FIELD


def test_record_without_any_timestamp_has_a_bad_event_time() -> None:
    result = decode_event(event(event_time=...), -1, now_ms=NOW_MS)
    assert isinstance(result, Rejection)
    assert result.reason is Reason.BAD_EVENT_TIME


def test_rejection_detail_names_the_field_without_echoing_the_content() -> None:
    result = decode(event(event_id=..., query_id="customer-4711@example.com"))
    assert isinstance(result, Rejection)
    assert "event_id" in result.detail
    assert "customer-4711" not in result.detail


def test_label_values_of_outcomes_and_reasons_are_the_documented_ones() -> None:
    assert {o.value for o in Outcome} == {
        "accepted",
        "invalid",
        "unknown_query",
        "duplicate",
        "late",
        "replay_notice",
    }
    assert all(reason.value == reason.name.lower() for reason in Reason)


def test_the_services_decoder_applies_the_configured_limits(tmp_path: Path) -> None:
    tree = {
        "kafka": {"topic": "t", "max_record_bytes": 400},
        "evaluation_set": {"path": "q"},
        "metrics": {"max_depth": 3},
        "windows": {"max_future": "1s"},
        "segments": {"keys": ["market"]},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(tree), encoding="utf-8")
    decoder = event_decoder(load_config(tmp_path / "c.yaml", {}))
    accepted = decoder(event(event_time=NOW_MS + 1_000), RECORD_MS, NOW_MS)
    assert isinstance(accepted, RankingEvent)
    assert dict(accepted.segment) == {"market": "de"}
    rejected = [
        decoder(event(ranking=["a", "b", "c", "d"]), RECORD_MS, NOW_MS),
        decoder(event(event_time=NOW_MS + 1_001), RECORD_MS, NOW_MS),
        decoder(event(padding="x" * 400), RECORD_MS, NOW_MS),
    ]
    reasons = [r.reason for r in rejected if isinstance(r, Rejection)]
    assert reasons == [Reason.TOO_DEEP, Reason.TOO_FAR_IN_FUTURE, Reason.TOO_LARGE]


def test_the_services_decoder_can_take_the_record_timestamp_only(tmp_path: Path) -> None:
    tree = {"kafka": {"topic": "t"}, "evaluation_set": {"path": "q"}}
    tree["windows"] = {"time_source": "record"}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(tree), encoding="utf-8")
    decoder = event_decoder(load_config(tmp_path / "c.yaml", {}))
    result = decoder(event(), RECORD_MS, NOW_MS)
    assert isinstance(result, RankingEvent)
    assert result.event_time_ms == RECORD_MS
