"""The conditions: what one finalized window says about one rule, as a `Verdict`.

Each condition is a function of the rule, the window and the rule's track for the segment
(its baseline history and drift detector). Dispatch is by the condition's type, in a table.

- `below`: bad when value < threshold.
- `drop`: bad when value < baseline * (1 - relative) (or baseline - absolute) AND the paired
  test on the common queries gives p < significance; unknown with fewer than `min_queries`
  common queries or fewer than `MIN_BASELINE_WINDOWS` windows of history.
- `trend`: bad on the window where Page-Hinkley detects a downward change.
- `coverage`: bad when queries seen / evaluation-set queries < min.
- `judged`: bad when the mean judged@k < min.
A measure the window has no value for (NaN or absent) gives unknown evidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monitor.alerting.baseline import BaselineWindow, SeriesHistory
from monitor.alerting.drift import PageHinkley
from monitor.alerting.paired_test import paired_drop_test
from monitor.alerting.rules import AlertRule, Below, Coverage, Drop, Judged, Trend
from monitor.alerting.state import Evidence
from monitor.windows.summary import WindowSummary

__all__ = ["MIN_BASELINE_WINDOWS", "Verdict", "WindowTrack", "evaluate_window"]

MIN_BASELINE_WINDOWS = 3


@dataclass(frozen=True)
class Verdict:
    """One rule's reading of one window: the evidence and what the alert will say about it."""

    evidence: Evidence
    value: float
    baseline: float | None = None
    p_value: float | None = None
    worst: tuple[tuple[str, float], ...] = ()
    note: str = ""


@dataclass
class WindowTrack:
    """What a rule remembers about one segment's windows between them.

    Baselines and detectors hold windows of one evaluation-set version: new judgments change
    every query's scores, so comparing across versions would report the edit as a drop. On a
    new version they start afresh (the drop rule is unknown until it has history again).
    """

    history: SeriesHistory | None = None
    detector: PageHinkley | None = None
    version: str | None = None

    @classmethod
    def for_rule(cls, rule: AlertRule) -> WindowTrack:
        condition = rule.condition
        if isinstance(condition, Drop):
            return cls(history=SeriesHistory(condition.baseline_windows, minimum=condition.pinned))
        if isinstance(condition, Trend):
            detector = PageHinkley(condition.delta, condition.threshold, condition.min_windows)
            return cls(detector=detector)
        return cls()

    def follow_version(self, rule: AlertRule, version: str) -> None:
        """Start afresh when the windows come from a new evaluation-set version."""
        if self.version is not None and version != self.version:
            fresh = WindowTrack.for_rule(rule)
            self.history, self.detector = fresh.history, fresh.detector
        self.version = version

    def remember(self, rule: AlertRule, summary: WindowSummary) -> None:
        """Offer a trusted window to the baseline history, once `rule` has judged it (a
        pinned drop rule takes only windows at or above its level: `SeriesHistory.admit`)."""
        if self.history is None:
            return
        value = measure_value(summary, rule.measure)
        if not math.isnan(value):
            window = BaselineWindow(summary.start_ms, value, query_values(summary, rule.measure))
            self.history.admit(window)


def measure_value(summary: WindowSummary, measure: str) -> float:
    """The window's headline value of `measure` (NaN when it has none)."""
    return float(summary.means.get(measure, math.nan))


def query_values(summary: WindowSummary, measure: str) -> dict[str, float]:
    """Each query's mean of `measure` in the window, queries without a value left out."""
    values = {q: float(means.get(measure, math.nan)) for q, means in summary.query_means.items()}
    return {q: v for q, v in values.items() if not math.isnan(v)}


def _threshold_verdict(value: float, minimum: float, what: str) -> Verdict:
    if math.isnan(value):
        return Verdict(Evidence.UNKNOWN, value, note=f"no {what} value in this window")
    evidence = Evidence.BAD if value < minimum else Evidence.GOOD
    return Verdict(evidence, value, baseline=minimum)


def _below(
    condition: Below, rule: AlertRule, summary: WindowSummary, track: WindowTrack
) -> Verdict:
    return _threshold_verdict(measure_value(summary, rule.measure), condition.threshold, "")


def _coverage(
    condition: Coverage, rule: AlertRule, summary: WindowSummary, track: WindowTrack
) -> Verdict:
    verdict = _threshold_verdict(summary.coverage, condition.minimum, "coverage")
    note = (
        f"only {summary.queries} of {summary.evaluation_set_queries} evaluation-set queries "
        "were seen: quality numbers of this window are untrustworthy"
    )
    return Verdict(verdict.evidence, verdict.value, verdict.baseline, note=note)


