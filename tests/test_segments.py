from __future__ import annotations

import pytest

from monitor.segments import OVERFLOW, SegmentLabeler


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


def test_values_past_the_cap_fold_into_the_overflow_value() -> None:
    labeler = SegmentLabeler(["model"], max_values=2)
    assert labeler.label({"model": "a"}) == (("model", "a"),)
    assert labeler.label({"model": "b"}) == (("model", "b"),)
    assert labeler.label({"model": "c"}) == (("model", OVERFLOW),)
    # values admitted before the cap keep their own label
    assert labeler.label({"model": "a"}) == (("model", "a"),)


def test_no_configured_keys_gives_the_empty_segment() -> None:
    assert SegmentLabeler([], max_values=5).label({"model": "v1"}) == ()


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_values"):
        SegmentLabeler(["model"], max_values=0)
