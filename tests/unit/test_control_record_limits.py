"""Every record rankmon reads is held to an event's limits (`monitor.limits`): a replay's
notices, the windows topic's progress records, the judgments and the to-judge pairs. Without
a broker: the parts that decide, each with the records a hostile writer would send."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest

from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.share import parse_records
from monitor.group.ledger import ShareLedger
from monitor.ingest.events import EventDecoder, Rejection
from monitor.ingest.schema import Outcome, Reason
from monitor.judging import pairs as pairs_module
from monitor.judging.judgments import JudgmentBook, Refusal, decode_judgment
from monitor.judging.pairs import HOUR_MS, PairQueue
from monitor.kafka.consumer import SourceRecord
from monitor.limits import RecordLimits
from monitor.replay.ranker import fill
from monitor.replay.topics import Query
from monitor.scoring.evalset import EvaluationSet
from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows, ScoredEvents
from monitor.windows.spec import WindowSpec
from tests.unit.test_group_ledger import share, starts

NOW = 1_796_000_000_000
YEAR = 365 * 86_400_000
LIMITS = RecordLimits(max_future_ms=300_000, max_clock_skew_ms=10_000, max_id_bytes=64)


def test_a_time_is_refused_past_the_allowed_future_or_past_its_record_plus_the_skew() -> None:
    assert LIMITS.time_refusal(NOW + 300_000, NOW + 300_000, NOW) is None
    assert LIMITS.time_refusal(NOW + 300_001, NOW + 300_000, NOW) is not None
    assert LIMITS.time_refusal(NOW - 1, NOW - 10_002, NOW) is not None  # its record: skew
    assert LIMITS.time_refusal(NOW - 1, 0, NOW) is None  # no record timestamp: the clock only
    assert LIMITS.too_long("é" * 32) is False and LIMITS.too_long("é" * 33) is True


# -- a replay's notices on the events topic ----------------------------------------------------

DECODER = EventDecoder(
    max_future_ms=300_000, max_clock_skew_ms=10_000, max_id_bytes=64, segment_keys=frozenset({"m"})
)


def marker(started: int, replay_id: str = "r1", **segment: str) -> bytes:
    replay = {"id": replay_id, "end": True, "events": 1, "started": started}
    return orjson.dumps({"segment": segment, "replay": replay})


def failed(event_time: int, replay_id: str = "r1") -> bytes:
    replay = {"id": replay_id, "outcome": "error", "reason": "x"}
    return orjson.dumps({"event_id": "e", "query_id": "q", "event_time": event_time,
                         "replay": replay})  # fmt: skip


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (marker(NOW + YEAR), Reason.TOO_FAR_IN_FUTURE),
        (marker(NOW + 60_000), Reason.TOO_FAR_IN_FUTURE),  # within the future, past its record
        (marker(NOW, "r" * 65), Reason.STRING_TOO_LONG),
        (marker(NOW, m="v" * 200), Reason.STRING_TOO_LONG),
        (marker(-5), Reason.BAD_EVENT_TIME),
        (failed(NOW + YEAR), Reason.TOO_FAR_IN_FUTURE),
        (failed(NOW, "r" * 65), Reason.STRING_TOO_LONG),
    ],
)
def test_a_replay_notice_past_an_events_limits_is_invalid(value: bytes, reason: Reason) -> None:
    result = DECODER(value, NOW, NOW)
    assert isinstance(result, Rejection)
    assert (result.outcome, result.reason) == (Outcome.INVALID, reason)


def test_an_honest_end_marker_keeps_only_the_configured_labels() -> None:
    value = marker(NOW - 30_000, m="v1", other="x" * 500)
    result = DECODER(value, NOW, NOW)
    assert isinstance(result, Rejection) and result.outcome is Outcome.REPLAY_NOTICE
    ended = DECODER.replay_end(value, NOW)
    assert ended is not None
    assert (ended.replay_id, ended.started_ms, dict(ended.segment)) == (
        "r1",
        NOW - 30_000,
        {"m": "v1"},
    )


# -- the watermark ---------------------------------------------------------------------------------


def test_an_event_ahead_of_its_record_makes_no_honest_event_late_when_lateness_is_short() -> None:
    # 2 s windows, 2 s lateness, 10 s skew: the bound used to be the record time + 10 s, so
    # the watermark passed the honest events' windows by 8 s.
    spec = WindowSpec.tumbling(2_000, allowed_lateness_ms=2_000)
    windows = EventWindows(spec, ["m"], FakeClock(NOW), max_clock_skew_ms=10_000)
    times = [NOW + 290_000, *(NOW + s * 1000 for s in range(1, 101))]
    stamps = [NOW, *times[1:]]
    admission = windows.add_events(
        ScoredEvents(
            partitions=[0] * 101,
            offsets=list(range(101)),
            event_times_ms=times,
            event_ids=[f"e{i}" for i in range(101)],
            query_ids=["q"] * 101,
            segments=[()] * 101,
            measures=np.ones((101, 1)),
            record_times_ms=stamps,
        )
    )
    assert (admission.accepted, admission.late) == (101, [])


# -- progress records on the windows topic ---------------------------------------------------------


def test_a_progress_record_claiming_the_future_is_refused_and_the_honest_ones_count() -> None:
    refused: list[str] = []
    everyone = frozenset({0, 1})
    ledger = ShareLedger(
        everyone, limits=LIMITS, now_ms=lambda: NOW, refused=lambda _, why: refused.append(why)
    )
    ledger.take(share(0, {0, 1}))
    ledger.take(ProgressRecord(everyone, None, False, 1 << 62))
    ledger.take(ProgressRecord(everyone, NOW, False, NOW + 60_000, record_ms=NOW))  # skew
    assert (ledger.refused, refused) == (2, ["progress_in_future"] * 2)
    ledger.take(ProgressRecord(everyone, 1_767_225_610_000, False, NOW - 1, record_ms=NOW))
    assert starts(ledger) == [0]  # decided whole, by the honest record


def test_a_progress_record_naming_a_window_ahead_is_refused_and_one_naming_none_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger = ShareLedger(frozenset({0}), limits=LIMITS, now_ms=lambda: NOW)
    ahead = f"10s/{NOW + YEAR}/model=v1/p0"
    ledger.take(ProgressRecord(frozenset({0}), None, False, NOW, (ahead,)))
    assert ledger.refused == 1 and ledger.pending == 0

    class Record:
        key, headers, partition, offset, timestamp = b"progress/p0", (), 0, 7, NOW
        value = ProgressRecord(frozenset({0}), None, True, NOW, ("garbage",)).to_json()

    # A share key that names no window made the decider's read raise, every poll.
    assert parse_records([Record()]) == []
    assert "names no window" in caplog.text


def test_a_progress_record_read_from_the_topic_carries_its_record_timestamp() -> None:
    class Record:
        key, headers, partition, offset, timestamp = b"progress/p0", (), 0, 7, NOW - 5
        value = ProgressRecord(frozenset({0}), None, True, NOW - 9).to_json()

    [parsed] = parse_records([Record()])
    assert isinstance(parsed, ProgressRecord) and parsed.record_ms == NOW - 5


# -- judgments ---------------------------------------------------------------------------------

BASE = EvaluationSet.from_judgments({"q1": {"a": 3, "b": 1, "c": 0}, "q2": {"x": 2}})


def judgment(doc: str, grade: int, source: str = "human:ann", at: int = NOW, **more: Any) -> Any:
    value = {"query_id": more.pop("query", "q1"), "doc_id": doc, "grade": grade,
             "source": source, "judged_at": at, **more}  # fmt: skip
    return decode_judgment(SourceRecord("j", 0, 0, NOW, None, orjson.dumps(value)), LIMITS, NOW)


def add(book: JudgmentBook, decoded: Any) -> str:
    outcome = decoded if isinstance(decoded, Refusal) else book.add(decoded)
    return outcome.reason if isinstance(outcome, Refusal) else outcome


def test_judged_at_decides_which_of_one_sources_grades_stands_whatever_the_read_order() -> None:
    book = JudgmentBook(BASE)
    assert add(book, judgment("new", 3, at=NOW - 1_000)) == "accepted"
    assert add(book, judgment("new", 0, at=NOW - 86_400_000)) == "superseded"
    assert book.merged().grades("q1")["new"] == 3
    assert add(book, judgment("new", 1, at=NOW)) == "accepted"  # a newer correction stands
    assert book.merged().grades("q1")["new"] == 1


def test_an_old_model_grade_sent_again_does_not_replace_its_newer_audit_grade() -> None:
    book = JudgmentBook(BASE)
    assert add(book, judgment("a", 1, "llm:m", at=NOW)) == "audit"
    assert add(book, judgment("a", 1, "llm:m", at=NOW)) == "audit"  # the same again: not kept twice
    assert add(book, judgment("a", 0, "llm:m", at=NOW - 5)) == "superseded"
    assert [j.grade for j in book.audit[("q1", "a")]] == [1] and len(book.pairs) == 1


def test_a_judgment_dated_in_the_future_is_refused() -> None:
    assert isinstance(judgment("new", 3, at=NOW + YEAR), Refusal)
    assert judgment("new", 3, at=NOW + YEAR).reason == "judged_in_future"


def test_only_the_allowed_sources_may_grade() -> None:
    book = JudgmentBook(BASE, allowed=("human:*", "llm:gpt-4o@*"))
    assert add(book, judgment("n1", 3, "human")) == "source_not_allowed"
    assert add(book, judgment("n1", 3, "llm:other@p")) == "source_not_allowed"
    assert add(book, judgment("n1", 3, "human:ann")) == "accepted"
    assert add(book, judgment("n2", 3, "llm:gpt-4o@p1")) == "accepted"


def test_the_book_keeps_at_most_max_judgments_grades_and_still_takes_corrections() -> None:
    book = JudgmentBook(BASE, max_judgments=3)
    assert [add(book, judgment(f"n{i}", 1)) for i in range(5)] == ["accepted"] * 3 + [
        "too_many_judgments"
    ] * 2
    assert add(book, judgment("a", 1, "llm:m")) == "too_many_judgments"  # an audit grade too
    assert add(book, judgment("n0", 3, at=NOW + 1)) == "accepted"  # a pair it has: corrected
    assert book.kept == 3


# -- pairs on the to-judge topic -----------------------------------------------------------------


def test_pairs_asked_for_are_kept_as_hashes_and_the_oldest_forgotten_past_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pairs_module, "MAX_ASKED", 3)
    queue = PairQueue(10, "linear", budget_per_hour=2, max_pending=10)
    for i in range(5):
        queue.was_asked(("q1", f"d{i}"), NOW + i)
    assert len(queue.asked) == 3 and hash(("q1", "d4")) in queue.asked
    assert hash(("q1", "d0")) not in queue.asked
    # Only the newest times of the budget are kept: enough to tell the budget is spent.
    assert queue.room(NOW + 10) == 0 and queue.room(NOW + 3 + HOUR_MS) == 1


def test_fill_reads_placeholders_in_the_template_only() -> None:
    query = Query("q1", "shoes {depth} and {query}")
    assert fill({"q": "{query}", "n": "{depth}", "s": "[{query}] x{depth}"}, query, 7) == {
        "q": "shoes {depth} and {query}",
        "n": 7,
        "s": "[shoes {depth} and {query}] x7",
    }
