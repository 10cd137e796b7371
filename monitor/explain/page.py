"""The web page at `/` and `/explain`: server-rendered HTML with inline SVG, no JavaScript,
nothing loaded from anywhere but rankmon itself.

`/`: the alerts first (`monitor.explain.alert_table`: state, since, value against threshold
or baseline, p-value, explanation, runbook, silence), then the segments in order of trouble
(firing, pending, then the largest drop of the headline measure in the newest window first),
each with its coverage and queries in words, each headline measure over the kept windows
(`monitor.explain.charts`: the 95 % band of the mean over queries, the alert floors, gaps
where windows are missing) and per window a link to its explanation against its baseline.
It refreshes itself (`Refresh` header, `export.explain.refresh`) and says when it was
rendered. `/explain?...` takes the parameters of `/api/v1/explain` and shows the explanation
as a table of queries by contribution, each query expandable (`<details>`) to its two
rankings with grades; it does not refresh.
"""

from __future__ import annotations

import html
import math
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from monitor.clock import SystemClock
from monitor.errors import one_line
from monitor.explain.alert_table import (
    AlertView,
    alerts_html,
    explain_path,
    segment_anchor,
    trouble_of,
)
from monitor.explain.api import ApiError, ExplainApi, Explanation
from monitor.explain.charts import chart_svg, utc_time
from monitor.explain.rankings import RankedDocument
from monitor.explain.store import KeptWindow
from monitor.explain.versions import VersionChange, version_changes
from monitor.export.http import Response
from monitor.windows.summary import Segment, segment_label

