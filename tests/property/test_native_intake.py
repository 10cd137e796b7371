"""Intake takes the same records to the same outcomes and windows with or without the C path.

Two real Intakes over one evaluation set, one whose scorer has the C judgment index (records
scanned by `decode_events`, doubtful ones punted to `monitor.ingest.events`), one without (every
record through `monitor.ingest.events`), are fed the same polls. Rejects, outcome counts, window
state and finalized summaries must be identical.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import native
from monitor.ingest.events import EventDecoder
from monitor.ingest.handoff import Handoff
from monitor.ingest.intake import Intake
from monitor.judging.documents import DocumentShelf
from monitor.kafka.consumer import SourceRecord
from monitor.scoring.catalog import MeasureKey, monitor_keys
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows
from monitor.windows.segments import SegmentLabeler
from monitor.windows.spec import WindowSpec
from tests.support.native_guard import require_speedups, speedups_switched_on  # noqa: F401

require_speedups()


T0 = 1_700_000_040_000  # a window start for 60 s windows
NOW = T0 + 3_600_000
MAX_FUTURE = 60_000
MAX_DEPTH = 12
SEGMENT_KEYS = ("country", "device")
EVALUATION_SET = EvaluationSet.from_judgments(
    {
        "q1": {"a": 2, "b": 1, "c": 0, "文書": 3, "a-very-long-doc-id-01": 1},
        "q2": {"a": 1, "x": 3, "a-very-long-doc-id-02": 2},
        "q-é": {"a": 1, "b": 2},
        "q3": {"z": -1, "y": 0},
    }
)
KEY_SETS: dict[str, list[MeasureKey]] = {
    "full ranking (mrr, map)": monitor_keys([3, 10], ["linear", "exp"]),
    "cutoffs only": [
        MeasureKey("ndcg", 2),
        MeasureKey("ndcg", 5),
        MeasureKey("precision", 3),
        MeasureKey("recall", 4),
    ],
}


def rfc3339(ms: int, offset: str = "Z") -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}" + offset


def event(
    event_id: str = "e", query_id: str = "q1", ranking: Sequence[str] = ("a", "u", "b"), **more: Any
) -> bytes:
    return orjson.dumps({"event_id": event_id, "query_id": query_id, "ranking": ranking, **more})


@dataclass
class Rejects:
    """A RejectSink keeping (partition, offset, outcome, reason)."""

    seen: list[tuple[int, int, str, str]] = field(default_factory=list)

    def reject(
        self, record: SourceRecord, outcome: str, reason: str = "", detail: str = ""
    ) -> None:
        self.seen.append((record.partition, record.offset, outcome, reason))


@dataclass
class Outcomes:
    """An OutcomeCounter."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def count_outcome(self, outcome: str, reason: str = "", amount: int = 1) -> None:
        self.counts[(outcome, reason)] += amount


@dataclass
class Pipeline:
    intake: Intake
    handoff: Handoff
    scorer: Scorer
    windows: EventWindows
    clock: FakeClock
    rejects: Rejects
    outcomes: Outcomes
    summaries: list[str] = field(default_factory=list)

    def feed(self, poll: Sequence[SourceRecord]) -> None:
        taken = self.intake.take(poll, {self.scorer.evaluation_set.version: self.scorer}, NOW)
        self.handoff.deliver(taken)
        self.summaries.extend(map(repr, self.windows.finalize()))

    def state(self) -> tuple[object, ...]:
        return (
            # In record order: both paths dead-letter what they reject as they meet it.
            list(self.rejects.seen),
            dict(self.outcomes.counts),
            self.summaries,
            self.windows.safe_offsets(),
            self.windows.watermark_ms,
            self.windows.watermarks.by_partition(),
            self.windows.open_windows,
            self.windows.state_size(),
        )


MAX_ID_BYTES = 40
MAX_VALUE_BYTES = 8


