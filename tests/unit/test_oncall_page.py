"""The page an on-call engineer opens: what is wrong, since when, how sure, what to do.

A service on in-memory fakes (real HTTP server) with two segments: `model=a-fine` keeps its
quality, `model=z-broken` loses its best documents in the last window (and skips a window
before, so its chart has a gap). A `below` rule with a runbook fires on it, a drop rule
gated by the paired test fires too.
"""

from __future__ import annotations

import html
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from monitor.service import Monitor
from tests.support.fake_monitor import on_fakes

T0 = 1_767_225_600_000
QUERIES = 40
WINDOWS = 8
SKIPPED = 3  # z-broken sends nothing in this window: its chart has a gap there
CONFIG = """
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: events}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
segments: {{keys: [model]}}
metrics: {{cutoffs: [5, 10]}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 5s}}
schedule: {{interval: 1s}}
export: {{host: 127.0.0.1, port: 0, explain: {{keep_windows: 12, refresh: {refresh}}}}}
logging: {{level: WARNING}}
alerts:
  log: false
  rules:
    - {{name: ndcg10-floor, measure: ndcg@10, below: 0.8, severity: critical,
        runbook_url: "http://runbooks.example/ndcg-floor"}}
    - {{name: ndcg10-drop, measure: ndcg@10, severity: warning,
        drop: {{relative: 0.05, baseline_windows: 4, significance: 0.05, min_queries: 10}}}}
"""


@contextmanager
def run(tmp_path: Path, refresh: str = "30s") -> Iterator[Monitor]:
    """The page's monitor, started, after WINDOWS windows of two models (z-broken skips one
    and breaks in the last), every window finalized."""
    lines = [f"q{i} 0 best{i} 3\nq{i} 0 good{i} 1\n" for i in range(QUERIES)]
    with on_fakes(tmp_path, CONFIG.format(refresh=refresh), lines) as fakes:
        fakes.monitor.start()
        for number in range(WINDOWS):
            start = T0 + number * 10_000
            for model in ("a-fine", "z-broken"):
                if model == "z-broken" and number == SKIPPED:
                    continue
                for i in range(QUERIES):
                    ranking = [f"best{i}", f"good{i}", "x1", "x2"]
                    if model == "z-broken" and number == WINDOWS - 1:
                        ranking = [f"x{j}" for j in range(12)] + [f"best{i}"]
                    fakes.send({"event_id": f"{model}-{number}-{i}", "query_id": f"q{i}",
                                "ranking": ranking, "segment": {"model": model},
                                "event_time": start + 100 + i})  # fmt: skip
        fakes.finalize()
        yield fakes.monitor


@pytest.fixture
def monitor(tmp_path: Path) -> Iterator[Monitor]:
    with run(tmp_path) as started:
        yield started


def get(monitor: Monitor, path: str) -> tuple[int, dict[str, str], str]:
    url = monitor.metrics_url.replace("/metrics", path)
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def test_firing_alerts_come_first_with_since_value_p_value_runbook_and_silence(
    monitor: Monitor,
) -> None:
    _, _, page = get(monitor, "/")
    alerts = page.index('id="alerts"')
    assert alerts < page.index("Segment model=")  # before every segment
    assert "Alerts: 2 firing, 0 pending" in page
    # Each alert is two rows: what and since, then its links and how to silence it.
    rows = re.findall(
        r"<tr><td class=\"bad\">FIRING</td>(.*?</tr><tr class=\"silence\">.*?)</tr>", page
    )
    assert [re.search(r"<strong>([^<]+)</strong>", row)[1] for row in rows] == [  # type: ignore[index]
        "ndcg10-floor",  # critical before warning
        "ndcg10-drop",
    ]
    floor, drop = rows
    assert "model=z-broken" in floor and "model=z-broken" in drop
    since = html.escape("2026-01-01 00:01:20 UTC")  # the end of the bad window, as it fired
    assert since in floor and "1 bad window in a row" in floor
    assert re.search(r"ndcg@10:linear: 0\.\d{4} against 0\.8", floor)
    assert "0.0000 against the baseline 1.0000; 40 common queries" in drop
    assert re.search(r"p = 0\.000\d+", drop)  # the sign-flip test that gated it
    assert 'href="http://runbooks.example/ndcg-floor">runbook</a>' in floor
    assert (
        "amtool silence add alertname=&quot;ndcg10-floor&quot; model=&quot;z-broken&quot;" in page
    )