__all__ = ["AlertView", "ExplainPages", "explain_path"]


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1180px;color:#1d2330;padding:0 1em}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.4em 0 .4em;border-bottom:1px solid #d7dbe3}
h3{font-size:1em;margin:.8em 0 .2em}table{border-collapse:collapse;margin:.4em 0}
td,th{padding:.2em .6em;border-bottom:1px solid #e6e8ee;text-align:left;vertical-align:top}
th{background:#f3f5f9}.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b3261e;font-weight:600}.warn{color:#8a5a00;font-weight:600}.good{color:#1b7a3d}
.muted{color:#6b7385}.scroll{overflow-x:auto}.alerts td{border-bottom:none}
.alerts tr.silence td{border-bottom:1px solid #e6e8ee;font-size:.85em;padding-top:0}
.charts{display:flex;flex-wrap:wrap;gap:1em}
.chart{border:1px solid #e1e4ea;padding:.4em;border-radius:4px;flex:1 1 300px;max-width:380px}
.chart svg{width:100%;height:auto;display:block}
@media (max-width:600px){body{margin:.5em auto;padding:0 .5em;font-size:13px}td,th{padding:.15em .3em}}
details>summary{cursor:pointer}code{font-size:.95em}.rank td{padding:.05em .5em}
a{color:#1f5fbf}
"""


class ExplainPages:
    """The HTML routes over the explanation API.

    `refresh_s`: the page at `/` asks the browser to reload it every so many seconds (None:
    never); `now_ms`: the clock the page says it was rendered by."""

    def __init__(
        self,
        api: ExplainApi,
        *,
        headline: Sequence[str],
        alerts: Callable[[], list[AlertView]],
        floors: Callable[[str, Segment], list[tuple[str, float]]],
        title: str = "rankmon",
        refresh_s: int | None = 30,
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.api = api
        self.headline = tuple(headline)
        self._alerts = alerts
        self._floors = floors
        self.title = title
        self.refresh_s = refresh_s
        self._now_ms = now_ms or SystemClock().now_ms

    def routes(self) -> dict[str, Callable[[Mapping[str, list[str]], Mapping[str, str]], Response]]:
        return {"/": self.index, "/explain": self.explain}

    def index(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        segments = self.api.store.segments()
        alerts = self._alerts()
        refresh = f"; it reloads itself every {self.refresh_s} s" if self.refresh_s else ""
        parts = [
            f"<h1>{html.escape(self.title)}: ranking quality</h1>",
            f'<p class="muted">Rendered {utc_time(self._now_ms())} UTC{refresh}. '
            f"The newest {self.api.store.keep} finalized windows of each segment; the band is the "
            "95 % interval of the mean over queries (between-query uncertainty), dashed lines "
            'the alert floors. JSON: <a href="/api/v1/segments">/api/v1/segments</a>, '
            '<a href="/metrics">/metrics</a>.</p>',
            alerts_html(alerts, self._measure_for_link, self._has_baseline),
        ]
        if not segments:
            parts.append("<p>No window has been finalized yet.</p>")
        order = sorted(
            segments.items(),
            key=lambda item: (trouble_of(item[0], alerts), self._latest_change(item[1]), item[0]),
        )
        for segment, windows in order:
            parts.append(self._segment_html(segment, windows, trouble_of(segment, alerts)))
        extra = {"Refresh": str(self.refresh_s)} if self.refresh_s else {}
        return _page(self.title, "".join(parts), headers=extra)

    def explain(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        try:
            explanation = self.api.explain(query)
        except ApiError as error:
            body = (
                f'<h1>Cannot explain</h1><p class="bad">{html.escape(error.reason)}</p>'
                '<p><a href="/">back</a></p>'
            )
            return _page(self.title, body, error.status)
        return _page(self.title, _explanation_html(explanation))

    def _measure_for_link(self, measure: str) -> str:
        # A rule on no per-query measure (coverage) links to the headline measure's
        # explanation: its queries served before and not after are what went missing.
        return measure if self.api.explainable(measure) else self.api.default_measure

    def _has_baseline(self, segment: Segment, start_ms: int, measure: str) -> bool:
        """Whether the window can be explained in `measure` against its baseline: a kept
        window before it of its version, or of one re-scored to it (a link that answered
        "no kept window ... to form a baseline" was no link)."""
        return self.api.store.has_baseline(segment, start_ms, measure, self.api.bridge)

    def _latest_change(self, windows: list[KeptWindow]) -> float:
        """The newest window's headline mean minus the one before (0 when unknown): the
        largest drop sorts first."""
        if len(windows) < 2 or not self.headline:
            return 0.0
        measure = self.headline[0]
        newest = windows[-1].summary.means.get(measure, math.nan)
        change = newest - windows[-2].summary.means.get(measure, math.nan)
        return change if math.isfinite(change) else 0.0

    def _segment_html(self, segment: Segment, windows: list[KeptWindow], trouble: int) -> str:
        label = html.escape(segment_label(segment))
        state, css = (("FIRING", "bad"), ("pending", "warn"), ("ok", "good"))[trouble]
        changes = version_changes(segment, windows, self.headline, self.api.bridge)
        charts = []
        for measure in self.headline:
            if windows and measure in windows[-1].measures:
                marks = {start: _change_words(c, measure) for start, c in changes.items()}
                svg = chart_svg(measure, windows, self._floors(measure, segment), marks)
                if svg:
                    charts.append(f'<div class="chart"><h3>{html.escape(measure)}</h3>{svg}</div>')
        rows = []
        for kept in reversed(windows):
            s = kept.summary
            cells = []
            for measure in self.headline:
                value = _fmt(s.means.get(measure, math.nan))
                if self._has_baseline(segment, s.start_ms, measure):
                    href = html.escape(explain_path(segment, measure, s.start_ms))
                    value = f'<a href="{href}" title="explain against the baseline">{value}</a>'
                cells.append(f'<td class="num">{value}</td>')
            replays = "".join(
                f'<br><span class="muted">replay {html.escape(r)}'
                f"{' (stopped)' if r in s.stopped_replays else ''}</span>"
                for r in s.replays
            )
            change = changes.get(s.start_ms)
            if change is not None:
                said = "; ".join(_change_words(change, m) for m in self.headline)
                replays += f'<br><span class="muted">{html.escape(said)}</span>'
            rows.append(
                f"<tr><td>{utc_time(s.start_ms)}{replays}</td><td class=num>{s.queries}</td>"
                f"<td class=num>{s.events}</td><td class=num>{s.coverage:.0%}</td>"
                f"{''.join(cells)}</tr>"
            )
        head = "".join(f"<th>{html.escape(m)}</th>" for m in self.headline)
        table = (
            '<div class="scroll"><table><tr><th>window start (UTC)</th><th>queries</th>'
            f"<th>events</th><th>coverage</th>{head}</tr>{''.join(rows)}</table></div>"
        )
        anchor = html.escape(segment_anchor(segment))
        headline = self.headline[0] if self.headline else ""
        words = _coverage_words(windows[-1], headline) if windows else ""
        return (
            f'<h2 id="{anchor}">Segment {label} <span class="{css}">{state}</span></h2>'
            f'{words}<div class="charts">{"".join(charts)}</div>{table}'
        )


def _coverage_words(kept: KeptWindow, headline: str) -> str:
    """What the newest window's coverage and judged share mean, in words; with the headline
    nDCG's bounds for its unjudged documents (docs/metrics.md, "Bounds")."""
    s = kept.summary
    served = (
        f"{s.queries} of the evaluation set's {s.evaluation_set_queries} queries were served "
        f"in the newest window ({s.coverage:.0%} coverage, {s.events} events)"
    )
    if s.failed_queries:
        served += (
            f"; the ranker failed {s.failed_queries} more (errors or timeouts) of the replay "
            f"{html.escape(', '.join(s.replays) or '')}".rstrip()
        )
    elif s.coverage < 1.0:
        served += (
            ": normal for sampled live traffic, where not every query comes in every window; "
            "a problem for a replay of the whole set, where each missing query is a failed or "
            "lost ranking"
        )
    words = [served + "."]
    judged = sorted(m for m in s.means if m.startswith("judged@"))
    if judged:
        k = judged[0].split("@", 1)[1].split(":", 1)[0]
        words.append(
            f"{s.means[judged[0]]:.0%} of the top {k} documents are judged; unjudged ones count "
            "as not relevant, so with a low share the measures may move either way once they "
            "are judged (a judged document enters the ideal ranking too)."
        )
    words += _bound_words(s.means, headline)
    words += _corrected_words(kept)
    return f'<p class="muted">{" ".join(words)}</p>'


def _change_words(change: VersionChange, measure: str) -> str:
    """What the page says where the evaluation set changed, for one measure."""
    moved = change.judged.get(measure)
    said = f"evaluation set {change.before} -> {change.after}"
    if moved is None or not math.isfinite(moved):
        return f"{said}: the move of {measure} cannot be split between judgments and ranker"
    return (
        f"{said}: the new judgments alone move {measure} by {moved:+.4f}, the rest is the ranker's"
    )


def _bound_words(means: Mapping[str, float], headline: str) -> list[str]:
    """The headline nDCG between its bounds, when the window has them."""
    kind, at, rest = headline.partition("@")
    keys = [f"ndcg_lower@{rest}", f"ndcg_upper@{rest}", f"ndcg_condensed@{rest}"]
    if kind != "ndcg" or not at or not all(key in means for key in keys):
        return []
    value, (low, high, middle) = means[headline], (means[key] for key in keys)
    if not all(math.isfinite(v) for v in (value, low, high, middle)) or high <= low:
        return []
    return [
        f"{html.escape(headline)} is {value:.3f} with them as misses, {middle:.3f} without "
        f"them (condensed); judged, whatever grades they get, it would be between {low:.3f} "
        f"and {high:.3f}: a drop inside that band may be documents nobody judged yet."
    ]


def _corrected_words(kept: KeptWindow) -> list[str]:
    """The headline corrected by the people's audit of the model judge, when the judging
    loop has model grades (docs/judging.md, "Judges held to the people")."""
    corrected = kept.corrected
    measure = corrected.get("measure")
    if not isinstance(measure, str):
        return []
    raw = kept.summary.means.get(measure, math.nan)
    audited = int(float(corrected.get("audited", 0)))
    estimate, lower, upper = (
        float(corrected.get(k, math.nan)) for k in ("estimate", "lower", "upper")
    )
    name = html.escape(measure)
    if not math.isfinite(estimate):
        return [
            f"A model judge graded documents of this window, and {audited} of its queries "
            f"were audited in full by people: too few audited queries to correct {name} "
            f"({raw:.3f}) for the judge's bias (judging.min_audited_queries)."
        ]
    return [
        f"Corrected for the model judge's bias by the people's audit of {audited} queries "
        f"(PPI++), {name} is {estimate:.3f} (95 % interval {lower:.3f} to {upper:.3f}) "
        f"against {raw:.3f} as scored with the judge's grades."
    ]


def _explanation_html(e: Explanation) -> str:
    change = e.change
    label = html.escape(segment_label(e.segment))
    against = e.against
    if against["kind"] == "baseline":
        median = against.get("value")
        level = "" if median is None else f", trailing median {median:.4f} as the drop rule's"
        what = f"its baseline (each query's mean over {len(against['windows'])} earlier windows{level})"
    elif against["kind"] == "segment":
        what = f"segment {html.escape(against['segment'])} in the same window"
    else:
        what = f"the window starting {utc_time(against['windows'][0])}"
    direction = "bad" if change.change < 0 else "good"
    parts = [
        f'<p><a href="/">&larr; all segments</a> · <a href="/api/v1/explain?{_query_of(e)}">JSON</a></p>',
        f"<h1>{html.escape(e.measure)} of {label}, window {utc_time(e.window.summary.start_ms)}</h1>",
        f"<p>Against {what}: {_fmt(change.before)} on {change.before_queries} queries before, "
        f"{_fmt(change.after)} on {change.after_queries} after, "
        f'<span class="{direction}">change {change.change:+.4f}</span>: '
        f"{change.common_change:+.4f} from the {change.common_queries} queries both served, "
        f"{change.mix_change:+.4f} from which queries were served. Each query's contribution "
        "is its share of one of the two; they add up to the change. The common queries come "
        "first: a query not served is no evidence about the ranker.</p>",
    ]
    if e.churn is not None:
        churn = e.churn
        parts.append(
            f"<p>Rankings: {churn.changed} of the {churn.queries} queries sampled on both sides "
            f"changed their top {churn.k}; mean rank-biased overlap {churn.rbo:.3f}, mean "
            f"Jaccard {churn.jaccard:.3f} (1: the same rankings, whatever the judgments).</p>"
        )
    rankings = dict(e.rankings)
    rows = []
    opened = False  # the first query's rankings are shown open
    for row in change.rows:
        css = "bad" if row.contribution < 0 else ""
        cells = (
            f"<td><code>{html.escape(row.query)}</code>{_text_of(e, row.query)}</td>"
            f'<td class="num">{_fmt(row.before)}</td>'
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


_CAUSES = {
    "empty_answer": "no ranking after (a failed answer, or not served)",
    "judged_left": "a judged relevant document left the top k",
    "unjudged_entered": "an unjudged document entered the top k (judge it first)",
    "reorder_only": "the same documents reordered",
    "unchanged": "the same ranking",
    "judged_changed": "judged documents swapped",
}


def _ranking_html(query: str, rc: Any, *, is_open: bool = False) -> str:
    def column(docs: Sequence[RankedDocument]) -> str:
        rows = "".join(
            f"<tr><td class=num>{d.rank}</td><td><code>{html.escape(d.document)}</code></td>"
            f"<td>{'unjudged' if d.grade is None else f'grade {d.grade}'}</td></tr>"
            for d in docs
        )
        return f'<table class="rank">{rows or "<tr><td>no ranking sampled</td></tr>"}</table>'

    moved = [_CAUSES.get(rc.cause, rc.cause), f"RBO {rc.rbo:.2f}, Jaccard {rc.jaccard:.2f}"]
    if rc.left:
        moved.append(
            "left the top " + str(rc.k) + ": " + ", ".join(html.escape(d) for d in rc.left)
        )
    if rc.entered:
        moved.append("entered: " + ", ".join(html.escape(d) for d in rc.entered))
    lost = [f"rank {r}: {g:+.3f}" for r, g in enumerate(rc.gain_change, start=1) if g]
    return (
        f"<details{' open' if is_open else ''}><summary>rankings of <code>{html.escape(query)}</code>: {'; '.join(moved)}</summary>"
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


def _page(
    title: str, body: str, status: str = "200 OK", headers: Mapping[str, str] | None = None
) -> Response:
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>"
    )
    sent = {
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'",
        **(headers or {}),
    }
    return Response(status, "text/html; charset=utf-8", text.encode(), sent)


def _text_of(e: Explanation, query: str) -> str:
    """The query's text after its id, escaped, where the explanation knows it."""
    text = e.texts.get(query)
    return f' <span class="muted">{html.escape(one_line(text, 120))}</span>' if text else ""


def _fmt(value: float, *, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"
