"""`rankmon replay` asks a real HTTP ranker (the demo's synthetic ranker, served on loopback):
each query ends in exactly one outcome, faults included, and the whole replay accounts for
every query in its records and its end markers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from monitor.declare import read_settings
from monitor.demo.broker import free_port
from monitor.demo.http_ranker import RankerServer, topic_text, write_topics
from monitor.demo.ranker import ModelVersion
from monitor.demo.synthetic import SyntheticCorpus, generate_corpus
from monitor.errors import InputError
from monitor.kafka.settings import KafkaConfig
from monitor.replay.metrics import REPLAY_SERIES, ReplayMetrics
from monitor.replay.ranker import RankerClient, fill, walk
from monitor.replay.replayer import Replayer
from monitor.replay.runner import RateLimit, ReplayReport, run_replay, write_run
from monitor.replay.settings import RankerSettings, ReplayConfig
from monitor.replay.topics import Query, check_against, read_topics
from monitor.sections import ConfigSection
from monitor.trec.runfile import read_run
from tests.support.bm25_ranker import Bm25Ranker, corpus

CORPUS = generate_corpus(7, queries=24, judged_per_query=8, unjudged_per_query=8)


def ranker_settings(url: str, **keys: object) -> RankerSettings:
    section = ConfigSection({"url": url, **keys}, "replay.ranker", {})
    return read_settings(RankerSettings, section)


@pytest.fixture
def server() -> Iterator[RankerServer]:
    slow, failing = {CORPUS.query_ids[1]}, {CORPUS.query_ids[2]}
    version = ModelVersion("v42", 1.0)
    with RankerServer(CORPUS, version, slow=slow, slow_s=4.0, failing=failing) as running:
        yield running


def queries(corpus: SyntheticCorpus = CORPUS) -> list[Query]:
    return [Query(q, topic_text(q)) for q in corpus.query_ids]


class MemoryPublisher:
    """Records what a replay publishes, on `partitions` partitions by key hash."""

    def __init__(self, partitions: int = 3) -> None:
        self.partitions = partitions
        self.records: list[tuple[int, bytes, bytes]] = []
        self.ends: list[tuple[int, dict[str, object]]] = []
        self.begun: dict[str, object] = {}

    def send(self, key: bytes, value: bytes) -> None:
        self.records.append((sum(key) % self.partitions, key, value))

    def begin(self, marker: tuple[bytes, bytes]) -> None:
        self.begun = orjson.loads(marker[1])["replay"]

    def end(self, marker: Callable[[int], tuple[bytes, bytes]]) -> None:
        counts = Counter(partition for partition, _, _ in self.records)
        for partition in range(self.partitions):
            _, value = marker(counts[partition])
            self.ends.append((partition, orjson.loads(value)["replay"]))


def test_a_replay_ends_every_query_in_one_outcome_and_its_markers_count_every_record(
    server: RankerServer,
) -> None:
    settings = ranker_settings(
        server.url,
        timeout="1s",
        retries=1,
        backoff="10ms",
        concurrency=4,
        headers={"X-T": "s"},
        headers_env={"X-Api-Key": "KEY"},
    ).with_secret_headers({"KEY": "k1"})
    client = RankerClient(settings, 10, (("model", "header:X-Model-Version"),))
    publisher = MemoryPublisher()
    try:
        report = run_replay(
            queries(), client, publisher, replay_id="r1", segment={"team": "search"}, concurrency=4
        )
    finally:
        client.close()
    assert report.queries == len(CORPUS.query_ids) == len(publisher.records)
    assert report.outcomes == {"ranked": 22, "timeout": 1, "error": 1}
    assert report.reasons == {"timeout": 1, "http_500": 1}
    events = [orjson.loads(value) for _, _, value in publisher.records]
    assert sorted(e["query_id"] for e in events) == sorted(CORPUS.query_ids)
    assert {e["event_id"] for e in events} == {f"r1/{q}" for q in CORPUS.query_ids}
    ranked = [e for e in events if "ranking" in e]
    assert all(len(e["ranking"]) == 10 and e["replay"] == {"id": "r1"} for e in ranked)
    assert all(e["segment"] == {"team": "search", "model": "v42"} for e in ranked)
    failed = {e["query_id"]: e["replay"] for e in events if "ranking" not in e}
    assert failed == {
        CORPUS.query_ids[1]: {"id": "r1", "outcome": "timeout", "reason": "timeout"},
        CORPUS.query_ids[2]: {"id": "r1", "outcome": "error", "reason": "http_500"},
    }
    assert server.last_headers["X-Api-Key"] == "k1" and server.last_headers["X-T"] == "s"
    # the retried queries were asked twice; every other query once
    assert server.requests == len(CORPUS.query_ids) + 2
    # a worker publishes a record while the ranker works on its next query, never asking two
    assert 2 <= server.most_in_flight <= 4
    assert sum(end["events"] for _, end in publisher.ends) == len(publisher.records)  # type: ignore[misc]
    assert all(end["queries"] == 24 and end["end"] is True for _, end in publisher.ends)


def test_a_ranker_that_is_down_gives_connection_errors_not_an_exception() -> None:
    settings = ranker_settings(
        f"http://127.0.0.1:{free_port()}/search", retries=2, backoff="1ms", timeout="1s"
    )
    waits: list[float] = []
    client = RankerClient(settings, 10, sleep=waits.append)
    answer = client.ask(queries()[0])
    assert (answer.outcome, answer.reason, answer.attempts) == ("error", "connection", 3)
    assert waits == [0.001, 0.002]  # the backoff doubles


def test_the_run_file_of_a_replay_is_read_by_rankmon_eval_in_the_rankers_order(
    server: RankerServer, tmp_path: Path
) -> None:
    client = RankerClient(ranker_settings(server.url, timeout="1s", retries=0), 20)
    report = run_replay(
        queries(), client, MemoryPublisher(), replay_id="r2", segment={}, concurrency=2
    )
    client.close()
    path = tmp_path / "replay.run"
    write_run(report, path)
    run = read_run(path)
    assert run.tag == "r2"
    assert dict(run.rankings) == report.rankings
    assert len(run.rankings) == 22


def test_a_stop_ends_the_queries_not_yet_asked_as_cancelled_which_are_no_failures() -> None:
    stop = threading.Event()
    publisher = MemoryPublisher()
    with RankerServer(CORPUS, ModelVersion("v1", 1.0)) as server:  # no planted faults
        report = _stopped_replay(server, stop, publisher)
    ranked = report.outcomes["ranked"]
    assert ranked >= 1 and report.result == "aborted" and report.stopped
    assert report.reasons == {"cancelled": report.queries - ranked}
    # A cancelled query has no record (the monitor would count it as the ranker's failure);
    # the marker still accounts for every query, and says the replay was stopped.
    assert len(publisher.records) == ranked
    marker = publisher.ends[0][1]
    assert marker["outcomes"] == {"ranked": ranked, "error": report.queries - ranked}
    assert marker["stopped"] is True and marker["queries"] == report.queries


def _stopped_replay(
    server: RankerServer, stop: threading.Event, publisher: MemoryPublisher
) -> ReplayReport:
    client = RankerClient(ranker_settings(server.url, timeout="5s"), 10)

    def stop_after_the_first(query: Query, answer: object) -> None:
        stop.set()

    report = run_replay(
        queries(),
        client,
        publisher,
        replay_id="r3",
        segment={},
        concurrency=1,
        stop=stop,
        on_answer=stop_after_the_first,
    )
    client.close()
    return report


def test_the_rate_limit_spaces_requests_evenly_across_threads() -> None:
    now = [100.0]
    waits: list[float] = []

    class Stop(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(round(timeout or 0.0, 9))
            return False

    limit = RateLimit(4.0, monotonic=lambda: now[0])
    for _ in range(4):
        limit.acquire(Stop())
    assert waits == [0.25, 0.5, 0.75]  # the first goes at once, then one every 1/rate


@pytest.mark.parametrize(
    ("preset", "answer", "ids"),
    [
        ("json", {"hits": [{"id": "a", "score": 2}, {"id": "b", "score": 1}]}, ["a", "b"]),
        ("elasticsearch", {"hits": {"hits": [{"_id": "a"}, {"_id": 7}]}}, ["a", 7]),
        ("solr", {"response": {"docs": [{"id": "a"}, {"id": "b"}]}}, ["a", "b"]),
    ],
)
def test_each_preset_finds_the_ids_where_its_api_puts_them(
    preset: str, answer: dict[str, object], ids: list[object]
) -> None:
    settings = ranker_settings("http://r/x", preset=preset)
    assert walk(answer, settings.preset_of.ids) == ids
    assert walk({"other": 1}, settings.preset_of.ids) is None


def test_a_template_takes_the_query_text_the_depth_and_a_topics_own_fields() -> None:
    query = Query("q1", "red shoes", {"market": "de", "filters": ["in_stock"]})
    template = {"q": "{query}", "size": "{depth}", "m": "{market}", "f": "{filters}", "n": 3}
    assert fill(template, query, 50) == {
        "q": "red shoes",
        "size": 50,
        "m": "de",
        "f": ["in_stock"],
        "n": 3,
    }
    assert json.loads(json.dumps(fill(["{query} x"], query, 1))) == ["red shoes x"]


def test_topics_are_read_in_each_format_and_must_match_the_evaluation_set(tmp_path: Path) -> None:
    tsv = write_topics(CORPUS, tmp_path / "topics.tsv")
    assert list(read_topics(tsv)) == list(CORPUS.query_ids)
    jsonl = tmp_path / "topics.jsonl"
    jsonl.write_text('{"query_id": "q1", "text": "red shoes", "market": "de"}\n')
    assert read_topics(jsonl)["q1"] == Query("q1", "red shoes", {"market": "de"})
    trec = tmp_path / "topics.trec"
    trec.write_text("<top>\n<num> Number: 301\n<title> International Organized Crime\n</top>\n")
    assert read_topics(trec)["301"].text == "International Organized Crime"
    check_against(read_topics(tsv), CORPUS.query_ids, tsv)
    with pytest.raises(InputError, match=r"1 evaluation-set queries have no text \(q9999\)"):
        check_against(read_topics(tsv), [*CORPUS.query_ids, "q9999"], tsv)
    with pytest.raises(InputError, match=r"1 texts have no judgments"):
        check_against(read_topics(tsv), CORPUS.query_ids[1:], tsv)
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1 no tab here\n")
    with pytest.raises(InputError, match=r"bad.tsv:1: expected qid<TAB>text"):
        read_topics(bad)


def test_a_scheduled_replay_due_while_one_still_runs_is_skipped_and_counted(
    tmp_path: Path,
) -> None:
    corpus = generate_corpus(3, queries=3, judged_per_query=4, unjudged_per_query=2)
    qrels = corpus.write_qrels(tmp_path / "qrels.txt")
    topics = write_topics(corpus, tmp_path / "topics.tsv")
    with RankerServer(corpus, ModelVersion("v1", 1.0), slow=corpus.query_ids, slow_s=1.0) as server:
        section = {
            "topics": str(topics),
            "ranker": {"url": server.url, "concurrency": 1, "timeout": "5s"},
            "schedule": {"interval": "1s"},  # every second; a replay takes 3
        }
        settings = read_settings(ReplayConfig, ConfigSection(section, "replay", {}))
        publisher = MemoryPublisher()
        replayer = Replayer(settings, KafkaConfig(topic="t"), qrels, publisher=publisher)
        stop = threading.Event()
        threading.Timer(8.5, stop.set).start()
        replayer.scheduled(stop)
    missed = replayer.registry.get_sample_value("rankmon_replay_missed_total")
    # 8 ticks, and a replay takes 3 s: at most 3 of them start one (0-3 s is the first,
    # started at once). The ticks during the first replay are skipped by rankmon, those
    # during a scheduled one by APScheduler (max_instances): both are counted.
    assert missed is not None and missed >= 5
    assert replayer.reports[0].result == "complete"
    # a replay the stop cut short ends its unasked queries as cancelled: one outcome each
    assert all(sum(r.outcomes.values()) == r.queries == 3 for r in replayer.reports)
    # never two replays at once: each replay's records are contiguous
    ids = [orjson.loads(value)["replay"]["id"] for _, _, value in publisher.records]
    assert ids == sorted(ids, key=ids.index) and len(set(ids)) == len(replayer.reports)


def test_the_replayers_series_are_the_ones_the_dashboards_may_query() -> None:
    registry = CollectorRegistry()
    metrics = ReplayMetrics(registry)
    report = ReplayReport("r1", 1, 0, 1_000)
    report.outcomes["ranked"] = 1
    report.latencies_s.append(0.01)
    metrics.record(report)
    exposed = {
        line.split("{")[0].split(" ")[0]
        for line in generate_latest(registry).decode().splitlines()
        if line and not line.startswith("#") and "_created" not in line.split(" ")[0]
    }
    assert exposed == REPLAY_SERIES


def test_a_partial_replay_is_the_newest_that_ranked_though_the_last_success_stays_old() -> None:
    # One query of the set always fails: every replay is partial. The last success stays 0,
    # so an alert on it would fire forever; the newest replay that ranked moves on.
    registry = CollectorRegistry()
    metrics = ReplayMetrics(registry)
    for ended_ms in (60_000, 120_000):
        report = ReplayReport("r", 2, ended_ms - 5_000, ended_ms)
        report.outcomes.update({"ranked": 1, "error": 1})
        metrics.record(report)
    value = registry.get_sample_value
    assert value("rankmon_replay_last_success_timestamp_seconds") == 0
    assert value("rankmon_replay_last_timestamp_seconds", {"result": "partial"}) == 120.0
    assert value("rankmon_replays_total", {"result": "partial"}) == 2


def test_replay_once_without_a_reachable_broker_is_one_line_and_exit_1(tmp_path: Path) -> None:
    qrels = CORPUS.write_qrels(tmp_path / "qrels.txt")
    write_topics(CORPUS, tmp_path / "topics.tsv")
    (tmp_path / "rankmon.yaml").write_text(
        f"""
