"""The explanation API and page of a monitor on in-memory Kafka: a planted regression of
known queries comes out on top, the JSON follows docs/api.schema.json, bad requests get a
reason."""

from __future__ import annotations

import html
import json
import logging
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from monitor.explain.api import ExplainApi, explanation_json
from monitor.explain.page import ExplainPages
from monitor.explain.store import ExplainStore
from monitor.scoring.evalset import EvaluationSet
from monitor.service import Monitor
from monitor.windows.summary import Segment, WindowSummary, segment_label
from tests.support.fake_monitor import on_fakes

T0 = 1_767_225_600_000
SEG: Segment = (("model", "v1"),)
TOPIC = "events"
QUERIES = 20
PLANTED = ("q3", "q7", "q11")  # these lose their best document in the last window
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "api.schema.json").read_text())
CONFIG = f"""
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: {TOPIC}}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
segments: {{keys: [model]}}
metrics: {{cutoffs: [5, 10]}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 5s}}
schedule: {{interval: 1s}}
export: {{host: 127.0.0.1, port: 0, explain: {{keep_windows: 4}}}}
logging: {{level: WARNING}}
alerts:
  log: false
  rules:
    - {{name: ndcg10-floor, measure: ndcg@10, below: 0.5}}
"""


def validate(document: Any, definition: str) -> None:
    jsonschema.Draft7Validator({"$ref": f"#/definitions/{definition}", **SCHEMA}).validate(document)


@pytest.fixture
def monitor(tmp_path: Path) -> Iterator[Monitor]:
    with started_monitor(tmp_path, CONFIG, QUERIES) as started:
        yield started


@contextmanager
def started_monitor(
    tmp_path: Path, config_text: str, served_last: int, model: str = "v1"
) -> Iterator[Monitor]:
    """Six windows of the 20 queries (only the first `served_last` in the last one), the
    planted queries worse in the last, all finalized."""
    lines = [f"q{i} 0 best{i} 3\nq{i} 0 good{i} 1\n" for i in range(QUERIES)]
    with on_fakes(tmp_path, config_text, lines) as fakes:
        fakes.monitor.start()
        for number in range(6):  # windows 0..5; the planted queries fall in window 5
            start = T0 + number * 10_000
            for i in range(QUERIES if number < 5 else served_last):
                query = f"q{i}"
                ranking = [f"best{i}", f"good{i}", "x1", "x2"]
                if number == 5 and query in PLANTED:
                    ranking = [*(f"x{j}" for j in range(1, 11)), f"best{i}"]
                event = {"event_id": f"{number}-{i}", "query_id": query, "ranking": ranking,
                         "segment": {"model": model}, "event_time": start + 100 + i}  # fmt: skip
                fakes.send(event)
        fakes.finalize()
        yield fakes.monitor


def test_a_segment_value_holding_a_comma_and_an_equals_sign_is_explained(
    tmp_path: Path,
) -> None:
    with started_monitor(tmp_path, CONFIG, QUERIES, model="v1,market=de") as monitor:
        _, _, page = get(monitor, "/")
        links = [
            html.unescape(link) for link in re.findall(r'href="(/explain\?[^"]*)"', page.decode())
        ]
        newest = [link for link in links if f"window={last_start()}" in link]
        assert newest
        for link in newest:
            status, _, body = get(monitor, link)
            assert status == 200, body[:300]
        label = urllib.parse.quote("model=v1,market=de")
        status, _, body = get(monitor, f"/api/v1/windows?segment={label}")
        assert status == 200, body[:300]
        assert json.loads(body)["segment"] == "model=v1,market=de"


def test_a_coverage_alerts_explain_link_answers_with_the_headline_measure(
    tmp_path: Path,
) -> None:
    config = CONFIG + "    - {name: coverage-low, coverage: {min: 0.9}}\n"
    with started_monitor(tmp_path, config, served_last=10) as monitor:
        _, _, page = get(monitor, "/")
        coverage_rows = [row for row in page.decode().split("<tr>") if "coverage-low" in row]
        assert coverage_rows and "FIRING" in coverage_rows[0]
        (link,) = re.findall(r'href="(/explain\?[^"]*)"', coverage_rows[0])
        assert "measure=ndcg" in html.unescape(link)
        status, _, body = get(monitor, html.unescape(link))
        assert status == 200, body[:300]