def pipeline(
    keys: Sequence[MeasureKey],
    *,
    speedups: bool,
    inline: bool,
    segment_keys: frozenset[str] | None = frozenset(SEGMENT_KEYS),
    use_event_time: bool = True,
) -> Pipeline:
    decoder = EventDecoder(
        max_depth=MAX_DEPTH,
        max_bytes=2000,
        max_future_ms=MAX_FUTURE,
        segment_keys=segment_keys,
        use_event_time=use_event_time,
        max_id_bytes=MAX_ID_BYTES,
        max_value_bytes=MAX_VALUE_BYTES,
    )
    clock = FakeClock(start_ms=NOW)
    labeler = SegmentLabeler(SEGMENT_KEYS, max_values=3)
    windows = EventWindows(
        WindowSpec(60_000, 60_000, 10_000, None, label="1m"),
        [str(k) for k in keys],
        clock,
        version=EVALUATION_SET.version,
        set_queries=len(EVALUATION_SET),
        labeler=labeler,
    )
    windows.assign([0, 1])
    rejects, outcomes = Rejects(), Outcomes()
    intake = Intake(decoder, labeler, windows, inline_judgments=inline)
    scorer = Scorer(EVALUATION_SET, keys, speedups=speedups)
    assert (scorer.judgment_index is not None) == speedups
    handoff = Handoff(windows, rejects, outcomes)
    return Pipeline(intake, handoff, scorer, windows, clock, rejects, outcomes)


@dataclass
class Statuses:
    """A spy on `monitor._speedups.decode_events`: how many records each status got."""

    counts: Counter[int] = field(default_factory=Counter)

    def wrap(self, real: Callable[..., tuple[Any, ...]]) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
            decoded = real(*args, **kwargs)
            self.counts.update(native.DecodedEvents(*decoded).status)
            return decoded

        return spy


def run_both(
    polls: Sequence[Sequence[SourceRecord]], keys: Sequence[MeasureKey], **options: Any
) -> tuple[Pipeline, Pipeline, Statuses]:
    reference = pipeline(keys, speedups=False, **options)
    fast = pipeline(keys, speedups=True, **options)
    statuses = Statuses()
    spy = statuses.wrap(native.speedups.decode_events)  # what monitor.ingest.intake calls
    with mock.patch.object(native.speedups, "decode_events", spy):
        for poll in polls:
            reference.feed(poll)
            fast.feed(poll)
    return reference, fast, statuses


def polls_of(values: Sequence[Sequence[tuple[int, int, bytes | None]]]) -> list[list[SourceRecord]]:
    """(partition, record timestamp, value) per record -> SourceRecords with running offsets."""
    offsets = Counter[int]()
    polls = []
    for poll in values:
        records = []
        for partition, timestamp, value in poll:
            offset = offsets[partition]
            offsets[partition] += 1
            records.append(
                SourceRecord("events", partition, offset, timestamp, None, value)  # type: ignore[arg-type]
            )
        polls.append(records)
    return polls