kafka: {{topic: t, bootstrap_servers: ["127.0.0.1:{free_port()}"]}}
evaluation_set: {{path: {qrels}}}
replay: {{topics: topics.tsv, ranker: {{url: "http://127.0.0.1:1/search"}}}}
"""
    )
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "replay", "--config", "rankmon.yaml", "--once"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("rankmon replay: cannot reach Kafka at 127.0.0.1:"), done.stderr
    assert "Traceback" not in done.stderr


def test_a_run_file_that_cannot_hold_an_id_is_refused_by_name() -> None:
    report = ReplayReport("r9", 1, 0, 1)
    report.rankings["q1"] = ("good", "has space")
    with pytest.raises(ValueError, match="'has space' cannot be written in a TREC run"):
        write_run(report, Path("/nonexistent/never-written.run"))


def test_a_ranker_that_closes_each_connection_after_its_answer_is_read_without_a_failure() -> None:
    # An HTTP/1.0 server (BM25 over SQLite FTS5) closes after each answer. The attempt's
    # deadline socket closed the descriptor under the unread body: 112 of 219 queries
    # failed with `connection`, none retried here.
    documents, texts, qrels = corpus()
    with Bm25Ranker(documents) as ranker:
        client = RankerClient(ranker_settings(ranker.url("v1"), preset="json", retries=0), 20)
        answers = [client.ask(Query(q, text)) for q, text in texts.items()]
        open_files = len(os.listdir("/proc/self/fd"))
        for q, text in texts.items():
            client.ask(Query(q, text))
        grown = len(os.listdir("/proc/self/fd")) - open_files
    assert [a.outcome for a in answers] == ["ranked"] * len(texts)
    assert all(a.scores is not None and len(a.scores) == len(a.ids) for a in answers)
    assert grown <= 2  # each closed connection's descriptor is closed with its body
    # the ranker is a real one: most first sentences find their own module's opening
    found = sum(answer.ids[0] in qrels[q] for q, answer in zip(texts, answers, strict=True))
    assert found > len(texts) // 2
