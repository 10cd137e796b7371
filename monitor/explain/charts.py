"""A measure's history as an inline SVG chart: the mean over queries per window, its 95 %
interval as a band, the alert floors as dashed lines, the evaluation set's changes as dotted
vertical lines, value and time axes with ticks, and a gap where windows are missing (a
window-less stretch is not drawn as a straight ramp).

Server-rendered and script-free: the page's strict CSP loads nothing else. The chart scales
to its container's width (`viewBox`), so it is legible at 1280 px and on a phone.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Mapping, Sequence

from monitor.explain.store import KeptWindow

__all__ = ["chart_svg", "runs_without_gaps", "utc_time"]

WIDTH, HEIGHT = 360, 120
_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 40, 10, 8, 20
Point = tuple[int, float, float, float]  # (window start ms, mean, band low, band high)


def runs_without_gaps(points: Sequence[Point], windows: Sequence[KeptWindow]) -> list[list[Point]]:
    """The points in runs of consecutive windows: a new run starts where the next window
    begins more than one and a half window lengths after the previous one."""
    length = {k.summary.start_ms: k.summary.end_ms - k.summary.start_ms for k in windows}
    runs: list[list[Point]] = []
    for point in points:
        if runs and point[0] - runs[-1][-1][0] <= 1.5 * length.get(runs[-1][-1][0], 0):
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


def chart_svg(
    measure: str,
    windows: Sequence[KeptWindow],
    floors: Sequence[tuple[str, float]],
    changes: Mapping[int, str] | None = None,
) -> str:
    """The chart of `measure` over `windows` (oldest first), or "" when none has a value;
    `changes`: the starts of the windows where the evaluation set changed, with what to say
    there (a dotted vertical line, titled)."""
    points: list[Point] = []
    for kept in windows:
        mean = kept.summary.means.get(measure, math.nan)
        if math.isfinite(mean):
            se = kept.stderr(measure)
            half = 1.96 * se if math.isfinite(se) else 0.0
            points.append((kept.summary.start_ms, mean, mean - half, mean + half))
    if not points:
        return ""
    values = [p[2] for p in points] + [p[3] for p in points] + [f for _, f in floors]
    low, high = max(0.0, min(values) - 0.02), min(1.0, max(values) + 0.02)
    if high - low < 0.05:
        middle = (high + low) / 2
        low, high = max(0.0, middle - 0.025), min(1.0, middle + 0.025)
    first = points[0][0]
    last = max(points[-1][0], first + 1)
    inner_w = WIDTH - _PAD_LEFT - _PAD_RIGHT
    inner_h = HEIGHT - _PAD_TOP - _PAD_BOTTOM

    def x(t: int) -> float:
        return (
            _PAD_LEFT + (t - first) / (last - first) * inner_w
            if len(points) > 1
            else (_PAD_LEFT + inner_w / 2)
        )

    def y(v: float) -> float:
        return _PAD_TOP + (high - v) / (high - low) * inner_h

    shapes = []
    for run in runs_without_gaps(points, windows):
        band = " ".join(f"{x(t):.1f},{y(up):.1f}" for t, _, _, up in run)
        band += " " + " ".join(f"{x(t):.1f},{y(lo):.1f}" for t, _, lo, _ in reversed(run))
        line = " ".join(f"{x(t):.1f},{y(m):.1f}" for t, m, _, _ in run)
        shapes.append(f'<polygon points="{band}" fill="#1f5fbf" fill-opacity="0.15"/>')
        shapes.append(
            f'<polyline points="{line}" fill="none" stroke="#1f5fbf" stroke-width="1.5"/>'
        )
    dots = "".join(
        f'<circle cx="{x(t):.1f}" cy="{y(m):.1f}" r="2.2" fill="#1f5fbf">'
        f"<title>{utc_time(t)} UTC: {m:.4f} (95 % band {lo:.4f} to {up:.4f})</title></circle>"
        for t, m, lo, up in points
    )
    rules = "".join(
        f'<line x1="{_PAD_LEFT}" x2="{WIDTH - _PAD_RIGHT}" y1="{y(f):.1f}" y2="{y(f):.1f}" '
        f'stroke="#b3261e" stroke-dasharray="5,4"/>'
        f'<text x="{WIDTH - _PAD_RIGHT}" y="{y(f) - 3:.1f}" text-anchor="end" font-size="9" '
        f'fill="#b3261e">{html.escape(name)} {f:g}</text>'
        for name, f in floors
        if low <= f <= high
    )
    marks = "".join(
        f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{_PAD_TOP}" y2="{HEIGHT - _PAD_BOTTOM}" '
        f'stroke="#7a4fbf" stroke-dasharray="2,3"><title>{html.escape(said)}</title></line>'
        f'<text x="{x(t) + 2:.1f}" y="{_PAD_TOP + 9}" font-size="9" fill="#7a4fbf">set</text>'
        for t, said in sorted((changes or {}).items())
        if first <= t <= last
    )
    ticks = []
    for value in (low, (low + high) / 2, high):
        ticks.append(
            f'<line x1="{_PAD_LEFT - 3}" x2="{_PAD_LEFT}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#8a93a6"/>'
            f'<text x="{_PAD_LEFT - 5}" y="{y(value) + 3:.1f}" font-size="9" text-anchor="end">{value:.2f}</text>'
        )
    stamps = sorted({first, points[len(points) // 2][0], points[-1][0]})
    for index, t in enumerate(stamps):
        anchor = (
            "start" if index == 0 else ("end" if t == stamps[-1] and len(stamps) > 1 else "middle")
        )
        ticks.append(
            f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{HEIGHT - _PAD_BOTTOM}" y2="{HEIGHT - _PAD_BOTTOM + 3}" stroke="#8a93a6"/>'
            f'<text x="{x(t):.1f}" y="{HEIGHT - 6}" font-size="9" text-anchor="{anchor}">{utc_time(t, "%H:%M:%S")}</text>'
        )
    label = f"{measure}: {points[-1][1]:.4f} in the newest window"
    return (
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{html.escape(label)}">'
        f'<rect x="{_PAD_LEFT}" y="{_PAD_TOP}" width="{inner_w}" height="{inner_h}" fill="#fafbfd" stroke="#e1e4ea"/>'
        f"{''.join(shapes)}{dots}{rules}{marks}{''.join(ticks)}</svg>"
    )


def utc_time(ms: int, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """Epoch milliseconds as the page writes a time (UTC)."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime(fmt)