def scripted_polls() -> list[list[SourceRecord]]:
    """Three polls with every kind of record the intake meets."""
    seg = {"country": "de", "device": "mobile", "other": "ignored"}
    poll1: list[tuple[int, int, bytes | None]] = [
        (0, T0 + 1, event("e1", event_time=T0 + 1_000)),
        (0, T0 + 2, event("e2", "q2", ["x", "a", "u1", "u2"], event_time=rfc3339(T0 + 2_500))),
        (1, T0 + 3, event("e3", segment=seg, model="v2", debug={"k": [1, 2.5, None, True]})),
        (0, T0 + 4_000, event("e4", "q3", ["y", "z", "w"])),  # time from the record
        (1, T0 + 5, event("e5", event_time=rfc3339(T0 + 7_123, "+02:00"),
                          segment={"device": "tv"})),
        (0, T0 + 6, event("e6", "q1", [f"u{i}" for i in range(MAX_DEPTH)], event_time=T0 + 9)),
        # Escapes and non-ASCII: punted by the scanner, valid for events.py.
        (0, T0 + 7, b'{"event_id":"e7","query_id":"q1","ranking":["\\u0061","b"],"event_time":1}'),
        (1, T0 + 8, event("e8", "q1", ["文書", "a"], event_time=T0 + 3_000)),
        (1, T0 + 9, event("e9", "q-é", ["b", "a"], event_time=T0 + 3_100)),
        (0, T0 + 10, event("é-10", "q2", ["a"], event_time=T0 + 3_200, segment={"country": "ü"})),
        # Inline judgments (fill unjudged documents when the policy is on).
        (0, T0 + 11, event("e11", "q1", ["new", "a", "c"], event_time=T0 + 4_000,
                           judgments={"new": 3, "a": 0})),
        (1, T0 + 12, event("e12", "q2", ["u9", "x"], event_time=T0 + 4_100, judgments={})),
        # Invalid records, one reason each.
        (0, T0 + 13, b'{"event_id": "bad-json", '),
        (0, T0 + 14, b'{"event_id":"e\xff","query_id":"q1","ranking":["a"]}'),
        (1, T0 + 15, event("dup-doc", ranking=["a", "b", "a"])),
        (1, T0 + 16, event("too-deep", ranking=[f"u{i}" for i in range(MAX_DEPTH + 1)])),
        (0, T0 + 17, orjson.dumps({"event_id": "no-query", "ranking": ["a"]})),
        (0, T0 + 18, event("bad-grade", judgments={"a": 1001})),
        (0, T0 + 19, event("bool-grade", judgments={"a": True})),
        (1, T0 + 20, event("future", event_time=NOW + MAX_FUTURE + 1)),
        (1, T0 + 21, event("not-future", event_time=NOW + MAX_FUTURE)),
        (0, T0 + 22, event("empty", ranking=[])),
        (0, T0 + 23, event("schema", schema_version=2)),
        (0, T0 + 24, b"[1, 2]"),
        (0, T0 + 25, b""),
        (1, T0 + 26, None),
        (1, -1, event("no-time")),
        (1, T0 + 27, event("bad-time", event_time="2023-13-01T00:00:00Z")),
        (1, T0 + 28, event("too-large", ranking=["a" * 1000, "b" * 1000])),
        (1, T0 + 29, event("empty-doc", ranking=["a", ""])),
        (1, T0 + 30, event("bad-segment", segment={"country": 1})),
        # Unknown queries: ASCII (decided in C) and non-ASCII (punted).
        (0, T0 + 31, event("unknown-1", "nope")),
        (1, T0 + 32, event("unknown-2", "nöpe")),
        (0, T0 + 33, event("unknown-dup-doc", "nope", ["a", "a"])),
        # Strings past their byte limits (ids 40, segment values 8), and at them.
        (0, T0 + 35, event("long-id-" + "x" * 33)),
        (1, T0 + 36, event("long-doc", ranking=["a", "d" * 41])),
        (0, T0 + 37, event("long-seg", segment={"country": "c" * 9})),
        (0, T0 + 38, event("long-judged", judgments={"j" * 41: 1})),
        (1, T0 + 39, event("at-limit-" + "x" * 31, "q1", ["a", "b" * 40], event_time=T0 + 3_300,
                           segment={"country": "c" * 8})),
        (1, T0 + 40, event("long-other", event_time=T0 + 3_400, segment={"other": "o" * 20})),
        # Duplicates by event id: in the same poll.
        (1, T0 + 34, event("e1", "q2", ["x"], event_time=T0 + 1_500)),
    ]  # fmt: skip
    poll2: list[tuple[int, int, bytes | None]] = [
        (0, T0 + 100_000, event("e20", "q1", ["b", "a"], event_time=T0 + 130_000)),
        (1, T0 + 100_001, event("e21", "q2", ["a", "x"], event_time=T0 + 131_000)),
        (0, T0 + 100_002, event("e3", "q2", ["a"], event_time=T0 + 2_000)),  # duplicate id
        (1, T0 + 100_003, event("e22", "q1", ["c"], event_time=T0 + 125_000,
                                segment={"country": "fr", "device": "pc"})),
        (0, T0 + 100_004, event("e23", "q1", ["c"], event_time=T0 + 126_000,
                                segment={"country": "it", "device": "pc"})),
    ]  # fmt: skip
    poll3: list[tuple[int, int, bytes | None]] = [
        (0, T0 + 200_000, event("late-1", "q1", ["a"], event_time=T0 + 5_000)),
        (1, T0 + 200_001, event("late-2", "q2", ["文書"], event_time=rfc3339(T0 + 6_000))),
        (0, T0 + 200_002, event("e30", "q-é", ["a", "b"], event_time=T0 + 250_000)),
        (1, T0 + 200_003, event("e31", "q3", ["z"], event_time=T0 + 251_000)),
        (1, T0 + 200_004, event("e21", "q2", ["a", "x"], event_time=T0 + 131_500)),
        (0, T0 + 200_005, event("e32", "q1", ["a"], event_time=T0 + 128_000,
                                segment={"country": "es", "device": "pc"})),
    ]  # fmt: skip
    # A last poll that moves every partition's watermark past all the windows above.
    flush: list[tuple[int, int, bytes | None]] = [
        (p, T0 + 900_000, event(f"flush-{p}", "q1", ["a"], event_time=T0 + 900_000)) for p in (0, 1)
    ]
    return polls_of([poll1, [], poll2, poll3, flush])


