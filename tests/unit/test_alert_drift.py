"""Page-Hinkley on standardized window means: a step down detected by a hand-computed
statistic, a threshold that sets the run length, and a skewed window's tail read as such."""

from __future__ import annotations

import math

import numpy as np
import pytest

from monitor.alerting.drift import PageHinkley, run_length, threshold_for_run_length


def detections(detector: PageHinkley, windows: list[list[float]], threshold: float) -> list[int]:
    found = []
    for index, values in enumerate(windows):
        detector.update(values, threshold)
        if detector.drift_detected:
            found.append(index)
    return found


# Symmetric windows (no skew): means 0.5, 0.5, 0.3, each with squares 0.02.
STEP = [[0.4, 0.6], [0.4, 0.6], [0.2, 0.4]]
# Third window: pooled variance (0.02 x 3) / 3 = 0.02, mean before 0.5 over 4 queries,
# z = -0.2 / sqrt(0.02 / 2 + 0.02 / 4) = -1.633.
STEP_Z = -0.2 / math.sqrt(0.015)


def test_a_step_down_is_detected_by_the_hand_computed_statistic() -> None:
    detector = PageHinkley(delta=0.0, min_windows=1)
    assert detections(detector, STEP, threshold=1.5) == [2]


def test_a_statistic_under_the_threshold_does_not_detect() -> None:
    detector = PageHinkley(delta=0.0, min_windows=1)
    assert detections(detector, STEP, threshold=1.7) == []
    assert detector.z == pytest.approx(STEP_Z)
    assert detector.statistic == pytest.approx(-STEP_Z)


def test_delta_is_taken_off_each_window_in_standard_errors() -> None:
    detector = PageHinkley(delta=0.5, min_windows=1)
    detections(detector, STEP, threshold=100.0)
    # window 2: z 0, shortfall -0.5 (the minimum); window 3: +1.633 - 0.5 above it
    assert detector.statistic == pytest.approx(-STEP_Z - 0.5)


def test_no_detection_before_min_windows() -> None:
    detector = PageHinkley(delta=0.0, min_windows=4)
    assert detections(detector, STEP, threshold=1.5) == []


def test_windows_of_fewer_than_two_values_and_missing_values_are_skipped() -> None:
    detector = PageHinkley(delta=0.0, min_windows=1)
    windows = [[0.4, 0.6], [math.nan, 0.9], [0.4, 0.6, math.nan], [0.2, 0.4]]
    assert detections(detector, windows, threshold=1.5) == [3]


def test_stable_noisy_series_drift_no_more_often_than_the_threshold_s_run_length() -> None:
    # 10 seeded streams of 2,000 windows of 40 queries; the default threshold's in-control
    # run length is 30 days of 5-minute windows (8,640): about 2.3 false detections expected.
    threshold = threshold_for_run_length(288 * 30, 0.5)
    found = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        detector = PageHinkley(delta=0.5, min_windows=6)
        windows = [rng.uniform(0.3, 0.9, 40).tolist() for _ in range(2_000)]
        found += len(detections(detector, windows, threshold))
    expected = 20_000 / (288 * 30)
    assert found <= expected + 2 * math.sqrt(expected)


def test_a_slow_slide_no_window_shows_is_detected() -> None:
    # Each window 0.2 standard errors lower than the one before: none stands out alone.
    rng = np.random.default_rng(3)
    noise = [rng.normal(0.0, 0.1, 50) for _ in range(80)]
    stderr = 0.1 / math.sqrt(50)
    windows = [(0.6 + x - (0.2 * stderr * max(0, i - 20))).tolist() for i, x in enumerate(noise)]
    detector = PageHinkley(delta=0.5, min_windows=6)
    found = detections(detector, windows, threshold_for_run_length(288 * 30, 0.5))
    assert found and 20 < found[0] < 80


def test_the_threshold_gives_the_run_length_asked_for() -> None:
    for windows in (50.0, 1_000.0, 288 * 30.0):
        for delta in (0.0, 0.25, 0.5, 1.0):
            threshold = threshold_for_run_length(windows, delta)
            assert run_length(threshold, delta) == pytest.approx(windows, rel=1e-9)
    # Siegmund at delta 0: (h + 1.166)^2
    assert run_length(2.0, 0.0) == pytest.approx(3.166**2)


def test_a_low_window_from_a_left_skewed_population_counts_less_than_its_plain_z() -> None:
    # Most queries near 0.9, a few at 0: a window with two zeros is in the tail the
    # population has, not a change; the skew correction reads it closer to 0.
    base = [0.9, 0.92, 0.88, 0.91, 0.0, 0.9, 0.89, 0.93, 0.9, 0.91]
    low = [0.9, 0.0, 0.88, 0.0, 0.0, 0.9, 0.89, 0.93, 0.9, 0.91]
    detector = PageHinkley(delta=0.0, min_windows=1)
    for window in (base, base, base, low):
        detector.update(window, 100.0)
    pooled = sum(float(((np.array(w) - np.mean(w)) ** 2).sum()) for w in (base,) * 3 + (low,))
    plain = (np.mean(low) - np.mean(base)) / math.sqrt(pooled / 36 * (1 / 10 + 1 / 30))
    assert plain < -1.5  # far enough out (|z| > 1) that the correction pulls it in
    assert plain < detector.z < 0
