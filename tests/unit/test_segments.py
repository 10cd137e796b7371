"""Segment labels: configured keys only, caps, per-window admission, retirement, restore."""

from __future__ import annotations

import pytest

from monitor.windows.segments import OVERFLOW, LabelState, SegmentLabeler, label_under


def test_only_configured_keys_become_labels_in_sorted_order() -> None:
    labeler = SegmentLabeler(["model", "market"], max_values=10)
    assert labeler.label({"model": "v42", "market": "de", "user": "u1"}) == (
        ("market", "de"),
        ("model", "v42"),
    )


def test_missing_key_gets_the_empty_value_so_label_names_stay_the_same() -> None:
    labeler = SegmentLabeler(["model", "market"], max_values=10)
    assert labeler.label({"model": "v1"}) == (("market", ""), ("model", "v1"))
    assert labeler.label(None) == (("market", ""), ("model", ""))


def test_no_configured_keys_gives_the_empty_segment() -> None:
    assert SegmentLabeler([], max_values=5).label({"model": "v1"}) == ()


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_values"):
        SegmentLabeler(["model"], max_values=0)


def labels_of(labeler: SegmentLabeler, start: int, *models: str) -> dict[str, str]:
    """Finalize the window [start, start + 10) holding events of `models`; model -> label."""
    raws = [labeler.label({"model": model}) for model in models]
    labels, _ = labeler.window_labels(start, start + 10, raws)
    return {raw[0][1]: label[0][1] for raw, label in labels.items()}


def test_a_window_admits_new_values_in_sorted_order_while_there_is_room() -> None:
    labeler = SegmentLabeler(["model"], max_values=2)
    assert labels_of(labeler, 0, "v3", "v1", "v2") == {"v1": "v1", "v2": "v2", "v3": OVERFLOW}
    # Admitted values keep their label; the third stays out while both are recent.
    assert labels_of(labeler, 10, "v3", "v2") == {"v2": "v2", "v3": OVERFLOW}


def test_a_value_unseen_for_retire_after_makes_room_for_a_new_release() -> None:
    labeler = SegmentLabeler(["model"], max_values=2, retire_after_ms=25)
    labels_of(labeler, 0, "v1", "v2")
    labels_of(labeler, 10, "v2")  # v1 last seen at 10
    assert labels_of(labeler, 30, "v2", "v3") == {"v2": "v2", "v3": OVERFLOW}  # 10 >= 30 - 25
    raws = [labeler.label({"model": m}) for m in ("v2", "v3")]
    labels, retired = labeler.window_labels(40, 50, raws)  # v1 unseen since 10 < 40 - 25
    assert retired == [(("model", "v1"),)]
    assert {raw[0][1]: label[0][1] for raw, label in labels.items()} == {"v2": "v2", "v3": "v3"}


def test_the_combination_cap_folds_a_whole_segment_into_overflow() -> None:
    labeler = SegmentLabeler(["market", "model"], max_values=10, max_combinations=2)
    raws = [
        labeler.label(s)
        for s in (
            {"model": "a", "market": "de"},
            {"model": "a", "market": "fr"},
            {"model": "b", "market": "de"},
        )
    ]
    labels, _ = labeler.window_labels(0, 10, raws)
    # Combinations are admitted in sorted order: (de, a), (de, b); then the cap is full.
    assert labels == {
        raws[0]: (("market", "de"), ("model", "a")),
        raws[1]: (("market", OVERFLOW), ("model", OVERFLOW)),
        raws[2]: (("market", "de"), ("model", "b")),
    }


def test_labels_continue_from_the_state_a_published_window_carries() -> None:
    # Two lives of the process: the second restores the first's state after window 10 and
    # labels the next windows exactly as an uninterrupted labeler does.
    releases = [("v1", "v2"), ("v2", "v3"), ("v3", "v4"), ("v4", "v5", "v1")]
    uninterrupted = SegmentLabeler(["model"], max_values=2, retire_after_ms=15)
    expected = [labels_of(uninterrupted, 10 * n, *models) for n, models in enumerate(releases)]
    first = SegmentLabeler(["model"], max_values=2, retire_after_ms=15)
    got = [labels_of(first, 10 * n, *models) for n, models in enumerate(releases[:2])]
    state = LabelState.from_json(first.state.to_json())  # through a share's JSON
    second = SegmentLabeler(["model"], max_values=2, retire_after_ms=15)
    second.restore(state)
    got += [labels_of(second, 10 * n, *models) for n, models in enumerate(releases) if n >= 2]
    assert got == expected


def test_a_flood_of_new_values_is_folded_at_intake_past_the_pending_cap() -> None:
    labeler = SegmentLabeler(["user"], max_values=3)
    raws = [labeler.label({"user": f"u{n}"}) for n in range(1_000)]
    # 100 kept for the finalize to decide, the rest folded: memory stays bounded.
    assert len(set(raws)) == labeler.pending_cap + 1 == 101
    assert raws[-1] == (("user", OVERFLOW),)


def test_a_replayed_event_is_labelled_by_its_published_window_state() -> None:
    labeler = SegmentLabeler(["model"], max_values=1)
    labeler.window_labels(0, 10, [labeler.label({"model": "a"})])
    state = labeler.state
    assert label_under(state, ("model",), (("model", "a"),)) == (("model", "a"),)
    assert label_under(state, ("model",), (("model", "b"),)) == (("model", OVERFLOW),)
