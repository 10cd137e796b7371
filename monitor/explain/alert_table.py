"""The alerts as the page shows them to the engineer an alert woke: what is wrong, since when,
how sure, and what to do, on one screen.

Firing alerts first (critical before warning before the rest, the longest-firing first), then
pending ones. Each row says its state in words (the page is readable without colour), since
when and for how many windows, the value against its threshold or baseline and the p-value
that gated it, and links to the explanation of its window (every kind of alert has one: a
rule on no per-query measure, coverage, opens the headline measure's; one with no window,
stale, its segment on the page), to its runbook, and the `amtool` line that silences it.
"""

from __future__ import annotations

import html
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monitor.explain.charts import utc_time
from monitor.windows.summary import Segment, segment_label

__all__ = ["AlertView", "alerts_html", "explain_path", "segment_anchor", "trouble_of"]

_SEVERITY_ORDER = {"critical": 0, "page": 0, "warning": 1, "ticket": 2, "info": 3}


@dataclass(frozen=True)
class AlertView:
    """An alert as the page shows it.

    `since_ms`: when it began firing (pending: when its first bad window was seen);
    `windows`: its bad windows in a row; `value` and `baseline`: the window's value and what
    it was held against (a threshold, or a drop rule's baseline); `p_value`: the test that
    gated it (drop rules)."""

    name: str
    severity: str
    status: str
    segment: Segment
    measure: str
    note: str
    window: tuple[int, int] | None
    since_ms: int | None = None
    windows: int = 0
    p_value: float | None = None
    runbook_url: str | None = None
    value: float | None = None
    baseline: float | None = None


def explain_path(segment: Segment, measure: str, start_ms: int, against: str = "baseline") -> str:
    """The page's path for one explanation (what alerts link to)."""
    query = urllib.parse.urlencode(
        {
            "segment": segment_label(segment),
            "measure": measure,
            "window": start_ms,
            "against": against,
        }
    )
    return f"/explain?{query}"


def segment_anchor(segment: Segment) -> str:
    """The id of a segment's section on the page."""
    return "segment-" + urllib.parse.quote(segment_label(segment), safe="")


def trouble_of(segment: Segment, alerts: Sequence[AlertView]) -> int:
    """0 when an alert fires on the segment, 1 when one is pending, else 2 (for ordering)."""
    states = {a.status for a in alerts if a.segment == segment}
    return 0 if "firing" in states else (1 if "pending" in states else 2)


def alerts_html(
    alerts: Sequence[AlertView],
    measure_for_link: Callable[[str], str],
    has_baseline: Callable[[Segment, int, str], bool],
) -> str:
    """The alerts section. `measure_for_link(measure)`: the measure an alert's explanation
    shows; `has_baseline(segment, start, measure)`: whether that window can be explained in
    that measure against its baseline (else the link opens the segment on the page)."""
    if not alerts:
        return '<h2 id="alerts">Alerts</h2><p class="good">No alert is pending or firing.</p>'
    ordered = sorted(alerts, key=_urgency)
    rows = []
    for a in ordered:
        state = "FIRING" if a.status == "firing" else a.status
        css = "bad" if a.status == "firing" else "warn"
        since = "-"
        if a.since_ms is not None:
            plural = "s" if a.windows != 1 else ""
            bad = f"; {a.windows} bad window{plural} in a row" if a.windows else ""
            since = f"{utc_time(a.since_ms)} UTC{bad}"
        why = html.escape(a.note) if a.note else "-"
        if a.value is not None and a.baseline is not None and "against" not in a.note:
            against = f"{a.value:.4f} against the baseline {a.baseline:.4f}"
            why = f"{against}; {why}" if a.note else against
        if a.p_value is not None:
            why += f"; p = {a.p_value:.2g}"
        links = [_explain_link(a, measure_for_link, has_baseline)]
        if a.runbook_url:
            links.append(f'<a href="{html.escape(a.runbook_url)}">runbook</a>')
        rows.append(
            f'<tr><td class="{css}">{html.escape(state)}</td>'
            f"<td><strong>{html.escape(a.name)}</strong><br>"
            f'<span class="muted">{html.escape(a.severity)}</span></td>'
            f"<td>{html.escape(segment_label(a.segment))}</td>"
            f"<td>{since}</td><td>{html.escape(a.measure)}: {why}</td></tr>"
            f'<tr class="silence"><td></td><td colspan="4">{" · ".join(links)} · '
            f'<span class="muted">silence: <code>{html.escape(_silence(a))}</code></span>'
            "</td></tr>"
        )
    head = (
        "<tr><th>state</th><th>alert</th><th>segment</th><th>since</th>"
        "<th>value against its threshold or baseline</th></tr>"
    )
    firing = sum(1 for a in alerts if a.status == "firing")
    pending = len(alerts) - firing
    summary = f"{firing} firing, {pending} pending"
    return (
        f'<h2 id="alerts">Alerts: {summary}</h2>'
        f'<div class="scroll"><table class="alerts">{head}{"".join(rows)}</table></div>'
    )


def _urgency(alert: AlertView) -> tuple[int, int, int, str]:
    return (
        0 if alert.status == "firing" else 1,
        _SEVERITY_ORDER.get(alert.severity, 4),
        alert.since_ms if alert.since_ms is not None else 1 << 62,
        alert.name,
    )


def _explain_link(
    alert: AlertView,
    measure_for_link: Callable[[str], str],
    has_baseline: Callable[[Segment, int, str], bool],
) -> str:
    measure = measure_for_link(alert.measure)
    if alert.window is not None and has_baseline(alert.segment, alert.window[0], measure):
        path = explain_path(alert.segment, measure, alert.window[0])
        return f'<a href="{html.escape(path)}">explain</a>'
    return f'<a href="/#{html.escape(segment_anchor(alert.segment))}">segment</a>'


def _silence(alert: AlertView) -> str:
    matchers = [f'alertname="{alert.name}"']
    matchers += [f'{key}="{value}"' for key, value in alert.segment]
    return "amtool silence add " + " ".join(matchers) + ' --duration=2h --comment="..."'