def get(monitor: Monitor, path: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(monitor.metrics_url.replace("/metrics", path), timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def last_start() -> int:
    return T0 + 5 * 10_000


def test_the_explanation_puts_the_planted_queries_on_top_and_adds_up(monitor: Monitor) -> None:
    code, kind, body = get(
        monitor, f"/api/v1/explain?segment=model=v1&measure=ndcg@10&window={last_start()}"
    )
    assert code == 200 and kind == "application/json"
    document = json.loads(body)
    validate(document, "explain")
    assert {row["query"] for row in document["queries"][:3]} == set(PLANTED)
    assert document["against"]["kind"] == "baseline" and len(document["against"]["windows"]) == 3
    total = math.fsum(row["contribution"] for row in document["queries"])
    assert abs(total - document["change"]) <= 1e-12
    assert document["change"] < 0
    shown = {d["query"]: d for d in document["documents"]}
    assert set(shown) == set(PLANTED)
    q3 = shown["q3"]
    assert q3["left"] == ["best3", "good3"] and q3["entered"] == []
    assert q3["before"][0] == {"rank": 1, "document": "best3", "grade": 3, "gain": 3.0}
    assert q3["after"][0]["grade"] is None  # x1: unjudged
    assert q3["gain_change"][0] == -3.0
    # best3 and good3 left the top 10, which shares only x1 and x2 with the one before
    assert q3["cause"] == "judged_left"
    assert q3["jaccard"] == 2 / 12
    assert 0.0 < q3["rbo"] < 0.5
    # The 17 other queries served the same ranking: 3 of 20 changed, the mean churn is theirs.
    churn = document["churn"]
    assert (churn["k"], churn["queries"], churn["changed"]) == (10, QUERIES, len(PLANTED))
    assert churn["jaccard"] == pytest.approx((QUERIES - 3 + 3 * 2 / 12) / QUERIES)


def test_segments_and_windows_list_what_is_kept_with_intervals(monitor: Monitor) -> None:
    code, _, body = get(monitor, "/api/v1/segments")
    assert code == 200
    segments = json.loads(body)
    validate(segments, "segments")
    (segment,) = segments["segments"]
    assert segment["segment"] == "model=v1" and segment["windows"] == 4  # keep_windows
    _, _, body = get(monitor, "/api/v1/windows?segment=model=v1&limit=2")
    windows = json.loads(body)
    validate(windows, "windows")
    assert [w["start_ms"] for w in windows["windows"]] == [last_start(), last_start() - 10_000]
    ndcg = windows["windows"][0]["measures"]["ndcg@10:linear"]
    assert ndcg["ci_lower"] < ndcg["mean"] < ndcg["ci_upper"]


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/api/v1/explain?measure=ndcg@10&window=1", 400, "'segment' is required"),
        ("/api/v1/explain?segment=model=v1&window=yesterday", 400, "epoch milliseconds"),
        (
            "/api/v1/explain?segment=model=v1&window=1&measure=ndcg@7",
            400,
            "not one rankmon computes",
        ),
        ("/api/v1/explain?segment=model&window=1", 400, "key=value"),
        (f"/api/v1/explain?segment=model=v1&window={T0}", 404, "keeps the last 4 windows"),
        ("/api/v1/windows?segment=model=v9", 404, "no window of segment model=v9"),
        ("/api/v1/windows?segment=model=v1&limit=0", 400, "whole number"),
        # Past int()'s 4300 digits: a 400, not a 500 and a traceback.
        (f"/api/v1/explain?segment=model=v1&window={'9' * 5000}", 400, "epoch milliseconds"),
        (f"/api/v1/explain?segment=model=v1&at={'9' * 5000}", 400, "whole number"),
        (f"/api/v1/windows?segment=model=v1&limit={'9' * 5000}", 400, "whole number"),
    ],
)
def test_a_bad_request_gets_its_status_and_a_one_line_reason(
    monitor: Monitor, path: str, status: int, words: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="monitor.explain.api")
    code, kind, body = get(monitor, path)
    refused = [r for r in caplog.records if r.name == "monitor.explain.api"]
    assert len(refused) == 1 and not refused[0].exc_info  # one line, no traceback
    assert str(status) in refused[0].getMessage()
    assert code == status and kind == "application/json"
    document = json.loads(body)
    validate(document, "error")
    assert words in document["error"] and "\n" not in document["error"]


