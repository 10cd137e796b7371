"""Fuzzing the service's intake with the C decode path on: every record gets exactly one outcome.

test_events_fuzz.py fuzzes the reference decoder alone; test_native_intake.py compares the C
path with the reference path. Here arbitrary bytes and mutated valid events go through a real
`Intake` whose scorer has the C judgment index (the path `rankmon run` takes), and the test
checks the bookkeeping itself: no exception escapes, the outcome counts add up to the number
of records, and each (partition, offset) is either accepted into a window or rejected, once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor import native
from monitor.ingest.schema import Outcome
from monitor.kafka.consumer import SourceRecord
from monitor.windows.scored import Admission, ScoredEvents
from tests.property.test_native_intake import (
    KEY_SETS,
    MUTATIONS,
    T0,
    VALID_SHAPES,
    Pipeline,
    Statuses,
    event,
    pipeline,
    polls_of,
)
from tests.support.native_guard import require_speedups, speedups_switched_on  # noqa: F401

require_speedups()

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Value = tuple[int, int, bytes | None]  # partition, record timestamp, value


@st.composite
def mutated_events(draw: st.DrawFn) -> bytes | None:
    """A valid event, then a mutation of test_native_intake's, an unknown query, or a cut,
    replaced or inserted bytes at a random place."""
    event_id = draw(st.sampled_from(["r1", "r2", "é3"]) | st.uuids().map(str))
    value = draw(st.sampled_from(VALID_SHAPES))(event_id, T0 + draw(st.integers(-20_000, 400_000)))
    at = draw(st.integers(0, len(value)))
    byte = draw(st.binary(min_size=1, max_size=4))
    edits: list[Callable[[bytes], bytes | None]] = [
        *MUTATIONS,
        lambda v: v.replace(b'"query_id":"', b'"query_id":"unknown-', 1),
        lambda v: v[:at],
        lambda v: v[:at] + byte + v[at + 1 :],
        lambda v: v[:at] + byte + v[at:],
    ]
    return draw(st.sampled_from(edits))(value)


record_values = st.binary(max_size=300) | st.none() | mutated_events()


@st.composite
def fuzzed_polls(draw: st.DrawFn) -> list[list[SourceRecord]]:
    values: list[Value] = draw(
        st.lists(
            st.tuples(
                st.integers(0, 1), st.sampled_from([T0 + 1, T0 + 200_000, -1]), record_values
            ),
            min_size=1,
            max_size=40,
        )
    )
    # Both partitions' watermarks jump ahead somewhere: older events after it are late.
    ahead = draw(st.integers(0, len(values)))
    values[ahead:ahead] = [(p, T0, event(f"ahead-{p}", event_time=T0 + 300_000)) for p in (0, 1)]
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), max_size=3)))
    bounds = [0, *cuts, len(values)]
    flush = [(p, T0, event(f"flush-{p}", event_time=T0 + 900_000)) for p in (0, 1)]
    return polls_of([*(values[a:b] for a, b in pairwise(bounds)), flush])


@contextmanager
def accepted_rows(fast: Pipeline, into: list[tuple[int, int]]) -> Iterator[None]:
    """Collect (partition, offset) of every record the windows counted."""
    real = fast.windows.add_events

    def spy(batch: ScoredEvents) -> Admission:
        admission = real(batch)
        turned_away = {*admission.late, *admission.duplicates, *admission.already_published}
        counted = [row for row in range(len(batch.event_ids)) if row not in turned_away]
        assert len(counted) == admission.accepted
        into.extend((int(batch.partitions[r]), int(batch.offsets[r])) for r in counted)
        return admission

    with mock.patch.object(fast.windows, "add_events", spy):
        yield


def outcomes_of(
    polls: Sequence[Sequence[SourceRecord]], inline: bool
) -> tuple[Pipeline, list[tuple[int, int]], Statuses]:
    """Feed the polls to an intake on the C path: the pipeline, the counted records, what the
    C scanner said of each record."""
    fast = pipeline(KEY_SETS["cutoffs only"], speedups=True, inline=inline)
    accepted: list[tuple[int, int]] = []
    statuses = Statuses()
    spy = statuses.wrap(native.speedups.decode_events)  # what monitor.ingest.intake calls
    with (
        mock.patch.object(native.speedups, "decode_events", spy),
        accepted_rows(fast, accepted),
    ):
        for poll in polls:
            fast.feed(poll)
    return fast, accepted, statuses


@FUZZ
@given(polls=fuzzed_polls(), inline=st.booleans())
def test_arbitrary_bytes_and_mutated_events_through_the_c_intake_each_get_exactly_one_outcome(
    polls: list[list[SourceRecord]], inline: bool
) -> None:
    fast, accepted, statuses = outcomes_of(polls, inline)
    records = [(r.partition, r.offset) for poll in polls for r in poll]

    assert sum(statuses.counts.values()) == len(records)  # the C scanner saw every record
    assert sum(fast.outcomes.counts.values()) == len(records)
    rejected = [(partition, offset) for partition, offset, _, _ in fast.rejects.seen]
    assert Counter(accepted + rejected) == Counter(records)  # each once: counted or rejected
    # The counts by outcome are those of the records: accepted ones and each kind of reject.
    by_outcome = Counter(outcome for _, _, outcome, _ in fast.rejects.seen)
    by_outcome[Outcome.ACCEPTED.value] += len(accepted)
    counted: Counter[str] = Counter()
    for (outcome, _), amount in fast.outcomes.counts.items():
        counted[outcome] += amount
    assert +counted == +by_outcome
    assert set(counted) <= {outcome.value for outcome in Outcome}
