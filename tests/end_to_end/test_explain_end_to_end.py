"""Why did it drop, end to end: a monitor on the real Tansu broker with a planted regression
of known queries pages through a real Alertmanager; the alert's generatorURL opens the
explanation of that window, which Debian's headless Chromium renders with the planted
queries on top.

    With RANKMON_SCREENSHOT_DIR set, the page (1280 px and 400 px wide) and the explanation
    are saved there as page.png, page-phone.png and explain.png (docs/ holds those of a run).

    30 queries, tumbling 10 s windows 0..5; in window 5 queries q4, q9, q17, q23 and q28 lose
    their two judged documents from the top 10; the rules ndcg10-floor (below 0.95) and
    ndcg10-drop (against the trailing median, gated by the paired test) fire on it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.service import Monitor
from tests.support.realparts import (
    AlertmanagerServer,
    WebhookReceiver,
    monitor_thread,
    produce_records,
    require_binary,
    write_service_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.alertmanager, pytest.mark.slow]

T0 = 1_767_225_600_000
QUERIES = 30
PLANTED = ("q4", "q9", "q17", "q23", "q28")
QRELS = {f"q{i}": {f"best{i}": 3, f"good{i}": 1} for i in range(QUERIES)}
ALERTS = """
alerts:
  log: false
  alertmanager: {{url: "{url}", min_firing: 1s}}
  delivery: {{resend_interval: 2s, backoff_initial: 200ms, backoff_max: 1s}}
  rules:
    - {{name: ndcg10-floor, measure: ndcg@10, severity: warning, below: 0.95}}
    - {{name: ndcg10-drop, measure: ndcg@10, severity: critical, runbook_url: "{runbook}",
        drop: {{relative: 0.05, baseline_windows: 4, significance: 0.05, min_queries: 10}}}}
