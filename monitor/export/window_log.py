"""What the service logs about its windows: one line per finalized window, and once a minute
the state the windows hold (a month-long run shows growth there first).

    window finalized  window=5m start_ms=... segment=model=v42 events=812 queries=240
                      coverage=0.24 version=... too_few_queries=False ndcg@10:linear=0.61 ...
    window state      open_windows=2 cells=480 registered_cells=3120 event_ids=1650
                      published_marks=0 held_shares=0
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from monitor.clock import Clock
from monitor.logs import fields
from monitor.scoring.catalog import KIND_TABLE, MeasureKey
from monitor.windows.engine import EventWindows
from monitor.windows.summary import WindowSummary, segment_label

__all__ = ["STATE_INTERVAL_S", "WindowLog"]

STATE_INTERVAL_S = 60.0
HEADLINE_KINDS = tuple(kind.name for kind in KIND_TABLE if kind.headline)
HEADLINES = 4  # measures on a finalized window's line

_log = logging.getLogger("monitor.service")  # operators filter on the service's logger


class WindowLog:
    """Log lines about windows, with their headline measures chosen once from the config."""

    def __init__(self, keys: Sequence[MeasureKey], min_queries: int, clock: Clock) -> None:
        self._headlines = [str(key) for key in keys if key.kind in HEADLINE_KINDS]
        self._min_queries = min_queries
        self._clock = clock
        self._state_logged_s: float | None = None

    def finalized(self, summary: WindowSummary) -> None:
        """One line per finalized window and segment, with its headline means."""
        keys = [key for key in self._headlines if key in summary.means][:HEADLINES]
        _log.info(
            "window finalized",
            extra=fields(
                window=summary.window,
                start_ms=summary.start_ms,
                end_ms=summary.end_ms,
                segment=segment_label(summary.segment),
                events=summary.events,
                queries=summary.queries,
                coverage=round(summary.coverage, 4),
                version=summary.evaluation_set_version,
                too_few_queries=summary.queries < self._min_queries,
                **({"failed_queries": summary.failed_queries} if summary.failed_queries else {}),
                **({"replays": ",".join(summary.replays)} if summary.replays else {}),
                **{key: round(summary.means[key], 6) for key in keys},
            ),
        )

    def state(self, windows: EventWindows, held_shares: int) -> None:
        """At most once per `STATE_INTERVAL_S`: what the windows hold."""
        now = self._clock.monotonic()
        if self._state_logged_s is not None and now - self._state_logged_s < STATE_INTERVAL_S:
            return
        self._state_logged_s = now
        size = windows.state_size()
        _log.info(
            "window state",
            extra=fields(
                open_windows=windows.open_windows,
                cells=size.cells,
                registered_cells=size.registered_cells,
                event_ids=size.event_ids,
                published_marks=size.published,
                held_shares=held_shares,
            ),
        )