def _judged(
    condition: Judged, rule: AlertRule, summary: WindowSummary, track: WindowTrack
) -> Verdict:
    value = measure_value(summary, rule.measure)
    verdict = _threshold_verdict(value, condition.minimum, rule.measure)
    note = (
        f"only {value:.0%} of the top {condition.k} documents are judged: "
        "quality numbers of this window are untrustworthy"
    )
    return Verdict(verdict.evidence, verdict.value, verdict.baseline, note=note)


def _trend(
    condition: Trend, rule: AlertRule, summary: WindowSummary, track: WindowTrack
) -> Verdict:
    value = measure_value(summary, rule.measure)
    if math.isnan(value) or track.detector is None:
        return Verdict(Evidence.UNKNOWN, value, note="no value in this window")
    track.detector.update(value)
    detected = track.detector.drift_detected
    evidence = Evidence.BAD if detected else Evidence.GOOD
    note = "Page-Hinkley detected a downward change" if detected else ""
    return Verdict(evidence, value, note=note)


def _drop(
    condition: Drop,
    rule: AlertRule,
    summary: WindowSummary,
    track: WindowTrack,
    *,
    quick: bool,
    level: float | None,
) -> Verdict:
    value = measure_value(summary, rule.measure)
    history = track.history
    if (
        history is None
        or math.isnan(value)
        or len(history) < min(MIN_BASELINE_WINDOWS, history.size)
    ):
        note = "not enough baseline windows yet"
        if condition.pinned is not None:
            note = f"not enough windows at or above the pinned level {condition.pinned:g} yet"
        return Verdict(Evidence.UNKNOWN, value, note=note)
    baseline = condition.pinned if condition.pinned is not None else history.median()
    if condition.relative is not None:
        floor = baseline * (1.0 - condition.relative)
    else:
        floor = baseline - (condition.absolute or 0.0)
    current = query_values(summary, rule.measure)
    if quick and value >= floor:
        # Good whatever the test says: without it (a restore replaying many windows), only
        # whether enough queries are in common decides between good and unknown.
        common = len(current.keys() & history.queries())
        if common < condition.min_queries:
            note = f"only {common} queries in common with the baseline"
            return Verdict(Evidence.UNKNOWN, value, baseline, note=note)
        return Verdict(Evidence.GOOD, value, baseline, note=f"{common} common queries")
    significance = condition.significance if level is None else level
    test = paired_drop_test(current, _reference(history, condition.pinned), level=significance)
    if test.queries < condition.min_queries:
        note = f"only {test.queries} queries in common with the baseline"
        return Verdict(Evidence.UNKNOWN, value, baseline, test.p_value, note=note)
    bad = value < floor and test.p_value < significance
    return Verdict(
        Evidence.BAD if bad else Evidence.GOOD,
        value,
        baseline,
        test.p_value,
        test.worst,
        note=f"{test.queries} common queries, mean per-query change {test.mean_difference:+.4f}",
    )


def _reference(history: SeriesHistory, pinned: float | None) -> dict[str, float]:
    """Each query's baseline value: its mean over the history; for a pinned rule moved so
    that their mean is the pinned level (the history holds only windows at or above it,
    its upper windows on a stable stream: moved down, the reference does not lean up)."""
    means = history.query_means()
    if pinned is None or not means:
        return means
    shift = pinned - math.fsum(means.values()) / len(means)
    return {query: value + shift for query, value in means.items()}


WINDOW_CONDITIONS: dict[type, Callable[[Any, AlertRule, WindowSummary, WindowTrack], Verdict]] = {
    Below: _below,
    Trend: _trend,
    Coverage: _coverage,
    Judged: _judged,
}


def evaluate_window(
    rule: AlertRule,
    summary: WindowSummary,
    track: WindowTrack,
    *,
    quick: bool = False,
    level: float | None = None,
) -> Verdict:
    """Evaluate a window condition; stale rules are evaluated on ticks, not here.

    `quick`: a drop rule skips its paired test on a window whose value is above the floor
    (its verdict is good either way; it then carries no p-value nor worst queries).
    `level`: a drop rule's level under the false-page budget, instead of its significance.
    """
    if isinstance(rule.condition, Drop):
        return _drop(rule.condition, rule, summary, track, quick=quick, level=level)
    return WINDOW_CONDITIONS[type(rule.condition)](rule.condition, rule, summary, track)
