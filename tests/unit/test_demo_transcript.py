"""Without the live view, the demo prints each new window and each alert change once."""

from __future__ import annotations

from monitor.demo.live_view import AlertView, DemoState
from monitor.demo.transcript import Transcript
from monitor.windows.summary import WindowSummary

MEASURE = "ndcg@10:linear"
START_MS = 1_800_000_000_000  # 2027-01-15 08:00:00 UTC


def _window(start_ms: int, ndcg: float) -> WindowSummary:
    return WindowSummary(
        window="10s",
        start_ms=start_ms,
        end_ms=start_ms + 10_000,
        segment=(("model", "v1"),),
        evaluation_set_version="v",
        events=480,
        queries=140,
        evaluation_set_queries=300,
        means={MEASURE: ndcg},
        sums={},
        event_means={},
    )


def _state(windows: list[WindowSummary], alerts: list[AlertView]) -> DemoState:
    return DemoState(MEASURE, "u", 0, windows={"model=v1": windows}, alerts=alerts)


def test_each_window_and_alert_change_is_printed_once_in_order() -> None:
    lines: list[str] = []
    transcript = Transcript(lines.append)
    first = _window(START_MS, 0.821)
    second = _window(START_MS + 10_000, 0.472)
    pending = AlertView("ndcg10-floor", "model=v1", "pending", 0.472)
    firing = AlertView("ndcg10-floor", "model=v1", "firing", 0.468)

    transcript.update(_state([first], []), START_MS + 12_000)
    transcript.update(_state([first, second], [pending]), START_MS + 22_000)
    transcript.update(_state([second], [pending]), START_MS + 24_000)
    transcript.update(_state([first, second], [firing]), START_MS + 32_000)
    transcript.update(_state([first, second], []), START_MS + 42_000)

    assert lines == [
        "window 08:00:00-08:00:10 model=v1 ndcg@10:linear=0.821 queries=140 events=480",
        "window 08:00:10-08:00:20 model=v1 ndcg@10:linear=0.472 queries=140 events=480",
        "alert ndcg10-floor model=v1 pending value=0.472",
        "alert ndcg10-floor model=v1 firing value=0.468",
        "alert ndcg10-floor model=v1 resolved",
    ]
    assert [(c.state, c.at_ms - START_MS) for c in transcript.alert_changes] == [
        ("pending", 22_000),
        ("firing", 32_000),
        ("resolved", 42_000),
    ]


def test_every_window_stays_recorded_after_the_snapshot_forgets_it() -> None:
    transcript = Transcript()
    windows = [_window(START_MS + i * 10_000, 0.8) for i in range(5)]
    for i in range(5):
        transcript.update(_state(windows[max(0, i - 1) : i + 1], []), START_MS)
    assert list(transcript.windows["model=v1"].values()) == windows