@pytest.mark.parametrize("key_set", sorted(KEY_SETS))
@pytest.mark.parametrize("inline", [False, True], ids=["grades ignored", "inline judgments"])
@pytest.mark.parametrize(
    ("segment_keys", "use_event_time"),
    [(frozenset(SEGMENT_KEYS), True), (None, True), (frozenset(SEGMENT_KEYS), False)],
    ids=["segment keys, event time", "all segment keys", "record time"],
)
def test_the_c_intake_path_gives_the_same_outcomes_and_windows_as_the_reference_path(
    key_set: str, inline: bool, segment_keys: frozenset[str] | None, use_event_time: bool
) -> None:
    polls = scripted_polls()
    reference, fast, statuses = run_both(
        polls,
        KEY_SETS[key_set],
        inline=inline,
        segment_keys=segment_keys,
        use_event_time=use_event_time,
    )
    assert fast.state() == reference.state()
    counts = reference.outcomes.counts
    outcomes = {outcome for outcome, _ in counts}
    assert outcomes >= {"accepted", "invalid", "unknown_query", "duplicate"}
    if use_event_time:  # with record times, the "late" records are on time
        assert "late" in outcomes
        assert len({reason for outcome, reason in counts if outcome == "invalid"}) >= 12
    assert reference.summaries, "the flush poll must close windows"
    # The C path really decided most records: accepted and unknown queries without events.py.
    assert statuses.counts[native.speedups.SCAN_ACCEPTED] >= 20
    assert statuses.counts[native.speedups.SCAN_UNKNOWN_QUERY] >= 1
    assert sum(statuses.counts.values()) == sum(map(len, polls))


def test_events_with_inline_judgments_are_scored_in_c_with_the_reference_numbers() -> None:
    when = T0 + 1_000
    shapes = [
        event("i1", "q1", ["new", "a", "c"], event_time=when, judgments={"new": 3, "a": 0}),
        event("i2", "q2", ["u1", "x", "u2"], event_time=when, judgments={"u1": 2, "far": 3}),
        event("i3", "q3", ["y", "u"], event_time=when, judgments={"u": 1, "y": 2}),
        event("i4", "q1", ["u"], event_time=when, judgments={"u": 7}),  # a grade new to the set
    ]
    flush = [(p, T0, event(f"flush-{p}", event_time=T0 + 900_000)) for p in (0, 1)]
    first = [(0, when, value) for value in shapes]
    again = [(0, when, value.replace(b'"i', b'"j')) for value in shapes]
    polls = polls_of([first, again, flush])
    reference, fast, statuses = run_both(polls, KEY_SETS["full ranking (mrr, map)"], inline=True)
    assert fast.state() == reference.state()
    assert reference.outcomes.counts[("accepted", "")] == 10
    # Only grade 7 had no code at first: its event went to events.py once; then it had one.
    assert statuses.counts[native.speedups.SCAN_PUNTED] == 1
    assert statuses.counts[native.speedups.SCAN_ACCEPTED] == 9