"""


def events() -> list[tuple[bytes, bytes]]:
    records = []
    for number in range(6):
        for i in range(QUERIES):
            query = f"q{i}"
            ranking = [f"best{i}", f"good{i}", "other1", "other2"]
            if number == 5 and query in PLANTED:
                ranking = [f"other{j}" for j in range(12)] + [f"best{i}"]
            event = {
                "event_id": f"{number}-{query}",
                "query_id": query,
                "ranking": ranking,
                "event_time": T0 + number * 10_000 + 100 * i,
                "segment": {"model": "v1"},
            }
            records.append((query.encode(), orjson.dumps(event)))
    closer = {"event_id": "closer", "query_id": "q0", "ranking": ["best0"],
              "event_time": T0 + 62_000, "segment": {"model": "other"}}  # fmt: skip
    records.append((b"q0", orjson.dumps(closer)))
    return records


def worst_queries(bodies: list[Any]) -> list[str]:
    return [
        a["annotations"]["worst_queries"]
        for body in bodies
        for a in body["alerts"]
        if a["labels"]["alertname"] == "ndcg10-drop" and "worst_queries" in a["annotations"]
    ]


def generator_urls(bodies: list[Any]) -> list[str]:
    return [
        a["generatorURL"]
        for body in bodies
        if body["status"] == "firing"
        for a in body["alerts"]
        if a["labels"]["alertname"] == "ndcg10-floor" and a["labels"].get("model") == "v1"
    ]


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    binary = require_binary("chromium")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--hide-scrollbars"]  # fmt: skip
    return subprocess.run(
        [binary, *flags, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_an_alerts_generator_url_opens_its_explanation_with_the_planted_queries_on_top(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    start_alertmanager: Callable[..., AlertmanagerServer],
    webhook_receiver: WebhookReceiver,
) -> None:
    alertmanager = start_alertmanager(webhook_receiver.url)
    topic = new_topic(1)
    runbook = f"{alertmanager.url}/#/alerts"  # a page that answers, as a runbook's would
    config = write_service_config(
        tmp_path, tansu, topic, QRELS, ALERTS.format(url=alertmanager.url, runbook=runbook)
    )
    port = free_port()
    # The query texts people read beside the ids (the replay's topics file).
    (tmp_path / "topics.tsv").write_text("".join(f"{q}\tshoes for {q}\n" for q in QRELS))
    text = config.read_text().replace(
        "export: {host: 127.0.0.1, port: 0}",
        f"export: {{host: 127.0.0.1, port: {port}, external_url: 'http://127.0.0.1:{port}'}}",
    )
    text = text.replace("evaluation_set: {path: ", "evaluation_set: {topics: topics.tsv, path: ")
    config.write_text(text)
    with monitor_thread(Monitor(load_config(config, environ={}))):
        produce_records(tansu.bootstrap_servers, topic, events())
        assert webhook_receiver.wait_for(lambda b: bool(generator_urls(b)), timeout_s=40), (
            webhook_receiver.bodies
        )
        (url, *_) = generator_urls(webhook_receiver.bodies)
        # The drop alert's worst queries, as Alertmanager delivers them, with their texts.
        assert webhook_receiver.wait_for(lambda b: bool(worst_queries(b)), timeout_s=20)
        worst = worst_queries(webhook_receiver.bodies)[0]
        assert re.search(r'q\d+ "shoes for q\d+" \(-\d\.\d{3}\)', worst), worst
        assert url.startswith(f"http://127.0.0.1:{port}/explain?")
        assert f"window={T0 + 50_000}" in url and "against=baseline" in url

        with urllib.request.urlopen(
            url.replace("/explain?", "/api/v1/explain?"), timeout=10
        ) as response:
            explanation = json.loads(response.read())
        assert {row["query"] for row in explanation["queries"][:5]} == set(PLANTED)
        assert {row["text"] for row in explanation["queries"][:5]} == {
            f"shoes for {q}" for q in PLANTED
        }

        dom = chromium("--dump-dom", url)
        assert dom.returncode == 0, dom.stderr[-2000:]
        shown = re.findall(r"<tr><td><code>(q\d+)</code>", dom.stdout)
        assert set(shown[:5]) == set(PLANTED), shown[:8]
        assert '<code>q4</code> <span class="muted">shoes for q4</span>' in dom.stdout
        assert "left the top 10: best4, good4" in dom.stdout

        home = chromium("--dump-dom", f"http://127.0.0.1:{port}/").stdout
        assert "Segment model=v1" in home and "ndcg10-floor" in home
        # The firing drop alert first, with since, baseline, p-value and its runbook.
        first = "</tr>".join(home.split('<td class="bad">FIRING</td>', 1)[1].split("</tr>")[:2])
        assert "<strong>ndcg10-drop</strong>" in first
        assert "2026-01-01 00:01:00 UTC" in first  # the bad window's end
        assert re.search(r"against the baseline 1\.0000; 30 common queries", first), first
        assert re.search(r"p = 0\.0\d+", first), first
        assert f'href="{runbook}">runbook</a>' in first
        # Every link on the page answers, the runbook's included.
        links = {html.unescape(link) for link in re.findall(r'href="([^"#]+)', home)}
        for link in sorted(links):
            absolute = link if link.startswith("http") else f"http://127.0.0.1:{port}{link}"
            with urllib.request.urlopen(absolute, timeout=10) as answer:
                assert answer.status == 200, link

        screenshot = tmp_path / "explain.png"
        shot = chromium(f"--screenshot={screenshot}", "--window-size=1280,1000", url)
        assert shot.returncode == 0, shot.stderr[-2000:]
        assert (
            screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            and screenshot.stat().st_size > 10_000
        )
        keep = os.environ.get("RANKMON_SCREENSHOT_DIR")  # docs/'s pictures come from this run
        if keep:
            shutil.copy(screenshot, Path(keep) / "explain.png")
            page = Path(keep) / "page.png"
            chromium(f"--screenshot={page}", "--window-size=1280,1100", f"http://127.0.0.1:{port}/")
            phone = Path(keep) / "page-phone.png"
            chromium(f"--screenshot={phone}", "--window-size=400,1400", f"http://127.0.0.1:{port}/")
