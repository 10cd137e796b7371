"""The web page at `/` and `/explain`: server-rendered HTML with inline SVG, no JavaScript,
nothing loaded from anywhere but rankmon itself.

`/`: the segments; per segment each headline measure over the kept windows, its 95 %
interval as a band and the alert floors (`below` rules) as dashed lines; the alerts; per
window links to its explanation against its baseline. `/explain?...` takes the parameters
of `/api/v1/explain` and shows the explanation as a table of queries by contribution, each
query expandable (`<details>`) to its two rankings with grades.
"""

from __future__ import annotations

import datetime as dt
import html
import math
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monitor.explain.api import ApiError, ExplainApi, Explanation
from monitor.explain.rankings import RankedDocument
from monitor.explain.store import KeptWindow
from monitor.export.http import Response
from monitor.windows.summary import Segment, segment_label

__all__ = ["AlertView", "ExplainPages", "explain_path"]

CHART_WIDTH, CHART_HEIGHT = 560, 150


@dataclass(frozen=True)
class AlertView:
    """An alert as the page shows it."""

    name: str
    severity: str
    status: str
    segment: Segment
    measure: str
    note: str
    window: tuple[int, int] | None


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


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1180px;color:#1d2330;padding:0 1em}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.4em 0 .4em;border-bottom:1px solid #d7dbe3}
h3{font-size:1em;margin:.8em 0 .2em}table{border-collapse:collapse;margin:.4em 0}
td,th{padding:.2em .6em;border-bottom:1px solid #e6e8ee;text-align:left;vertical-align:top}
th{background:#f3f5f9}.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b3261e;font-weight:600}.good{color:#1b7a3d}.muted{color:#6b7385}
.charts{display:flex;flex-wrap:wrap;gap:1em}.chart{border:1px solid #e1e4ea;padding:.4em;border-radius:4px}
details>summary{cursor:pointer}code{font-size:.95em}.rank td{padding:.05em .5em}
a{color:#1f5fbf}
"""


class ExplainPages:
    """The HTML routes over the explanation API."""

    def __init__(
        self,
        api: ExplainApi,
        *,
        headline: Sequence[str],
        alerts: Callable[[], list[AlertView]],
        floors: Callable[[str, Segment], list[tuple[str, float]]],
        title: str = "rankmon",
    ) -> None:
        self.api = api
        self.headline = tuple(headline)
        self._alerts = alerts
        self._floors = floors
        self.title = title

    def routes(self) -> dict[str, Callable[[Mapping[str, list[str]], Mapping[str, str]], Response]]:
        return {"/": self.index, "/explain": self.explain}

    def index(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        segments = self.api.store.segments()
        parts = [f"<h1>{html.escape(self.title)}: ranking quality</h1>"]
        parts.append(
            f'<p class="muted">The newest {self.api.store.keep} finalized windows of each segment; '
            "the band is the 95 % interval of the mean over queries, dashed lines the alert floors. "
            'JSON: <a href="/api/v1/segments">/api/v1/segments</a>, <a href="/metrics">/metrics</a>.</p>'
        )
        parts.append(self._alerts_html())
        if not segments:
            parts.append("<p>No window has been finalized yet.</p>")
        for segment, windows in sorted(segments.items()):
            parts.append(self._segment_html(segment, windows))
        return _page(self.title, "".join(parts))

    def explain(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        try:
            explanation = self.api.explain(query)
        except ApiError as error:
            body = f'<h1>Cannot explain</h1><p class="bad">{html.escape(error.reason)}</p><p><a href="/">back</a></p>'
            return _page(self.title, body, error.status)
        return _page(self.title, _explanation_html(explanation))

    def _alerts_html(self) -> str:
        alerts = self._alerts()
        if not alerts:
            return '<h2>Alerts</h2><p class="good">No alert is pending or firing.</p>'
        rows = []
        for a in alerts:
            link = ""
            if a.window is not None:
                # A rule on no per-query measure (coverage) links to the headline measure's
                # explanation: its queries served before and not after are what went missing.
                measure = a.measure if self.api.explainable(a.measure) else self.api.default_measure
                path = explain_path(a.segment, measure, a.window[0])
                link = f'<a href="{html.escape(path)}">explain</a>'
            css = "bad" if a.status == "firing" else ""
            rows.append(
                f'<tr><td class="{css}">{html.escape(a.status)}</td><td>{html.escape(a.name)}</td>'
                f"<td>{html.escape(a.severity)}</td><td>{html.escape(segment_label(a.segment))}</td>"
                f"<td>{html.escape(a.measure)}</td><td>{html.escape(a.note)}</td><td>{link}</td></tr>"
            )
        head = "<tr><th>state</th><th>alert</th><th>severity</th><th>segment</th><th>measure</th><th>why</th><th></th></tr>"
        return f"<h2>Alerts</h2><table>{head}{''.join(rows)}</table>"

    def _segment_html(self, segment: Segment, windows: list[KeptWindow]) -> str:
        label = html.escape(segment_label(segment))
        charts = []
        for measure in self.headline:
            if windows and measure in windows[-1].measures:
                charts.append(_chart(measure, windows, self._floors(measure, segment)))
        rows = []
        for kept in reversed(windows):
            s = kept.summary
            cells = []
            for measure in self.headline:
                value = s.means.get(measure, math.nan)
                href = html.escape(explain_path(segment, measure, s.start_ms))
                cells.append(
                    f'<td class="num"><a href="{href}" title="explain against the baseline">{_fmt(value)}</a></td>'
                )
            rows.append(
                f"<tr><td>{_time(s.start_ms)}</td><td class=num>{s.queries}</td><td class=num>{s.events}</td>"
                f"<td class=num>{s.coverage:.0%}</td>{''.join(cells)}</tr>"
            )
        head = "".join(f"<th>{html.escape(m)}</th>" for m in self.headline)
        table = (
            f"<table><tr><th>window start (UTC)</th><th>queries</th><th>events</th><th>coverage</th>{head}</tr>"
            f"{''.join(rows)}</table>"
        )
        return f'<h2>Segment {label}</h2><div class="charts">{"".join(charts)}</div>{table}'


def _chart(measure: str, windows: list[KeptWindow], floors: list[tuple[str, float]]) -> str:
    points = []
    for kept in windows:
        s = kept.summary
        mean = s.means.get(measure, math.nan)
        se = kept.stderr(measure)
        if math.isfinite(mean):
            half = 1.96 * se if math.isfinite(se) else 0.0
            points.append((s.start_ms, mean, mean - half, mean + half))
    if not points:
        return ""
    values = [p[2] for p in points] + [p[3] for p in points] + [f for _, f in floors]
    low, high = max(0.0, min(values) - 0.02), min(1.0, max(values) + 0.02)
    if high <= low:
        low, high = max(0.0, low - 0.05), min(1.0, high + 0.05)
    first, last = points[0][0], points[-1][0]
    pad_l, pad_r, pad_t, pad_b = 42, 8, 8, 18

    def x(t: int) -> float:
        span = max(1, last - first)
        return (
            pad_l + (t - first) / span * (CHART_WIDTH - pad_l - pad_r)
            if last > first
            else (CHART_WIDTH + pad_l) / 2
        )

    def y(v: float) -> float:
        return pad_t + (high - v) / (high - low) * (CHART_HEIGHT - pad_t - pad_b)

    band = " ".join(f"{x(t):.1f},{y(u):.1f}" for t, _, _, u in points)
    band += " " + " ".join(f"{x(t):.1f},{y(lo):.1f}" for t, _, lo, _ in reversed(points))
    line = " ".join(f"{x(t):.1f},{y(m):.1f}" for t, m, _, _ in points)
    dots = "".join(
        f'<circle cx="{x(t):.1f}" cy="{y(m):.1f}" r="2.5" fill="#1f5fbf"><title>{_time(t)}: {m:.4f}</title></circle>'
        for t, m, _, _ in points
    )
    rules = "".join(
        f'<line x1="{pad_l}" x2="{CHART_WIDTH - pad_r}" y1="{y(f):.1f}" y2="{y(f):.1f}" stroke="#b3261e" stroke-dasharray="5,4"/>'
        f'<text x="{CHART_WIDTH - pad_r}" y="{y(f) - 3:.1f}" text-anchor="end" font-size="10" fill="#b3261e">{html.escape(name)} {f:g}</text>'
        for name, f in floors
        if low <= f <= high
    )
    axis = (
        f'<text x="2" y="{y(high) + 10:.1f}" font-size="10">{high:.2f}</text>'
        f'<text x="2" y="{y(low):.1f}" font-size="10">{low:.2f}</text>'
        f'<text x="{pad_l}" y="{CHART_HEIGHT - 3}" font-size="10">{_time(first)}</text>'
        f'<text x="{CHART_WIDTH - pad_r}" y="{CHART_HEIGHT - 3}" font-size="10" text-anchor="end">{_time(last)}</text>'
    )
    svg = (
        f'<svg width="{CHART_WIDTH}" height="{CHART_HEIGHT}" role="img" aria-label="{html.escape(measure)}">'
        f'<rect x="{pad_l}" y="{pad_t}" width="{CHART_WIDTH - pad_l - pad_r}" height="{CHART_HEIGHT - pad_t - pad_b}" fill="#fafbfd" stroke="#e1e4ea"/>'
        f'<polygon points="{band}" fill="#1f5fbf" fill-opacity="0.15"/>'
        f'<polyline points="{line}" fill="none" stroke="#1f5fbf" stroke-width="1.5"/>{dots}{rules}{axis}</svg>'
    )
    return f'<div class="chart"><h3>{html.escape(measure)}</h3>{svg}</div>'


def _explanation_html(e: Explanation) -> str:
    change = e.change
    label = html.escape(segment_label(e.segment))
    against = e.against
    if against["kind"] == "baseline":
        what = f"its baseline (the mean of {len(against['windows'])} earlier windows)"
    elif against["kind"] == "segment":
        what = f"segment {html.escape(against['segment'])} in the same window"
    else:
        what = f"the window starting {_time(against['windows'][0])}"
    direction = "bad" if change.change < 0 else "good"
    parts = [
        f'<p><a href="/">&larr; all segments</a> · <a href="/api/v1/explain?{_query_of(e)}">JSON</a></p>',
        f"<h1>{html.escape(e.measure)} of {label}, window {_time(e.window.summary.start_ms)}</h1>",
        f"<p>Against {what}: {_fmt(change.before)} on {change.before_queries} queries before, "
        f"{_fmt(change.after)} on {change.after_queries} after, "
        f'<span class="{direction}">change {change.change:+.4f}</span>. Each query\'s contribution '
        "is its share of that change; they add up to it.</p>",
    ]
    rankings = dict(e.rankings)
    rows = []
    opened = False  # the first query's rankings are shown open
    for row in change.rows:
        css = "bad" if row.contribution < 0 else ""
        cells = (
            f'<td><code>{html.escape(row.query)}</code></td><td class="num">{_fmt(row.before)}</td>'
            f'<td class="num">{_fmt(row.after)}</td><td class="num">{_fmt(row.difference, signed=True)}</td>'
            f'<td class="num {css}">{row.contribution:+.5f}</td><td>{row.status.replace("_", " ")}</td>'
        )
        detail = ""
        if row.query in rankings:
            shown = _ranking_html(row.query, rankings[row.query], is_open=not opened)
            opened = True
            detail = f'<tr><td colspan="6">{shown}</td></tr>'
        rows.append(f"<tr>{cells}</tr>{detail}")
    head = "<tr><th>query</th><th>before</th><th>after</th><th>difference</th><th>contribution</th><th></th></tr>"
    parts.append(f"<h2>Queries by contribution</h2><table>{head}{''.join(rows)}</table>")
    return "".join(parts)


def _ranking_html(query: str, rc: Any, *, is_open: bool = False) -> str:
    def column(docs: Sequence[RankedDocument]) -> str:
        rows = "".join(
            f"<tr><td class=num>{d.rank}</td><td><code>{html.escape(d.document)}</code></td>"
            f"<td>{'unjudged' if d.grade is None else f'grade {d.grade}'}</td></tr>"
            for d in docs
        )
        return f'<table class="rank">{rows or "<tr><td>no ranking sampled</td></tr>"}</table>'

    moved = []
    if rc.left:
        moved.append(
            "left the top " + str(rc.k) + ": " + ", ".join(html.escape(d) for d in rc.left)
        )
    if rc.entered:
        moved.append("entered: " + ", ".join(html.escape(d) for d in rc.entered))
    lost = [f"rank {r}: {g:+.3f}" for r, g in enumerate(rc.gain_change, start=1) if g]
    return (
        f"<details{' open' if is_open else ''}><summary>rankings of <code>{html.escape(query)}</code>: {'; '.join(moved) or 'no judged document moved'}</summary>"
        f'<div class="charts"><div><h3>before</h3>{column(rc.before)}</div><div><h3>after</h3>{column(rc.after)}</div>'
        f"<div><h3>discounted gain change</h3><p>{html.escape(', '.join(lost) or 'none')}</p></div></div></details>"
    )


def _query_of(e: Explanation) -> str:
    params = {
        "segment": segment_label(e.segment),
        "measure": e.measure,
        "window": e.window.summary.start_ms,
    }
    against = e.against
    if against["kind"] == "segment":
        params["segment_against"] = against["segment"]
    elif against["kind"] == "window":
        params["against"] = against["windows"][0]
    return html.escape(urllib.parse.urlencode(params))


def _page(title: str, body: str, status: str = "200 OK") -> Response:
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>"
    )
    headers = {
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"
    }
    return Response(status, "text/html; charset=utf-8", text.encode(), headers)


def _fmt(value: float, *, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
