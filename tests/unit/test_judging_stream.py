"""The judging loop on a monitor (on fakes): a discovery's documents are asked for once, within
the budget; the judgments sent back become a new evaluation-set version from a window boundary
and close the bounds; bad judgments are dead-lettered; a restart asks for nothing twice and
scores with every judgment at once; and a regression still pages."""

from __future__ import annotations

import math
import statistics
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.fakes import FakeProducer, finalize_all
from tests.support.judging_monitor import (
    QUERIES,
    T0,
    Stream,
    discovered,
    fillers,
    known,
)


@pytest.fixture
def stream(tmp_path: Path) -> Iterator[Stream]:
    running = Stream(tmp_path, FakeProducer())
    yield running
    running.monitor.close()


def human(i: int, grade: int = 3) -> dict[str, object]:
    return {"query_id": f"q{i}", "doc_id": f"new{i}", "grade": grade, "source": "human"}


def test_a_discovery_asks_for_its_documents_and_their_judgments_close_the_bounds(
    stream: Stream,
) -> None:
    for _ in range(4):
        stream.window(known)
    version = stream.monitor.snapshot().evaluation_set_version
    stream.window(discovered)
    assert stream.firing() == {"ndcg-discovery": "info"}  # held by default: no page
    asked = stream.asked()
    assert sorted((p["query_id"], p["doc_id"]) for p in asked) == sorted(
        (f"q{i}", f"new{i}") for i in range(QUERIES)
    )
    assert all(p["rank"] == 1 and p["served"] == 1 and float(str(p["priority"])) > 0 for p in asked)
    assert stream.newest("ndcg_upper@10:linear") > stream.newest("ndcg@10:linear")

    stream.window(discovered)  # the same documents again: asked for once
    assert len(stream.asked()) == QUERIES

    stream.judge([human(i) for i in range(QUERIES)])
    stream.window(discovered)  # the judgments take effect from a window boundary
    stream.window(discovered)
    assert stream.monitor.snapshot().evaluation_set_version != version
    assert stream.newest("ndcg_upper@10:linear") == stream.newest("ndcg@10:linear")
    assert stream.newest("ndcg@10:linear") == pytest.approx(1.0)
    assert "ndcg-drop" not in stream.firing()
    assert stream.sample("rankmon_judgments_total", outcome="accepted", reason="") == QUERIES
    assert len(stream.asked()) == QUERIES


def test_a_regression_of_the_judged_documents_still_pages(stream: Stream) -> None:
    for _ in range(4):
        stream.window(known)
    stream.window(lambda i: [f"good{i}", *fillers(i)[:3], f"best{i}"])
    assert stream.firing() == {"ndcg-drop": "critical"}


def test_the_budget_holds_pairs_back_until_the_hour_has_room(tmp_path: Path) -> None:
    stream = Stream(tmp_path, FakeProducer(), budget=15)
    try:
        for _ in range(4):
            stream.window(known)
        stream.window(discovered)
        assert len(stream.asked()) == 15
        assert stream.sample("rankmon_judging_pairs_pending") == QUERIES - 15
        stream.clock.advance(3_600_000)
        stream.window(known)
        assert len(stream.asked()) == 30
        assert len({(p["query_id"], p["doc_id"]) for p in stream.asked()}) == 30
    finally:
        stream.monitor.close()


def test_bad_judgments_are_dead_lettered_with_their_reason(stream: Stream) -> None:
    stream.window(known)
    stream.judge(
        [
            {"query_id": "nope", "doc_id": "d", "grade": 1, "source": "human"},
            {"query_id": "q1", "doc_id": "new1", "grade": 9, "source": "human"},
            {"query_id": "q1", "doc_id": "best1", "grade": 0, "source": "human"},
        ]
    )
    stream.window(known)
    dead = stream.producer.sent["events.dlq"]
    reasons = [dict(headers)["rankmon-reason"].decode() for _, _, headers in dead]
    assert reasons == ["unknown_query", "unknown_grade", "conflicting_grade"]
    assert {dict(headers)["rankmon-outcome"] for _, _, headers in dead} == {b"judgment"}
    assert stream.sample("rankmon_judgments_total", outcome="refused", reason="unknown_grade") == 1


