"""The demo's scenario: a config the monitor accepts, and a drop only v1 suffers."""

from __future__ import annotations

from pathlib import Path

from monitor.demo.scenario import ALERT_NAME, MEASURE, Scenario

START_MS = 1_800_000_000_000


def test_demo_config_passes_the_monitors_validation_with_its_alert_rule(tmp_path: Path) -> None:
    config = Scenario().config("127.0.0.1:9092", tmp_path / "qrels.txt", 9500)
    assert config.windows.size.text == "10s"
    assert config.schedule.interval.ms == 2000
    assert config.segments.keys == ("model",)
    assert config.export.port == 9500
    alerting = config.alerts
    (rule,) = alerting.rules
    assert (rule.name, rule.measure, rule.for_windows) == (ALERT_NAME, MEASURE, 1)
    assert rule.segment is None  # applies to each model; only the data singles out v1


def test_only_v1_degrades_and_at_the_stated_moment() -> None:
    v1, v2 = Scenario(degrade_after_s=20).versions(START_MS)
    assert v1.quality_at(START_MS + 19_999) == 0.8
    assert v1.quality_at(START_MS + 20_000) == 0.3
    assert v2.quality_at(START_MS) == v2.quality_at(START_MS + 3_600_000) == 0.6


def test_first_wholly_degraded_window_is_final_well_within_a_minute() -> None:
    scenario = Scenario()
    window_ms, lateness_ms, tick_ms = 10_000, 2_000, 2_000
    assert (scenario.window, scenario.allowed_lateness, scenario.tick) == ("10s", "2s", "2s")
    for start_ms in range(START_MS, START_MS + window_ms, 1000):  # any phase of the windows
        degrade_ms = scenario.versions(start_ms)[0].degrade_at_ms
        assert degrade_ms is not None
        first_start = -(-degrade_ms // window_ms) * window_ms
        final_ms = first_start + window_ms + lateness_ms + tick_ms
        assert final_ms - start_ms <= 45_000