def test_segments_come_in_order_of_trouble_with_their_state_in_words(monitor: Monitor) -> None:
    _, _, page = get(monitor, "/")
    order = re.findall(r"<h2 id=\"segment-[^\"]+\">Segment (\S+) <span class=\"\w+\">(\w+)", page)
    assert order == [("model=z-broken", "FIRING"), ("model=a-fine", "ok")]
    assert "40 of the evaluation set's 40 queries were served in the newest window" in page


def test_every_link_of_the_page_and_of_an_explanation_answers(monitor: Monitor) -> None:
    _, _, page = get(monitor, "/")
    links = {html.unescape(link) for link in re.findall(r'href="(/[^"]*)"', page)}
    assert any(link.startswith("/explain?") for link in links)
    explanations = [link for link in links if link.startswith("/explain?")]
    _, _, explanation = get(monitor, explanations[0])
    links |= {html.unescape(link) for link in re.findall(r'href="(/[^"]*)"', explanation)}
    for link in sorted(links):
        status, _, body = get(monitor, link.split("#", 1)[0])
        assert status == 200, (link, body[:300])


def test_the_page_refreshes_itself_and_says_when_it_was_rendered_but_explanations_do_not(
    monitor: Monitor, tmp_path: Path
) -> None:
    _, headers, page = get(monitor, "/")
    assert headers["Refresh"] == "30"
    assert re.search(r"Rendered 2026-01-01 00:0\d:\d\d UTC", page)  # the service's clock
    assert "reloads itself every 30 s" in page
    assert "<script" not in page
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    link = html.unescape(re.findall(r'href="(/explain\?[^"]*)"', page)[0])
    _, explained, _ = get(monitor, link)
    assert "Refresh" not in explained


def test_a_refresh_of_0s_turns_it_off(tmp_path: Path) -> None:
    with run(tmp_path, refresh="0s") as monitor:
        _, headers, page = get(monitor, "/")
    assert "Refresh" not in headers and "reloads itself" not in page


def test_a_missing_window_is_a_gap_in_the_chart_not_a_ramp(monitor: Monitor) -> None:
    _, _, page = get(monitor, "/")
    sections = page.split("<h2 id=")
    broken = next(s for s in sections if s.startswith('"segment-model%3Dz-broken"'))
    fine = next(s for s in sections if s.startswith('"segment-model%3Da-fine"'))
    first_chart = broken.split("</svg>")[0]
    assert first_chart.count("<polyline") == 2  # the windows before the gap, and after it
    assert fine.split("</svg>")[0].count("<polyline") == 1
    assert re.search(r'<text [^>]*text-anchor="end">0\.\d\d</text>', first_chart)  # value ticks
    assert ">00:00:00</text>" in first_chart  # time ticks


def test_the_page_says_between_which_bounds_unjudged_documents_leave_the_headline(
    monitor: Monitor,
) -> None:
    _, _, page = get(monitor, "/")
    # z-broken's newest window ranks 12 documents nobody judged above the best one
    newest = monitor.snapshot().history[(("model", "z-broken"),)][-1]
    value, condensed = newest.means["ndcg@10:linear"], newest.means["ndcg_condensed@10:linear"]
    low, high = newest.means["ndcg_lower@10:linear"], newest.means["ndcg_upper@10:linear"]
    assert low <= value < condensed <= high
    assert (
        f"ndcg@10:linear is {value:.3f} with them as misses, {condensed:.3f} without them "
        f"(condensed); judged, whatever grades they get, it would be between {low:.3f} and "
        f"{high:.3f}"
    ) in html.unescape(page)
