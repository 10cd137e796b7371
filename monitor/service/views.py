"""What other threads see of the monitor: the live view's snapshot, the alerts on the page,
and the explanations' API and page.

The loop owns the state; after each change it hands `LiveView` a copy (recent windows per
segment without their per-query means, the active alerts), which the HTTP thread and the
demo's live view read under one lock, never the loop's own dictionaries.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from monitor.alerting import ActiveAlert
from monitor.clock import Clock
from monitor.config.loader import Config
from monitor.explain.api import ExplainApi
from monitor.explain.page import AlertView, ExplainPages
from monitor.explain.store import ExplainStore, VersionBridge
from monitor.export.http import Route
from monitor.export.window_log import HEADLINE_KINDS
from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet
from monitor.service.wiring import Tally
from monitor.windows.samples import RankingSamples
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["HISTORY", "LiveView", "MonitorSnapshot", "explain_routes"]

HISTORY = 60  # finalized windows kept per segment for `snapshot()` (the demo's live view)


@dataclass(frozen=True)
class MonitorSnapshot:
    """What the monitor has seen, for a live view: recent windows, outcomes, alerts.

    The `history` summaries carry no `query_means` (memory: see `LiveView.record`).
    """

    history: dict[Segment, list[WindowSummary]]
    outcomes: dict[str, int]
    alerts: list[ActiveAlert]
    watermark_ms: int | None
    evaluation_set_version: str


class LiveView:
    """The loop's copies for other threads: windows per segment, outcome totals, alerts."""

    def __init__(self, tally: Tally) -> None:
        self._tally = tally
        self._lock = threading.Lock()
        self._history: dict[Segment, deque[WindowSummary]] = {}
        self._active_alerts: list[ActiveAlert] = []

    def record(self, summary: WindowSummary) -> None:
        """A finalized window, kept without its per-query means."""
        with self._lock:
            history = self._history.setdefault(summary.segment, deque(maxlen=HISTORY))
            # Per-query means are what a window costs (queries x measures, ~0.5 MB for 300
            # queries): sixty of them per segment grew the soak's RSS by 60 MB. The live view
            # needs only the means.
            history.append(replace(summary, query_means={}))

    def retire(self, segment: Segment) -> None:
        """Forget a retired segment's windows."""
        with self._lock:
            self._history.pop(segment, None)

    def copy_alerts(self, active: list[ActiveAlert]) -> None:
        """The alerts as the engine has them now (the loop's copy)."""
        with self._lock:
            self._active_alerts = active

    def snapshot(self, watermark_ms: int | None, version: str) -> MonitorSnapshot:
        """A consistent copy of what a live view shows; safe from any thread."""
        with self._lock:
            history = {segment: list(windows) for segment, windows in self._history.items()}
            outcomes = dict(self._tally.totals)
            alerts = list(self._active_alerts)
        return MonitorSnapshot(history, outcomes, alerts, watermark_ms, version)

    def alert_views(self) -> list[AlertView]:
        """The alerts for the page (from the HTTP thread: the loop's copy)."""
        with self._lock:
            active = list(self._active_alerts)
        return [
            AlertView(
                a.rule.name,
                a.rule.severity,
                a.status.value,
                a.segment,
                a.rule.measure,
                _alert_why(a),
                a.window,
                since_ms=a.fired_at_ms if a.status.value == "firing" else a.state.active_since_ms,
                windows=a.state.bad_streak,
                p_value=None if a.verdict is None else a.verdict.p_value,
                runbook_url=a.rule.runbook_url,
                value=None if a.verdict is None else a.verdict.value,
                baseline=None if a.verdict is None else a.verdict.baseline,
            )
            for a in active
        ]


def explain_routes(
    config: Config,
    keys: list[MeasureKey],
    *,
    store: ExplainStore,
    samples: RankingSamples | None,
    evaluation_set: Callable[[], EvaluationSet],
    alert_views: Callable[[], list[AlertView]],
    clock: Clock,
    texts: Mapping[str, str] | None = None,
    bridge: VersionBridge | None = None,
) -> dict[str, Route]:
    """`/api/v1/*`, `/` and `/explain` (`monitor.explain`), read by the HTTP thread."""
    alerting = config.alerts
    spans = {
        rule.measure: span
        for rule in alerting.rules
        if (span := rule.condition.baseline_span()) is not None
    }
    api = ExplainApi(
        store,
        samples,
        evaluation_set,
        default_measure=next((str(k) for k in keys if k.kind == "ndcg"), str(keys[0])),
        baseline_windows=lambda measure: spans.get(measure, store.keep),
        query_texts=texts,
        bridge=bridge,
    )
    pages = ExplainPages(
        api,
        headline=_page_headline(keys),
        alerts=alert_views,
        floors=lambda measure, segment: [
            (rule.name, floor)
            for rule in alerting.rules
            if (floor := rule.condition.floor()) is not None
            and rule.measure == measure
            and (rule.segment is None or set(rule.segment) <= set(segment))
        ],
        refresh_s=config.explain.refresh.ms // 1000 or None,
        now_ms=clock.now_ms,
    )
    return {**api.routes(), **pages.routes()}


def _page_headline(keys: list[MeasureKey]) -> list[str]:
    """The page's headline measures: nDCG at the cutoff nearest 10 (first gain), MRR, MAP."""
    ndcg = [k for k in keys if k.kind == "ndcg" and k.k is not None]
    chosen = [str(min(ndcg, key=lambda k: (abs((k.k or 0) - 10), k.k or 0)))] if ndcg else []
    return chosen + [str(k) for k in keys if k.kind in HEADLINE_KINDS and k.kind != "ndcg"]


def _alert_why(alert: ActiveAlert) -> str:
    verdict = alert.verdict
    if verdict is None:
        return ""
    if verdict.note:
        return verdict.note
    if verdict.baseline is not None:
        return f"{verdict.value:.4f} against {verdict.baseline:g}"
    return f"{verdict.value:.4f}"
