"""Hostile producers, round two: what one event can do to labels, samples and explanations.

overflow marker   a producer's own `__other__` segment value
sample bytes      doc ids of any length against the samples' byte budget
sample separator  doc ids holding U+001F, the separator samples once joined on
future dates      one event dated minutes ahead against the watermark
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from monitor.config.loader import load_config
from monitor.errors import ConfigError
from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows, ScoredEvents
from monitor.windows.samples import ENTRY_OVERHEAD, RankingSamples
from monitor.windows.segments import OVERFLOW, SegmentLabeler
from monitor.windows.spec import WindowSpec
from tests.unit.test_segments import labels_of


def test_a_producers_own_overflow_value_does_not_keep_a_new_release_out() -> None:
    labeler = SegmentLabeler(["model"], max_values=10)
    assert labels_of(labeler, 0, "v1") == {"v1": "v1"}
    # `__other__` sorts before every lowercase name; it used to stop the admission loop.
    labels = labels_of(labeler, 10, OVERFLOW, "v1", "v2", "zeta")
    assert labels == {OVERFLOW: OVERFLOW, "v1": "v1", "v2": "v2", "zeta": "zeta"}
    assert OVERFLOW not in labeler.state.values["model"]


def test_a_producers_overflow_value_takes_no_room_under_the_cap() -> None:
    labeler = SegmentLabeler(["model"], max_values=2)
    assert labels_of(labeler, 0, OVERFLOW, "v1", "v2") == {
        OVERFLOW: OVERFLOW,
        "v1": "v1",
        "v2": "v2",
    }


def test_long_document_ids_are_held_to_the_samples_byte_budget() -> None:
    budget = 1_000_000
    samples = RankingSamples(pane_ms=10_000, depth=10, limit=50_000, max_bytes=budget)
    ranking = [f"{i}-" + "x" * 100_000 for i in range(10)]
    kept = 0
    for query in range(200):
        key = samples.key((), f"q{query}", 0)
        assert key is not None
        samples.keep(key, ranking)
        kept += samples.ranking((), f"q{query}", 0, 10_000) is not None
    assert samples.bytes <= budget
    assert kept == 0  # one such ranking is 1 MB: none fits
    assert samples.skipped == 200
    short = samples.key((), "short", 0)
    assert short is not None
    samples.keep(short, ["a", "b"])
    assert samples.ranking((), "short", 0, 10_000) == ["a", "b"]
    assert samples.bytes == sys.getsizeof('["a","b"]') + ENTRY_OVERHEAD


def test_forgetting_old_panes_gives_their_bytes_back() -> None:
    samples = RankingSamples(pane_ms=10, depth=5, limit=100, max_bytes=10_000)
    for pane in (0, 10, 20):
        key = samples.key((), "q", pane)
        assert key is not None
        samples.keep(key, ["d1", "d2"])
    held = samples.bytes
    samples.forget_before(20)
    assert samples.bytes == held // 3
    samples.forget_before(100)
    assert samples.bytes == 0


def test_a_document_id_holding_the_old_separator_comes_back_as_it_was_served() -> None:
    samples = RankingSamples(pane_ms=10, depth=5, limit=100)
    served = ["zz\u001fbest", "good", "x\u0000y", "\u2028"]
    key = samples.key((), "q", 0)
    assert key is not None
    samples.keep(key, served)
    assert samples.ranking((), "q", 0, 10) == served


# -- future-dated events -----------------------------------------------------------------

SECOND = 1000
T = 1_767_225_600_000


def skewed_windows(skew_ms: int | None) -> EventWindows:
    spec = WindowSpec.tumbling(10 * SECOND, allowed_lateness_ms=60 * SECOND)
    return EventWindows(spec, ["ndcg@10:linear"], FakeClock(T), max_clock_skew_ms=skew_ms)


def stream(times_s: list[int], stamps_s: list[int]) -> ScoredEvents:
    n = len(times_s)
    return ScoredEvents(
        partitions=[0] * n,
        offsets=list(range(n)),
        event_times_ms=[T + t * SECOND for t in times_s],
        event_ids=[f"e{i}" for i in range(n)],
        query_ids=["q"] * n,
        segments=[()] * n,
        measures=np.ones((n, 1)),
        record_times_ms=[T + s * SECOND if s >= 0 else 0 for s in stamps_s],
    )


def test_one_event_dated_290_s_ahead_makes_none_of_the_next_300_honest_events_late() -> None:
    honest = list(range(1, 301))
    times, stamps = [290, *honest], [0, *honest]
    admission = skewed_windows(10 * SECOND).add_events(stream(times, stamps))
    assert (admission.accepted, admission.late) == (301, [])
    # Without the bound, as before: the watermark jumps to 290 - 60 s, and every honest event
    # whose window ends by then is late.
    unbounded = skewed_windows(None).add_events(stream(times, stamps))
    assert len(unbounded.late) == 229


def test_the_bound_is_the_record_timestamp_so_a_replay_rebuilds_the_same_watermark() -> None:
    times, stamps = [290, *range(1, 301)], [0, *range(1, 301)]
    first, second = skewed_windows(10 * SECOND), skewed_windows(10 * SECOND)
    first.add_events(stream(times, stamps))
    # The replay reads the same records later: processing time plays no part.
    second._clock.advance(3_600 * SECOND)  # type: ignore[attr-defined]
    second.add_events(stream(times, stamps))
    assert first.watermark_ms == second.watermark_ms == T + 300 * SECOND - 60 * SECOND


def test_an_event_behind_its_record_timestamp_moves_the_watermark_by_its_own_time() -> None:
    windows = skewed_windows(10 * SECOND)
    windows.add_events(stream([100], [500]))  # a backfill: old event, fresh record
    assert windows.watermark_ms == T + 100 * SECOND - 60 * SECOND


def test_a_record_without_a_timestamp_is_not_bounded() -> None:
    windows = skewed_windows(10 * SECOND)
    windows.add_events(stream([100], [-1]))
    assert windows.watermark_ms == T + 100 * SECOND - 60 * SECOND


# -- credentials in the page's public link -------------------------------------------------


def test_an_external_url_with_user_info_is_refused_without_echoing_it(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    config = tmp_path / "rankmon.yaml"
    config.write_text(
        "kafka: {topic: events}\nevaluation_set: {path: q.txt}\n"
        "export: {external_url: 'https://admin:hunter2@rankmon.example.com'}\n"
    )
    with pytest.raises(ConfigError) as refused:
        load_config(config, environ={})
    assert "export.external_url" in str(refused.value)
    assert "user info" in str(refused.value)
    assert "hunter2" not in str(refused.value)
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "check-config", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "hunter2" not in done.stdout + done.stderr
