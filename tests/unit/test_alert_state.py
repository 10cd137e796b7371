"""Alert states move like Prometheus's: `for` bad windows fire, `keep_firing_for` good ones hold."""

from __future__ import annotations

import pytest

from monitor.alerting.state import AlertState, Evidence, Status

B, G, U = Evidence.BAD, Evidence.GOOD, Evidence.UNKNOWN
OFF, P, F = Status.INACTIVE, Status.PENDING, Status.FIRING
WINDOW_MS = 300_000


def run(state: AlertState, evidence: list[Evidence]) -> list[Status]:
    """Feed one piece of evidence per 5-minute window; the status after each."""
    statuses = []
    for index, item in enumerate(evidence):
        state.observe(item, index * WINDOW_MS)
        statuses.append(state.status)
    return statuses


@pytest.mark.parametrize(
    ("for_windows", "keep", "evidence", "expected"),
    [
        # One bad window fires at once with for = 1; the first good one resolves it.
        (1, 0, [B, G], [F, OFF]),
        # for = 2: the first bad window is pending, the second fires.
        (2, 0, [B, B, G], [P, F, OFF]),
        # A good window while pending clears the streak: one noisy window never pages.
        (2, 0, [B, G, B, G], [P, OFF, P, OFF]),
        # keep_firing_for = 1 stays firing through one good window, resolves on the second.
        (1, 1, [B, G, G], [F, F, OFF]),
        # A bad window between good ones restarts the keep_firing_for count.
        (1, 1, [B, G, B, G, G], [F, F, F, F, OFF]),
        # Unknown evidence neither advances nor resets anything.
        (2, 0, [B, U, B], [P, P, F]),
        (1, 0, [B, U, U, G], [F, F, F, OFF]),
    ],
)
def test_status_follows_the_evidence_window_by_window(
    for_windows: int, keep: int, evidence: list[Evidence], expected: list[Status]
) -> None:
    assert run(AlertState(for_windows, keep), evidence) == expected


def test_changes_are_reported_only_when_the_status_moves() -> None:
    state = AlertState(for_windows=2, keep_firing_for=0)
    first = state.observe(B, 0)
    second = state.observe(B, WINDOW_MS)
    third = state.observe(B, 2 * WINDOW_MS)
    resolved = state.observe(G, 3 * WINDOW_MS)
    assert first is not None and (first.before, first.after) == (OFF, P)
    assert second is not None and (second.before, second.after) == (P, F)
    assert third is None
    assert resolved is not None and resolved.resolved


def test_clearing_a_pending_alert_is_not_a_resolution() -> None:
    state = AlertState(for_windows=3, keep_firing_for=0)
    state.observe(B, 0)
    change = state.observe(G, WINDOW_MS)
    assert change is not None and change.after is OFF and not change.resolved


def test_active_since_is_the_first_bad_window_of_the_episode() -> None:
    state = AlertState(for_windows=2, keep_firing_for=0)
    run(state, [B, B, B])
    assert state.active_since_ms == 0
    state.observe(G, 3 * WINDOW_MS)
    assert state.active_since_ms is None


def test_nonsense_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        AlertState(for_windows=0, keep_firing_for=0)
