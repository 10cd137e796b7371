"""The demo's alert rule on the real alert engine, as the demo's view reads it back."""

from __future__ import annotations

from pathlib import Path

from monitor.alerting import AlertEngine
from monitor.demo.live_view import AlertView
from monitor.demo.scenario import ALERT_NAME, MEASURE, Scenario
from monitor.demo.snapshot_view import demo_state
from monitor.service import MonitorSnapshot
from monitor.windows.summary import WindowSummary

START_MS = 1_800_000_000_000


def _window(model: str, start_ms: int, ndcg: float) -> WindowSummary:
    queries = 150
    return WindowSummary(
        window="10s",
        start_ms=start_ms,
        end_ms=start_ms + 10_000,
        segment=(("model", model),),
        evaluation_set_version="v",
        events=500,
        queries=queries,
        evaluation_set_queries=300,
        means={MEASURE: ndcg},
        sums={MEASURE: ndcg * queries},
        event_means={MEASURE: ndcg},
    )


def test_a_window_below_the_floor_fires_for_its_model_only_and_the_view_shows_it(
    tmp_path: Path,
) -> None:
    config = Scenario().config("127.0.0.1:9092", tmp_path / "qrels.txt", 9500)
    alerting = config.alerts
    engine = AlertEngine(alerting, start_ms=START_MS)
    before = [_window("v1", START_MS, 0.81), _window("v2", START_MS, 0.72)]
    after = [_window("v1", START_MS + 10_000, 0.47), _window("v2", START_MS + 10_000, 0.70)]
    engine.observe(before, START_MS + 12_000)
    assert engine.active() == []
    engine.observe(after, START_MS + 22_000)
    history = {w.segment: [w, a] for w, a in zip(before, after, strict=True)}
    snapshot = MonitorSnapshot(history, {"accepted": 2000}, engine.active(), None, "v")

    state = demo_state(snapshot, MEASURE, "http://127.0.0.1:9500/metrics", 22.0)

    assert state.alerts == [AlertView(ALERT_NAME, "model=v1", "firing", 0.47)]
    assert [w.means[MEASURE] for w in state.windows["model=v2"]] == [0.72, 0.70]
    assert state.outcomes == {"accepted": 2000}