def test_a_restarted_monitor_scores_with_every_judgment_and_asks_for_nothing_twice(
    tmp_path: Path,
) -> None:
    producer = FakeProducer()
    first = Stream(tmp_path, producer)
    for _ in range(4):
        first.window(known)
    first.window(discovered)
    first.judge([human(i, grade=0) for i in range(QUERIES // 2)])
    first.window(known)
    judged = first.monitor.snapshot().evaluation_set_version
    first.monitor.close()

    second = Stream(tmp_path, producer)
    try:
        second.clock.advance(first.clock.now_ms() - T0)
        second.window(discovered)
        first_window = second.monitor.explain_store.windows(())[-1].summary
        assert first_window.evaluation_set_version == judged
        assert len(second.asked()) == QUERIES
    finally:
        second.monitor.close()


def test_a_discovery_judged_junk_pages_at_the_first_window_its_judgments_score(
    stream: Stream,
) -> None:
    for _ in range(4):
        stream.window(known)
    stream.window(discovered)
    stream.window(discovered)  # held twice: the held windows do not become the baseline
    assert stream.firing() == {"ndcg-discovery": "info"}
    stream.judge([human(i, grade=0) for i in range(QUERIES)])
    stream.window(discovered)  # open when the judgments were read: the old version
    assert "ndcg-drop" not in stream.firing()
    stream.window(discovered)
    assert stream.firing().get("ndcg-drop") == "critical"


def test_a_regression_right_after_judgments_pages_on_the_rescored_baseline(
    stream: Stream,
) -> None:
    for _ in range(4):
        stream.window(known)
    stream.judge([human(i, grade=2) for i in range(QUERIES)])  # new documents nobody serves
    stream.window(lambda i: [f"good{i}", *fillers(i)[:3], f"best{i}"])
    assert stream.firing() == {"ndcg-drop": "critical"}


def model(i: int, doc: str, grade: int) -> dict[str, object]:
    return {"query_id": f"q{i}", "doc_id": doc, "grade": grade, "source": "llm:m@p1"}


def test_a_model_judge_that_stops_agreeing_with_the_people_fires_the_judge_rule(
    stream: Stream,
) -> None:
    stream.window(known)
    stream.judge([human(i, grade=3 * (i % 2)) for i in range(QUERIES)])
    stream.judge([model(i, f"new{i}", 3 * (i % 2)) for i in range(QUERIES)])  # the audit
    stream.window(known)
    assert stream.firing() == {}
    assert stream.sample("rankmon_judge_kappa", source="llm:m@p1") == 1.0
    assert stream.sample("rankmon_judge_audit_pairs", source="llm:m@p1") == QUERIES
    assert stream.sample("rankmon_judgments_total", outcome="audit", reason="") == QUERIES
    # the same model, upgraded: it now grades the file's not-relevant documents 3
    stream.judge([model(i, f"f{i}.0", 3) for i in range(QUERIES)])
    stream.window(known)
    assert stream.firing() == {"judge": "warning"}
    assert stream.sample("rankmon_judge_bias", source="llm:m@p1") == 3.0
    assert stream.sample("rankmon_judge_confusion", source="llm:m@p1", human="0", model="3") == 20


def test_the_headline_corrected_by_the_peoples_audit_lands_on_their_grades(
    stream: Stream,
) -> None:
    def people_grade(i: int) -> int:
        return i % 3  # what the people say new{i} is worth

    for _ in range(4):
        stream.window(known)
    # the model judge grades each new document one grade higher than the people would
    stream.judge([model(i, f"new{i}", people_grade(i) + 1) for i in range(QUERIES)])
    audited = [i for i in range(QUERIES) if i % 4 == 0]  # whole queries, a quarter of them
    stream.judge([human(i, people_grade(i)) for i in audited])
    stream.window(discovered)
    stream.window(discovered)
    labels = {"k": "10", "gain": "linear", "window": "10s"}
    version = stream.monitor.snapshot().evaluation_set_version
    labels["version"] = version

    def gauge(name: str) -> float:
        value = stream.sample(name, **labels)
        assert value is not None, name
        return value

    truth = statistics.fmean(
        ndcg_at_10([people_grade(i)] + [3, 1] + [0] * 7, [3, 1, people_grade(i)])
        for i in range(QUERIES)
    )
    raw = stream.newest("ndcg@10:linear")
    assert gauge("rankmon_ndcg_corrected_audited_queries") == len(audited)
    lower, upper = gauge("rankmon_ndcg_corrected_lower"), gauge("rankmon_ndcg_corrected_upper")
    assert lower <= truth <= upper
    assert not lower <= raw <= upper  # the model's grades alone miss it
    assert abs(gauge("rankmon_ndcg_corrected") - truth) < abs(raw - truth)
    # judged@10 split by who graded: the new documents at rank 1, by the judge or people
    split = {
        source: stream.sample(
            "rankmon_judged_by_source", k="10", source=source, window="10s", version=version
        )
        for source in ("qrels", "llm:m@p1", "human")
    }
    assert split == {
        "qrels": pytest.approx(0.9),
        "llm:m@p1": pytest.approx(0.1 * (QUERIES - len(audited)) / QUERIES),
        "human": pytest.approx(0.1 * len(audited) / QUERIES),
    }
    stream.monitor.start()  # the page at / says it too
    url = stream.monitor.metrics_url.replace("/metrics", "/")
    with urllib.request.urlopen(url, timeout=10) as answer:
        page = answer.read().decode()
    estimate = gauge("rankmon_ndcg_corrected")
    assert (
        f"Corrected for the model judge's bias by the people's audit of {len(audited)} queries "
        f"(PPI++), ndcg@10:linear is {estimate:.3f} (95 % interval {lower:.3f} to {upper:.3f}) "
        f"against {raw:.3f} as scored with the judge's grades." in page
    )


def ndcg_at_10(gains: list[int], judged: list[int]) -> float:
    dcg = sum(g / math.log2(r + 2) for r, g in enumerate(gains[:10]))
    ideal = sorted(judged, reverse=True)
    return dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal[:10]))


def test_a_second_instance_does_not_ask_again_for_what_the_first_asked(tmp_path: Path) -> None:
    producer = FakeProducer()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = Stream(tmp_path / "a", producer), Stream(tmp_path / "b", producer)
    try:
        for _ in range(4):
            first.window(known)
            second.window(known)
        first.window(discovered)
        assert len(first.asked()) == QUERIES
        second.window(discovered)  # the same pairs, seen by another instance
        assert len(second.asked()) == QUERIES
        assert second.sample("rankmon_judging_pairs_total", outcome="asked") is None
    finally:
        first.monitor.close()
        second.monitor.close()


def test_judgments_make_one_new_version_a_window_however_fast_they_come(stream: Stream) -> None:
    for _ in range(4):
        stream.window(known)

    def tick() -> None:
        for _ in range(15):  # the 1 s schedule
            stream.monitor.step()
            stream.clock.advance(100)

    start = -(-stream.clock.now_ms() // 10_000) * 10_000
    for i in range(QUERIES):  # a window opens and stays open
        event = {"event_id": f"open-{i}", "query_id": f"q{i}", "ranking": discovered(i),
                 "event_time": start + 100 + i}  # fmt: skip
        stream.stream.append(0, orjson.dumps(event), start + 100 + i)
    tick()
    before = stream.monitor.snapshot().evaluation_set_version
    stream.judge([human(i) for i in range(QUERIES // 2)])
    tick()
    first = stream.monitor.snapshot().evaluation_set_version
    assert first != before  # from the next window on
    stream.judge([human(i) for i in range(QUERIES // 2, QUERIES)])
    tick()
    assert stream.monitor.snapshot().evaluation_set_version == first  # the window is still open
    finalize_all(stream.monitor, stream.clock)
    assert stream.monitor.snapshot().evaluation_set_version not in (before, first)


def test_the_comparisons_carry_their_sequences_across_the_loops_versions_not_a_reload(
    stream: Stream,
) -> None:
    stream.window(known)
    before = stream.monitor.snapshot().evaluation_set_version
    stream.judge([human(i, grade=2) for i in range(QUERIES)])
    stream.window(known)
    after = stream.monitor.snapshot().evaluation_set_version
    carries = stream.monitor.comparisons.carries
    assert before != after and carries is not None
    assert carries(before, after)  # the loop's next judgments of the same file
    assert not carries(before, "a-person-reloaded-another-file")


def test_judgments_that_trickle_in_between_windows_keep_the_baselines_bridged(
    stream: Stream,
) -> None:
    # rankmon judge sends its grades batch by batch: between two replays each tick made a
    # version no window used, and the re-scorer, which keeps the newest 4, lost the version
    # the baselines were scored with; the drop rule then started its baseline afresh.
    for _ in range(4):
        stream.window(known)
    for i in range(6):  # six batches, each at its own tick, no event between them
        stream.judge([human(i)])
        for _ in range(15):
            stream.monitor.step()
            stream.clock.advance(100)
    stream.window(known)
    alert = stream.monitor.alerts.find("ndcg-drop", ())
    assert alert is not None and alert.track.history is not None
    assert len(alert.track.history) == 3  # re-scored across the versions, not started again
    [kept_before, kept_after] = stream.monitor.explain_store.windows(())[-2:]
    old = kept_before.summary.evaluation_set_version
    new = kept_after.summary.evaluation_set_version
    assert old != new
    assert stream.monitor._rescore is not None
    assert stream.monitor._rescore.bridges(old, new, "ndcg@10:linear")