def test_what_events_say_of_their_documents_reaches_the_shelf_on_both_paths() -> None:
    when = T0 + 1_000
    told = {"a": {"title": "Alpha", "snippet": "about a"}, "z": {"title": "not ranked"}}
    with_documents = orjson.loads(event("w1", "q1", ["a", "c"], event_time=when))
    with_documents["documents"] = told
    plain = event("w2", "q2", ["x"], event_time=when)
    unknown = orjson.loads(event("w3", "nope", ["a"], event_time=when))
    unknown["documents"] = {"a": {"title": "an unknown query's"}}
    values = [orjson.dumps(with_documents), plain, orjson.dumps(unknown)]
    flush = [(p, T0, event(f"flush-{p}", event_time=T0 + 900_000)) for p in (0, 1)]
    polls = polls_of([[(0, when, value) for value in values], flush])
    reference = pipeline(KEY_SETS["full ranking (mrr, map)"], speedups=False, inline=False)
    fast = pipeline(KEY_SETS["full ranking (mrr, map)"], speedups=True, inline=False)
    shelves = [DocumentShelf(1 << 20), DocumentShelf(1 << 20)]
    for run, shelf in zip((reference, fast), shelves, strict=True):
        run.handoff.documents = shelf
        for poll in polls:
            run.feed(poll)
    assert fast.state() == reference.state()
    for shelf in shelves:
        assert shelf.get("q1", "a") == {"title": "Alpha", "snippet": "about a"}
        assert shelf.get("q1", "z") == {}  # not in the ranking: not kept
        assert shelf.get("nope", "a") == {}  # an unknown query's event keeps nothing
        assert len(shelf) == 1


def test_a_decoder_keeping_fewer_segment_keys_than_the_labeler_labels_the_same_on_both_paths() -> (
    None
):
    seg = {"country": "de", "device": "tv"}
    flush = [(p, T0, event(f"f{p}", event_time=T0 + 900_000)) for p in (0, 1)]
    polls = polls_of([[(0, T0, event("s1", segment=seg, event_time=T0 + 1))], flush])
    reference, fast, _ = run_both(
        polls, KEY_SETS["cutoffs only"], inline=False, segment_keys=frozenset({"device"})
    )
    assert reference.summaries
    assert fast.summaries == reference.summaries


def test_records_rejected_before_windowing_are_dead_lettered_in_the_same_order() -> None:
    poll = [
        (0, T0, b"not json"),
        (0, T0, event("u", "nope")),
        (1, T0, event("f", event_time=T0 + 1)),
    ]
    reference, fast, _ = run_both(polls_of([poll]), KEY_SETS["cutoffs only"], inline=False)
    assert reference.rejects.seen == [
        (0, 0, "invalid", "invalid_json"),
        (0, 1, "unknown_query", ""),
    ]
    assert fast.rejects.seen == reference.rejects.seen


def test_the_reference_path_orders_and_finalizes_as_expected() -> None:
    """A sanity check of the scripted polls themselves, on the reference path alone."""
    polls = scripted_polls()
    reference, _, _ = run_both(polls, KEY_SETS["cutoffs only"], inline=False)
    seen = {(p, o): (outcome, reason) for p, o, outcome, reason in reference.rejects.seen}
    records = {(r.partition, r.offset): r for poll in polls for r in poll}
    by_id = {orjson.loads(r.value).get("event_id"): key for key, r in records.items()
             if r.value and r.value.startswith(b'{"event_id":"') and b"\\" not in r.value
             and b"\xff" not in r.value and r.value.endswith(b"}")}  # fmt: skip
    assert seen[by_id["dup-doc"]] == ("invalid", "duplicate_doc")
    assert seen[by_id["too-deep"]] == ("invalid", "too_deep")
    assert seen[by_id["future"]] == ("invalid", "too_far_in_future")
    assert by_id["not-future"] not in seen
    assert seen[by_id["unknown-1"]] == ("unknown_query", "")
    assert seen[by_id["unknown-dup-doc"]] == ("invalid", "duplicate_doc")
    assert seen[by_id["late-1"]] == ("late", "")


# -- random mixes ---------------------------------------------------------------------------

