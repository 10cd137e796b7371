"""Page-Hinkley flags a sustained downward shift, hand-checked, and stays quiet on a flat series."""

from __future__ import annotations

import math

import pytest

from monitor.alerting.drift import PageHinkley


def detections(detector: PageHinkley, values: list[float]) -> list[int]:
    found = []
    for index, value in enumerate(values):
        detector.update(value)
        if detector.drift_detected:
            found.append(index)
    return found


def test_a_step_down_is_detected_by_hand_computed_statistic() -> None:
    # delta 0: means 1, 1, 0.9333; g = 0, 0, 0.1333 > 0.1 on the third value.
    detector = PageHinkley(delta=0.0, threshold=0.1, min_windows=1)
    assert detections(detector, [1.0, 1.0, 0.8]) == [2]


def test_statistic_below_threshold_does_not_detect() -> None:
    detector = PageHinkley(delta=0.0, threshold=0.2, min_windows=1)
    assert detections(detector, [1.0, 1.0, 0.8]) == []
    assert detector.statistic == pytest.approx(0.8 / 6)


def test_a_flat_series_never_drifts() -> None:
    detector = PageHinkley(delta=0.005, threshold=0.05, min_windows=5)
    assert detections(detector, [0.6, 0.61, 0.59, 0.6] * 50) == []


def test_a_slow_slide_no_window_shows_is_detected() -> None:
    # 0.005 per window: each step is under the noise a `below` rule would tolerate.
    values = [0.6] * 10 + [0.6 - 0.005 * i for i in range(1, 30)]
    detector = PageHinkley(delta=0.001, threshold=0.05, min_windows=5)
    found = detections(detector, values)
    assert found and 10 < found[0] < 30


def test_no_detection_before_min_windows() -> None:
    detector = PageHinkley(delta=0.0, threshold=0.1, min_windows=4)
    assert detections(detector, [1.0, 1.0, 0.5]) == []


def test_missing_values_are_skipped() -> None:
    detector = PageHinkley(delta=0.0, threshold=0.1, min_windows=1)
    assert detections(detector, [1.0, math.nan, 1.0, 0.8]) == [3]
