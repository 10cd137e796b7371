from __future__ import annotations

import math

import pytest

from monitor.windows.summary import WindowSummary, segment_label


def _summary() -> WindowSummary:
    return WindowSummary(
        window="5m",
        start_ms=1_700_000_100_000,
        end_ms=1_700_000_400_000,
        segment=(("market", "de"), ("model", "v42")),
        evaluation_set_version="abc123def456",
        events=7,
        queries=2,
        evaluation_set_queries=4,
        means={"ndcg@10:linear": 0.5, "mrr": math.nan},
        sums={"ndcg@10:linear": 1.0, "mrr": math.nan},
        event_means={"ndcg@10:linear": 0.45, "mrr": 0.25},
        query_means={"q1": {"ndcg@10:linear": 0.25}, "q2": {"ndcg@10:linear": 0.75}},
    )


def test_summary_round_trips_through_its_windows_topic_record() -> None:
    original = _summary()
    restored = WindowSummary.from_json(original.to_json())
    assert restored.segment == original.segment
    assert restored.query_means == original.query_means
    assert restored.means["ndcg@10:linear"] == 0.5
    # NaN (no defined value) is written as JSON null and read back as NaN
    assert math.isnan(restored.means["mrr"])
    assert restored.coverage == 0.5


def test_summary_key_names_window_start_and_segment() -> None:
    assert _summary().key == "5m/1700000100000/market=de,model=v42"


def test_empty_segment_is_labelled_all() -> None:
    assert segment_label(()) == "all"


def test_record_that_is_not_a_summary_is_refused_with_value_error() -> None:
    with pytest.raises(ValueError):
        WindowSummary.from_json(b'{"schema_version": 1, "window": "5m"}')
    with pytest.raises(ValueError):
        WindowSummary.from_json(b"[1, 2]")
    with pytest.raises(ValueError):
        WindowSummary.from_json(b"\xff")