@pytest.mark.parametrize(("name", "words"), [("documents", "whole number"), ("against", "epoch")])
def test_a_number_of_5000_digits_is_a_400_not_a_500(
    monitor: Monitor, name: str, words: str
) -> None:
    path = f"/api/v1/explain?segment=model=v1&window={last_start()}&{name}={'9' * 5000}"
    code, _, body = get(monitor, path)
    assert code == 400 and words in json.loads(body)["error"]


def test_the_page_shows_segments_charts_and_an_explanation_without_scripts(
    monitor: Monitor,
) -> None:
    code, kind, body = get(monitor, "/")
    page = body.decode()
    assert code == 200 and kind.startswith("text/html")
    assert "Segment model=v1" in page and "<svg" in page and "<script" not in page
    assert "ndcg10-floor" in page  # the floor is drawn
    code, _, body = get(
        monitor, f"/explain?segment=model=v1&measure=ndcg@10:linear&window={last_start()}"
    )
    page = body.decode()
    assert code == 200 and "<script" not in page
    first = min(page.index(f"<code>{q}</code>") for q in PLANTED)
    others = [page.index(f"<code>q{i}</code>") for i in range(QUERIES) if f"q{i}" not in PLANTED]
    assert first < min(others)
    assert "left the top 10: best3, good3" in page
    assert "a judged relevant document left the top k; RBO " in page
    assert "3 of the 20 queries sampled on both sides changed their top 10" in page


def test_a_dashboards_data_link_time_picks_the_newest_window_ended_by_then(
    monitor: Monitor,
) -> None:
    end = last_start() + 10_000
    _, _, by_time = get(monitor, f"/api/v1/explain?segment=model=v1&measure=ndcg@10&at={end + 5}")
    _, _, by_start = get(
        monitor, f"/api/v1/explain?segment=model=v1&measure=ndcg@10&window={last_start()}"
    )
    assert json.loads(by_time) == json.loads(by_start)
    _, _, earlier = get(monitor, f"/api/v1/explain?segment=model=v1&measure=ndcg@10&at={end - 1}")
    assert json.loads(earlier)["window"]["start_ms"] == last_start() - 10_000


def test_two_segments_of_a_comparison_are_explained_in_the_same_window() -> None:
    key = "ndcg@10:linear"

    def window(model: str, values: dict[str, float]) -> WindowSummary:
        mean = sum(values.values()) / len(values)
        return WindowSummary(
            window="10s", start_ms=0, end_ms=10_000, segment=(("model", model),),
            evaluation_set_version="e", events=len(values), queries=len(values),
            evaluation_set_queries=len(values), means={key: mean},
            sums={key: sum(values.values())}, event_means={key: mean},
            query_means={q: {key: v} for q, v in values.items()},
        )  # fmt: skip

    store = ExplainStore([key], keep=3)
    store.add(window("v1", {"a": 0.9, "b": 0.5, "c": 0.7}))
    store.add(window("v2", {"a": 0.2, "b": 0.6, "d": 1.0}))
    empty = EvaluationSet({}, None)
    api = ExplainApi(store, None, lambda: empty, default_measure=key)
    query = {"segment": ["model=v2"], "segment_against": ["model=v1"], "window": ["0"]}
    document = explanation_json(api.explain(query))
    validate(document, "explain")
    assert document["against"] == {"kind": "segment", "segment": "model=v1", "windows": [0]}
    rows = {r["query"]: r for r in document["queries"]}
    # a and b are common: (0.2 - 0.9) / 2; the change of the common queries is said apart
    assert rows["a"]["contribution"] == pytest.approx((0.2 - 0.9) / 2)
    assert document["common"] == {"change": pytest.approx(-0.3), "queries": 2}
    assert rows["c"]["status"] == "only_before" and rows["d"]["status"] == "only_after"
    assert abs(sum(r["contribution"] for r in document["queries"]) - document["change"]) < 1e-12