VALID_SHAPES: list[Callable[[str, int], bytes]] = [
    lambda i, t: event(i, "q1", ["a", "u", "b"], event_time=t),
    lambda i, t: event(i, "q2", ["a-very-long-doc-id-02", "x", "a"], event_time=rfc3339(t)),
    lambda i, t: event(i, "q3", ["y"], event_time=t, segment={"country": "de", "x": "y"}),
    lambda i, t: event(i, "q1", ["c", "文書"], event_time=t),
    lambda i, t: event(i, "q-é", ["b"], event_time=t),
    lambda i, t: event(i, "q1", ["new", "a"], event_time=t, judgments={"new": 2}),
    # Inline grades: one the evaluation set never uses, a judged doc's (its grade wins), an
    # unranked doc's (the ideal only), a doc listed twice (Python keeps the last), too many.
    lambda i, t: event(
        i, "q2", ["u1", "a", "u2"], event_time=t, judgments={"u1": 7, "a": 0, "elsewhere": 3}
    ),
    lambda i, t: event(i, "q1", ["u1", "b"], event_time=t).replace(
        b'"ranking"', b'"judgments":{"u1":1,"u1":3},"ranking"'
    ),
    lambda i, t: event(
        i,
        "q3",
        [f"u{j}" for j in range(MAX_DEPTH)],
        event_time=t,
        judgments={f"u{j}": j % 4 for j in range(130)},
    ),
    lambda i, t: event(i, "q2", ["a"], event_time=t, extra={"nested": [1, {"a": None}]}),
    lambda i, t: event(i, "q1", ["a"], event_time=t, segment={"device": "d" + str(t % 5)}),
]
MUTATIONS: list[Callable[[bytes], bytes | None]] = [
    lambda v: v,
    lambda v: v,
    lambda v: v,
    lambda v: v[:-1],
    lambda v: v.replace(b'"q1"', b'"nope"').replace(b'"q2"', b'"q9"'),
    lambda v: v.replace(b'"ranking":[', b'"ranking":["a",'),
    lambda v: v.replace(b'"event_id"', b'"event_ie"'),
    lambda v: v.replace(b'"a"', b'"\\u0061"'),
    lambda v: v.replace(b"{", b" {\n ", 1),
    lambda v: v + b"x",
    lambda v: v.replace(b'"ranking":', b'"schema_version":1,"ranking":'),
    lambda v: v.replace(b'"ranking":', b'"judgments":{"a":7,"b":1001},"ranking":'),
    lambda v: v.replace(b"}", b',"judgments":null}', 1),
    lambda v: v.replace(b'"event_time":', b'"event_time":9', 1),
    lambda v: None,
    lambda v: b"\x80" + v,
]


@st.composite
def random_polls(draw: st.DrawFn) -> list[list[SourceRecord]]:
    n = draw(st.integers(1, 40))
    values: list[tuple[int, int, bytes | None]] = []
    for _ in range(n):
        event_id = draw(st.sampled_from(["r1", "r2", "r3", "é4"]) | st.uuids().map(str))
        when = T0 + draw(st.integers(-20_000, 400_000))
        shape = draw(st.sampled_from(VALID_SHAPES))
        mutation = draw(st.sampled_from(MUTATIONS))
        timestamp = draw(st.sampled_from([when, -1]))
        values.append((draw(st.integers(0, 1)), timestamp, mutation(shape(event_id, when))))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    bounds = [0, *cuts, n]
    flush = [(p, T0, event(f"flush-{p}", event_time=T0 + 900_000)) for p in (0, 1)]
    return polls_of([*(values[a:b] for a, b in pairwise(bounds)), flush])


@settings(max_examples=150, deadline=None)
@given(
    polls=random_polls(),
    key_set=st.sampled_from(sorted(KEY_SETS)),
    inline=st.booleans(),
    use_event_time=st.booleans(),
)
def test_random_mixes_of_valid_and_broken_events_end_the_same_on_both_paths(
    polls: list[list[SourceRecord]], key_set: str, inline: bool, use_event_time: bool
) -> None:
    reference, fast, _ = run_both(
        polls, KEY_SETS[key_set], inline=inline, use_event_time=use_event_time
    )
    assert fast.state() == reference.state()
