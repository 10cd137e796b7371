"""The demo's terminal view shows quality per segment, outcomes and alerts."""

from __future__ import annotations

import math

from rich.console import Console

from monitor.demo.live_view import AlertView, DemoState, render, sparkline
from monitor.windows.summary import WindowSummary

MEASURE = "ndcg@10:linear"


def _window(model: str, start_s: int, ndcg: float) -> WindowSummary:
    return WindowSummary(
        window="10s",
        start_ms=start_s * 1000,
        end_ms=(start_s + 10) * 1000,
        segment=(("model", model),),
        evaluation_set_version="v",
        events=500,
        queries=150,
        evaluation_set_queries=300,
        means={MEASURE: ndcg},
        sums={MEASURE: ndcg * 150},
        event_means={MEASURE: ndcg},
    )


def _text(state: DemoState) -> str:
    console = Console(record=True, width=120, color_system=None)
    console.print(render(state))
    return console.export_text()


def test_sparkline_scales_values_between_low_and_high_and_leaves_gaps_blank() -> None:
    assert sparkline([0.0, 1.0, 0.5, math.nan, 2.0, -1.0]) == "▁█▅ █▁"
    assert sparkline([0.5, 0.75], low=0.5, high=0.75) == "▁█"


def test_view_shows_each_segments_latest_value_trend_and_coverage() -> None:
    state = DemoState(
        measure=MEASURE,
        metrics_url="http://127.0.0.1:9464/metrics",
        elapsed_s=42,
        windows={
            "model=v1": [_window("v1", 0, 0.82), _window("v1", 10, 0.47)],
            "model=v2": [_window("v2", 0, 0.71), _window("v2", 10, 0.72)],
        },
    )
    lines = _text(state).splitlines()
    v1 = next(line for line in lines if "model=v1" in line)
    v2 = next(line for line in lines if "model=v2" in line)
    assert "0.470" in v1
    assert sparkline([0.82, 0.47]) in v1
    assert "50%" in v1
    assert "0.720" in v2
    assert any("http://127.0.0.1:9464/metrics" in line for line in lines)


def test_view_shows_outcome_counts_and_the_firing_alert_with_its_segment() -> None:
    state = DemoState(
        measure=MEASURE,
        metrics_url="http://127.0.0.1:9464/metrics",
        elapsed_s=60,
        outcomes={"accepted": 5900, "invalid": 80, "duplicate": 40},
        alerts=[AlertView("ndcg10-floor", "model=v1", "firing", 0.46)],
    )
    lines = _text(state).splitlines()
    assert any("accepted" in line and "5900" in line for line in lines)
    assert any("duplicate" in line and "40" in line for line in lines)
    alert = next(line for line in lines if "ndcg10-floor" in line)
    assert "model=v1" in alert
    assert "firing" in alert
    assert "0.460" in alert


def test_view_says_none_when_no_alert_is_active() -> None:
    state = DemoState(measure=MEASURE, metrics_url="u", elapsed_s=1)
    assert any("none" in line.split() for line in _text(state).splitlines())
