"""The ranker's answers are input: a real HTTP ranker on loopback that answers 1 GiB, drips
its answer a byte at a time, returns an id the monitor would refuse, or is sent a query text
holding a placeholder; and secrets with line breaks in the config. Each hostile answer ends
as one failed query with its reason, and the honest queries beside it are ranked."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from monitor.cli import main
from monitor.config.loader import load_config
from monitor.declare import read_settings
from monitor.errors import ConfigError
from monitor.kafka.settings import KafkaConfig
from monitor.replay.ranker import RankerClient
from monitor.replay.replayer import Replayer
from monitor.replay.runner import run_replay
from monitor.replay.settings import RankerSettings, ReplayConfig
from monitor.replay.topics import Query
from monitor.sections import ConfigSection
from tests.support.hostile_ranker import HostileRanker

HONEST = {"q1 text": ["d1", "d2", "d3"], "q2 {depth} {query}": ["d2", "d1"]}


@contextmanager
def client(url: str, **keys: object) -> Iterator[RankerClient]:
    section = ConfigSection(
        {"url": url, "timeout": "1s", "retries": 1, "backoff": "10ms", **keys}, "replay.ranker", {}
    )
    asker = RankerClient(read_settings(RankerSettings, section), 10, max_id_bytes=512)
    try:
        yield asker
    finally:
        asker.close()


def test_a_ranker_answering_a_gibibyte_fails_the_query_after_reading_at_most_the_limit() -> None:
    limit = 1 << 20
    with HostileRanker(HONEST) as ranker, client(ranker.url, max_response_bytes=limit) as asker:
        answer = asker.ask(Query("q0", "huge"))
        honest = asker.ask(Query("q1", "q1 text"))
    assert (answer.outcome, answer.reason, answer.attempts) == ("error", "too_large", 1)
    # The server wrote what the socket buffers took before the client hung up, not 1 GiB.
    assert ranker.streamed < 64 << 20
    assert (honest.outcome, honest.ids) == ("ranked", ("d1", "d2", "d3"))


def test_a_ranker_dripping_its_answer_times_out_at_the_timeout_not_at_its_last_byte() -> None:
    # 73 bytes, one every 0.4 s: each read is quick, the whole answer takes 29 s. The timeout
    # (1 s) bounds each attempt as a whole, so the query ends `timeout` after its 2 attempts
    # instead of `ranked` half a minute later.
    with HostileRanker(HONEST) as ranker, client(ranker.url) as asker:
        answer = asker.ask(Query("q0", "drip"))
        honest = asker.ask(Query("q1", "q1 text"))
    assert (answer.outcome, answer.reason, answer.attempts) == ("timeout", "timeout", 2)
    assert honest.outcome == "ranked"


def test_a_document_id_past_max_id_bytes_fails_the_query_as_id_too_long() -> None:
    with HostileRanker({"long id q": ["d1", "d2"]}) as ranker, client(ranker.url) as asker:
        answer = asker.ask(Query("q0", "long id q"))
    assert (answer.outcome, answer.reason, answer.ids) == ("error", "id_too_long", ())


def test_a_query_text_holding_a_placeholder_is_sent_as_written() -> None:
    with HostileRanker(HONEST) as ranker, client(ranker.url) as asker:
        answer = asker.ask(Query("q2", "q2 {depth} {query}"))
    assert ranker.bodies == [{"query": "q2 {depth} {query}", "size": 10}]
    assert answer.ids == ("d2", "d1")


def replay_config(tmp_path: Path, ranker: str) -> Path:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "topics.tsv").write_text("q1\tq1 text\n")
    config = tmp_path / "rankmon.yaml"
    config.write_text(
        "kafka: {topic: events}\nevaluation_set: {path: qrels.txt}\n"
        f"replay: {{topics: topics.tsv, ranker: {{url: 'http://127.0.0.1:1/', {ranker}}}}}\n"
    )
    return config


def test_a_secret_header_with_a_line_break_is_one_config_error_naming_its_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = replay_config(tmp_path, "headers_env: {X-Api-Key: RANKER_KEY}")
    secret = "s3cr3t-value\r\nX-Injected: 1"
    with pytest.raises(ConfigError) as raised:
        load_config(config, environ={"RANKER_KEY": secret})
    assert "RANKER_KEY" in str(raised.value) and "line break" in str(raised.value)
    assert "s3cr3t" not in str(raised.value)
    # The command says it in one line, and never the value.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RANKER_KEY", secret)
        assert main(["replay", "--config", str(config), "--once"]) == 2
    printed = capsys.readouterr()
    assert "s3cr3t" not in printed.out + printed.err
    assert [line for line in printed.err.splitlines() if "RANKER_KEY" in line]
    assert "Traceback" not in printed.err


@pytest.mark.parametrize(
    ("ranker", "key"),
    [
        ('headers: {X-Team: "a\\nb"}', "headers"),
        ("headers: {'X Team': a}", "headers"),
        ("headers_env: {'Bad:Name': RANKER_KEY}", "headers_env"),
    ],
)
def test_a_header_that_cannot_be_sent_is_a_config_error_naming_its_key(
    tmp_path: Path, ranker: str, key: str
) -> None:
    config = replay_config(tmp_path, ranker)
    with pytest.raises(ConfigError, match=f"replay.ranker.{key}"):
        load_config(config, environ={"RANKER_KEY": "k"})


class Published:
    """What a replay publishes, in memory."""

    def __init__(self) -> None:
        self.values: list[dict[str, Any]] = []
        self.marker: dict[str, Any] = {}
        self.begun: dict[str, Any] = {}

    def send(self, key: bytes, value: bytes) -> None:
        self.values.append(orjson.loads(value))

    def begin(self, marker: tuple[bytes, bytes]) -> None:
        self.begun = orjson.loads(marker[1])["replay"]

    def end(self, marker: Callable[[int], tuple[bytes, bytes]]) -> None:
        self.marker = orjson.loads(marker(len(self.values))[1])["replay"]


def test_the_rate_limit_covers_retries_so_an_overloaded_ranker_gets_no_more_requests() -> None:
    # 45 queries, each answered 503 once; rate 40 a second, one retry. Before, the limit was
    # taken once per query and the retries came on top: the ranker saw 66 requests in a second.
    texts = [f"busy {i}" for i in range(45)]
    with (
        HostileRanker({text: ["d1"] for text in texts}) as ranker,
        client(ranker.url, backoff="10ms", concurrency=8) as asker,
    ):
        report = run_replay(
            [Query(f"q{i}", text) for i, text in enumerate(texts)],
            asker,
            Published(),
            replay_id="r1",
            segment={},
            concurrency=8,
            rate=40.0,
        )
    assert report.outcomes == {"ranked": 45} and len(ranker.arrivals) == 90
    first = ranker.arrivals[0]
    in_any_second = max(
        sum(1 for t in ranker.arrivals if start <= t < start + 1.0) for start in ranker.arrivals
    )
    # 40 a second, the one that opens the next, and a few a loaded machine sent late onto
    # the next ones' slots (the limit spaces when requests may go, not when they arrive).
    assert in_any_second <= 45, in_any_second
    assert ranker.arrivals[-1] - first >= 89 / 40 - 0.3  # unpaced retries took about 1.1 s


def test_a_dead_ranker_ends_the_replay_as_aborted_after_the_breakers_failures() -> None:
    # 207 queries against a ranker answering 503 to everything: without the breaker each was
    # tried 3 times, 621 requests; with it the replay ends after 10 failed queries in a row.
    with HostileRanker({}) as ranker, client(ranker.url, retries=2, backoff="10ms") as asker:
        ranker.down = True
        published = Published()
        report = run_replay(
            [Query(f"q{i}", f"text {i}") for i in range(207)],
            asker,
            published,
            replay_id="r1",
            segment={},
            concurrency=4,
            breaker=10,
        )
    assert report.result == "aborted"
    assert "failed 10 queries in a row (http_503 10)" in report.aborted
    assert report.reasons["aborted"] >= 207 - 10 - 4  # at most `concurrency` were in flight
    assert len(ranker.bodies) <= 3 * (10 + 4)
    # Every query is accounted for, and the marker says why the replay ended.
    assert len(published.values) == 207 and published.marker["aborted"] == report.aborted
    assert "aborted: the ranker failed 10 queries in a row" in report.line()


def test_a_ranker_that_recovers_before_the_breaker_trips_is_not_aborted() -> None:
    texts = [f"busy {i}" for i in range(30)]
    with (
        HostileRanker({text: ["d1"] for text in texts}) as ranker,
        client(ranker.url, retries=0) as asker,
    ):
        report = run_replay(
            [Query(f"q{i}", text) for i, text in enumerate(texts)],
            asker,
            Published(),
            replay_id="r1",
            segment={},
            concurrency=1,
            breaker=31,
        )
    assert report.result == "failed" and report.aborted == ""  # 30 failed: fewer than 31


def test_a_wrong_ids_path_is_an_error_line_naming_the_setting_with_a_sample_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "topics.tsv").write_text("q1\tq1 text\nq2\tq2 text\n")
    with HostileRanker({"q1 text": ["d1"], "q2 text": ["d2"]}) as ranker:
        # The ranker answers {"hits": [{"id": ...}]}; the config looks for results[].id.
        section = ConfigSection(
            {"topics": "topics.tsv", "ranker": {"url": ranker.url, "ids": "results[].id"}},
            "replay",
            {},
            base=tmp_path,
        )
        settings = read_settings(ReplayConfig, section)
        replayer = Replayer(
            settings, KafkaConfig(topic="t"), tmp_path / "qrels.txt", publisher=Published()
        )
        try:
            report = replayer.once()
        finally:
            replayer.close()
    assert report.reasons == {"no_ids": 2}
    [fix] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "2 answers had no document ids at 'results[].id'" in fix.getMessage()
    assert "set replay.ranker.ids" in fix.getMessage()
    assert re.search(r'The answer to q[12]: \{"hits": \[\{"id": "d[12]"', fix.getMessage())
    [line] = [r for r in caplog.records if "replay r" in r.getMessage() and r is not fix]
    assert line.levelname == "WARNING" and "failed" in line.getMessage()


class Terminal(io.StringIO):
    """A stream that says it is a terminal, keeping what is drawn on it."""

    def isatty(self) -> bool:
        return True


def test_a_replay_on_a_terminal_draws_its_progress_on_stderr_never_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "qrels.txt").write_text("".join(f"q{n} 0 d{n} 1\n" for n in range(30)))
    (tmp_path / "topics.tsv").write_text("".join(f"q{n}\tq{n} text\n" for n in range(30)))
    stderr, stdout = Terminal(), io.StringIO()  # stdout piped to a file, as `> run.txt`
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "stdout", stdout)
    rankings = {f"q{n} text": [f"d{n}"] for n in range(30)}
    with HostileRanker(rankings) as ranker:
        section = ConfigSection(
            {"topics": "topics.tsv", "ranker": {"url": ranker.url}}, "replay", {}, base=tmp_path
        )
        settings = read_settings(ReplayConfig, section)
        replayer = Replayer(
            settings,
            KafkaConfig(topic="t"),
            tmp_path / "qrels.txt",
            publisher=Published(),
            progress=True,
        )
        try:
            report = replayer.once()
        finally:
            replayer.close()
    assert report.outcomes == {"ranked": 30}
    assert f"replay {report.replay_id}" in stderr.getvalue()
    assert "30/30" in stderr.getvalue() or "100%" in stderr.getvalue()
    assert stdout.getvalue() == ""


def test_a_cron_from_the_environment_needs_no_quotes(tmp_path: Path) -> None:
    config = replay_config(tmp_path, "timeout: 1s")
    cron = {"RANKMON_REPLAY__SCHEDULE__CRON": "*/10 * * * *"}
    loaded = load_config(config, environ=cron)
    assert loaded.replay is not None and loaded.replay.schedule.cron == "*/10 * * * *"
    with pytest.raises(ConfigError, match="not a crontab expression: Wrong number of fields"):
        load_config(config, environ={"RANKMON_REPLAY__SCHEDULE__CRON": "*/10 * * *"})


def test_a_url_without_a_scheme_is_one_problem_naming_the_fix(tmp_path: Path) -> None:
    config = replay_config(tmp_path, "timeout: 1s")
    config.write_text(config.read_text().replace("http://127.0.0.1:1/", "localhost:9200/x"))
    with pytest.raises(ConfigError) as raised:
        load_config(config, environ={})
    assert str(raised.value).splitlines() == [
        "config key 'replay.ranker.url': the ranker's url must start with http:// or https://"
    ]


def test_a_preset_spelled_in_capitals_says_which_one_it_meant(tmp_path: Path) -> None:
    config = replay_config(tmp_path, "timeout: 1s")
    with pytest.raises(ConfigError) as raised:
        load_config(config, environ={"RANKMON_REPLAY__RANKER__PRESET": "JSON"})
    assert "got 'JSON' (str): did you mean 'json'?" in str(raised.value)
    assert "_EnvironmentText" not in str(raised.value)


def test_the_archive_keeps_the_newest_replays_run_files_with_the_rankers_scores(
    tmp_path: Path,
) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "topics.tsv").write_text("q1\tq1 text\nq2\tq2 text\n")
    with HostileRanker({"q1 text": ["d1", "d9"], "q2 text": ["d2"]}) as ranker:
        section = ConfigSection(
            {"topics": "topics.tsv", "ranker": {"url": ranker.url},
             "archive": {"directory": "kept", "keep": 2}},
            "replay", {}, base=tmp_path,
        )  # fmt: skip
        settings = read_settings(ReplayConfig, section)
        replayer = Replayer(
            settings, KafkaConfig(topic="t"), tmp_path / "qrels.txt", publisher=Published()
        )
        try:
            reports = [replayer.once() for _ in range(3)]
        finally:
            replayer.close()
    kept = sorted((tmp_path / "kept").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    assert [p.name for p in kept] == [f"{r.replay_id}.run" for r in reports[1:]]
    # The ranker's scores (100, 99, ...: strictly decreasing), so trec_eval keeps its order.
    assert kept[-1].read_text().splitlines() == [
        f"q1 Q0 d1 1 100 {reports[-1].replay_id}",
        f"q1 Q0 d9 2 99 {reports[-1].replay_id}",
        f"q2 Q0 d2 1 100 {reports[-1].replay_id}",
    ]
