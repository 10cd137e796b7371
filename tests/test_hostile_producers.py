"""Hostile producers, round two: what one event can do to labels, samples and explanations.

overflow marker   a producer's own `__other__` segment value
sample bytes      doc ids of any length against the samples' byte budget
sample separator  doc ids holding U+001F, the separator samples once joined on
"""

from __future__ import annotations

from monitor.windows.samples import ENTRY_OVERHEAD, RankingSamples
from monitor.windows.segments import OVERFLOW, SegmentLabeler


def window_labels(labeler: SegmentLabeler, start: int, *models: str) -> dict[str, str]:
    raws = [labeler.label({"model": model}) for model in models]
    labels, _ = labeler.window_labels(start, start + 10, raws)
    return {raw[0][1]: label[0][1] for raw, label in labels.items()}


def test_a_producers_own_overflow_value_does_not_keep_a_new_release_out() -> None:
    labeler = SegmentLabeler(["model"], max_values=10)
    assert window_labels(labeler, 0, "v1") == {"v1": "v1"}
    # `__other__` sorts before every lowercase name; it used to stop the admission loop.
    labels = window_labels(labeler, 10, OVERFLOW, "v1", "v2", "zeta")
    assert labels == {OVERFLOW: OVERFLOW, "v1": "v1", "v2": "v2", "zeta": "zeta"}
    assert OVERFLOW not in labeler.state.values["model"]


def test_a_producers_overflow_value_takes_no_room_under_the_cap() -> None:
    labeler = SegmentLabeler(["model"], max_values=2)
    assert window_labels(labeler, 0, OVERFLOW, "v1", "v2") == {
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
    assert samples.bytes == len(b'["a","b"]') + ENTRY_OVERHEAD


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