class HalfBridge:
    """Re-scores v-old's windows to v-new in ndcg@10 (each value halved), nothing else."""

    def bridges(self, old: str, new: str, measure: str) -> bool:
        return (old, new, measure) == ("v-old", "v-new", "ndcg@10:linear")

    def rescored(
        self,
        segment: Segment,
        start_ms: int,
        values: Mapping[str, float],
        measure: str,
        *,
        old: str,
        new: str,
    ) -> Mapping[str, float] | None:
        return {query: value / 2 for query, value in values.items()}


def test_a_baseline_spans_the_judging_loops_versions_where_a_bridge_rescores_them() -> None:
    # The judging loop makes a new version every few windows; a baseline of the window's own
    # version alone left most windows without one, and every link to them answered 404.
    key = "ndcg@10:linear"
    store = ExplainStore([key], keep=5)
    for index, version in enumerate(("v-old", "v-old", "v-new")):
        summary = WindowSummary(
            window="10s", start_ms=T0 + index * 10_000, end_ms=T0 + (index + 1) * 10_000,
            segment=SEG, evaluation_set_version=version, events=1, queries=1,
            evaluation_set_queries=1, means={key: 0.8}, sums={key: 0.8},
            event_means={key: 0.8}, query_means={"q1": {key: 0.8}},
        )  # fmt: skip
        store.add(summary)
    newest = T0 + 20_000
    assert store.baseline(SEG, newest, key, 5) == ({}, [])
    assert not store.has_baseline(SEG, newest, key)
    before, used = store.baseline(SEG, newest, key, 5, HalfBridge())
    assert before == {"q1": 0.4} and len(used) == 2
    assert store.has_baseline(SEG, newest, key, HalfBridge())
    assert not store.has_baseline(SEG, newest, "mrr", HalfBridge())  # it cannot re-score mrr


def test_where_the_set_changed_the_api_and_the_page_split_the_move_into_judgments_and_ranker() -> (
    None
):
    # The judging loop's new version moved v2's nDCG: the page said nothing, and the move
    # read as the ranker's. The window before re-scored with the new judgments (halved by
    # the bridge here: 0.8 -> 0.4) is the judgments' part, -0.4 of the window's -0.5.
    key = "ndcg@10:linear"
    store = ExplainStore([key], keep=5)
    for index, (version, value) in enumerate((("v-old", 0.8), ("v-old", 0.8), ("v-new", 0.3))):
        summary = WindowSummary(
            window="10s", start_ms=T0 + index * 10_000, end_ms=T0 + (index + 1) * 10_000,
            segment=SEG, evaluation_set_version=version, events=1, queries=1,
            evaluation_set_queries=1, means={key: value}, sums={key: value},
            event_means={key: value}, query_means={"q1": {key: value}},
        )  # fmt: skip
        store.add(summary)
    sets = EvaluationSet.from_judgments({"q1": {"d": 1}})
    bridged = ExplainApi(store, None, lambda: sets, default_measure=key, bridge=HalfBridge())
    document = bridged.windows({"segment": [segment_label(SEG)]})
    validate(document, "windows")
    newest, *older = document["windows"]
    assert newest["version_change"] == {
        "from": "v-old", "to": "v-new", "moved_by_judgments": {key: pytest.approx(-0.4)},
    }  # fmt: skip
    assert all(window["version_change"] is None for window in older)
    pages = ExplainPages(bridged, headline=[key], alerts=list, floors=lambda m, s: [])
    text = html.unescape(pages.index({}, {}).body.decode())
    assert (
        "evaluation set v-old -> v-new: the new judgments alone move ndcg@10:linear by -0.4000"
        in text
    )
    assert text.count('stroke="#7a4fbf"') == 1  # the chart marks where
    # a person's reload the bridge cannot reach: the move is not split
    plain = ExplainApi(store, None, lambda: sets, default_measure=key)
    (unsplit, *_) = plain.windows({"segment": [segment_label(SEG)]})["windows"]
    assert unsplit["version_change"]["moved_by_judgments"] == {key: None}
