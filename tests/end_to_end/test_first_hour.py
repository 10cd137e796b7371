"""A new user's first hour: each mistake they make is met with one line naming it, the
defaults do not page on nothing, and the README and `--help` say what the code does.

Every test runs `rankmon` as a user would, in a child process, with the mistake as input
(except the README checks, which read the parser and a scrape of a started `Monitor`, and
the rate of the unreachable-Kafka lines, on a fake clock).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import yaml
from kafka import KafkaProducer

from monitor.cli import build_parser, main
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.kafka.reachability import Reachability
from monitor.scoring.catalog import EXPORTED_KINDS
from monitor.testing.clock import FakeClock
from tests.support.fake_monitor import monitor_on
from tests.support.fakes import FakeProducer, FakeStream
from tests.support.recovery_support import (
    CORPUS,
    T0,
    ServiceProcess,
    create_topics,
    read_topic,
    wait_until,
    write_config,
)

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def rankmon(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`rankmon ARGS` in a child process: exit status, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stdout, done.stderr


def one_line(err: str) -> str:
    """The single line of an error on stderr (a traceback fails the test)."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def service_config(tmp_path: Path, export: str, kafka: str = '["127.0.0.1:1"]') -> Path:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    path = tmp_path / "rankmon.yaml"
    path.write_text(
        f"kafka: {{topic: events, bootstrap_servers: {kafka}}}\n"
        "evaluation_set: {path: qrels.txt}\n"
        f"export: {export}\n"
    )
    return path


# -- start-up errors: ports, hosts, Kafka ------------------------------------------------


def test_run_with_the_metrics_port_taken_exits_2_naming_export_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = service_config(tmp_path, f"{{host: 127.0.0.1, port: {port}}}")
        code, _, err = rankmon("run", "--config", str(config), cwd=tmp_path)
    assert code == 2
    line = one_line(err)
    assert "'export.port'" in line and f"127.0.0.1:{port}" in line and "in use" in line


@pytest.mark.parametrize(
    ("host", "said"),
    [("no-such-host.invalid", "cannot resolve"), ("192.0.2.1", "not an address of this machine")],
)
def test_run_with_an_export_host_it_cannot_listen_on_exits_2_naming_export_host(
    tmp_path: Path, host: str, said: str
) -> None:
    config = service_config(tmp_path, f"{{host: {host}, port: 0}}")
    code, _, err = rankmon("run", "--config", str(config), cwd=tmp_path)
    assert code == 2
    line = one_line(err)
    assert "'export.host'" in line and said in line and host in line


@pytest.mark.slow
def test_an_unreachable_kafka_is_logged_at_start_naming_bootstrap_servers(tmp_path: Path) -> None:
    closed = free_port()
    config = service_config(tmp_path, "{host: 127.0.0.1, port: 0}", f'["127.0.0.1:{closed}"]')
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "run", "--config", str(config)],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(lambda: "Kafka unreachable" in log.read_text(), 30, "the warning")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    text = log.read_text()
    warning = next(line for line in text.splitlines() if "Kafka unreachable" in line)
    assert "WARNING" in warning and "kafka.bootstrap_servers" in warning
    assert f"127.0.0.1:{closed}" in warning
    assert text.count("Kafka unreachable") == 1  # once at start; then once a minute


def test_an_outage_is_logged_at_once_then_once_a_minute_and_its_end_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(T0)
    watch = Reachability(["kafka:9092"], clock)

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records]

    with caplog.at_level(logging.INFO, logger="monitor.service"):
        for _ in range(90):  # 9 s down from the start: within the grace, nothing yet
            watch.note(False)
            clock.advance(100)
        assert lines() == []
        for _ in range(1500):  # to 2m39s: the warning at 10 s, then at 1m10s and 2m10s
            watch.note(False)
            clock.advance(100)
        assert lines() == [
            "Kafka unreachable: no broker of kafka.bootstrap_servers answered",
            "Kafka still unreachable",
            "Kafka still unreachable",
        ]
        caplog.clear()
        for up in (True, True, False, False, True):
            watch.note(up)
            clock.advance(100)
        assert lines() == ["Kafka up", "Kafka down", "Kafka up"]


# -- the config behaves the same in every section ------------------------------------


MINIMAL = "kafka: {topic: events}\nevaluation_set: {path: q.txt}\n"
RULE = "    - {name: floor, measure: ndcg@10, below: 0.5, for: null}\n"


def test_inside_alerts_null_and_an_empty_variable_mean_the_default(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "c.yaml").write_text(MINIMAL + "alerts:\n  log: null\n  rules:\n" + RULE)
    code, out, err = rankmon(
        "check-config", "c.yaml", cwd=tmp_path, env={"RANKMON_ALERTS__MIN_QUERIES": ""}
    )
    assert (code, err) == (0, "")
    alerts = yaml.safe_load(out)["alerts"]
    assert alerts["log"] is True and alerts["min_queries"] == 10
    assert alerts["rules"][0]["for"] == 1


def test_a_misspelt_key_inside_alerts_gets_a_suggestion(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        MINIMAL
        + "alerts:\n  rules:\n    - {name: f, measure: ndcg@10, below: 0.5, keep_firing: 2}\n"
    )
    code, _, err = rankmon("check-config", "c.yaml", cwd=tmp_path)
    assert code == 2
    line = one_line(err)
    assert "alerts.rules[0].keep_firing" in line and "keep_firing_for" in line


def test_an_alert_duration_without_a_unit_is_refused_like_every_other(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(MINIMAL + "alerts:\n  alertmanager: {timeout: 5}\n")
    code, _, err = rankmon("check-config", "c.yaml", cwd=tmp_path)
    assert code == 2
    line = one_line(err)
    assert "alerts.alertmanager.timeout" in line and "unit" in line


# -- defaults that do not page on nothing ----------------------------------------------


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as running:
        yield running


@pytest.mark.broker
@pytest.mark.slow
def test_one_stray_record_pages_nobody_and_epoch_seconds_are_refused_saying_so(
    tmp_path: Path, broker: EmbeddedBroker
) -> None:
    # A fresh start whose first record is a stray from 2020, then one event whose producer
    # wrote epoch seconds. The stray's window is published, its below rule holds (1 query
    # of 40 < alerts.min_queries 10); the seconds event is dead-lettered with the detail.
    create_topics(broker, "first", 1)
    query = next(iter(CORPUS.judgments))
    alerts = (
        "alerts:\n  log: true\n  rules:\n"
        "    - {name: ndcg10-floor, measure: ndcg@10, below: 0.99, severity: critical}\n"
    )
    config = write_config(
        tmp_path, broker.bootstrap_servers, "first", "first", idle_timeout="1s", extra=alerts
    )
    service = ServiceProcess(config, "first")
    try:
        service.wait_ready()
        stray = {"event_id": "stray", "query_id": query, "ranking": ["nope"]}
        seconds = {**stray, "event_id": "seconds", "event_time": T0 // 1000}
        produce_values(
            broker.bootstrap_servers,
            "first",
            [
                orjson.dumps({**stray, "event_time": "2020-06-01T12:00:00Z"}),
                orjson.dumps(seconds),
            ],
        )
        wait_until(lambda: bool(read_topic(broker.bootstrap_servers, "first.windows")), 30, "share")
        wait_until(lambda: bool(read_topic(broker.bootstrap_servers, "first.dlq")), 30, "dlq")
        time.sleep(1.0)  # a few more ticks: an alert would be logged by now
        log = service.log()
    finally:
        service.terminate()
    assert "alert firing" not in log and "ndcg10-floor" not in log.split("rankmon started")[-1]
    share = orjson.loads(read_topic(broker.bootstrap_servers, "first.windows")[0].value)
    assert share["events"] == 1 and share["start_ms"] < T0
    (dead,) = read_topic(broker.bootstrap_servers, "first.dlq")
    headers = {name: value.decode() for name, value in dead.headers}
    assert headers["rankmon-reason"] == "bad_event_time"
    assert "epoch seconds" in headers["rankmon-detail"]


def produce_values(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for value in values:
        producer.send(topic, key=b"k", value=value)
    producer.flush()
    producer.close()


# -- commands that write files, and their messages ----------------------------------


def test_dashboards_render_leaves_a_differing_file_alone_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "dashboards"
    code, printed, _ = rankmon("dashboards", "render", "--out", str(out), cwd=tmp_path)
    assert code == 0
    first = Path(printed.split()[0])
    first.write_text('{"checked in": "with thresholds"}')
    code, _, err = rankmon("dashboards", "render", "--out", str(out), cwd=tmp_path)
    assert code == 2 and str(first) in one_line(err) and "--force" in err
    assert first.read_text() == '{"checked in": "with thresholds"}'
    code, _, _ = rankmon("dashboards", "render", "--out", str(out), "--force", cwd=tmp_path)
    assert code == 0 and first.read_text() != '{"checked in": "with thresholds"}'


def test_the_checked_in_dashboards_are_safe_from_a_render_without_config() -> None:
    before = {path: path.read_bytes() for path in (ROOT / "dashboards").glob("*.json")}
    code, _, err = rankmon("dashboards", "render", cwd=ROOT)
    assert code == 2 and "exists and differs" in one_line(err)
    assert {path: path.read_bytes() for path in (ROOT / "dashboards").glob("*.json")} == before


def test_dashboards_push_to_an_unreachable_grafana_says_why_in_plain_words(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, _, err = rankmon(
        "dashboards", "push", "--url", url, cwd=tmp_path, env={"GRAFANA_TOKEN": "glsa_x"}
    )
    assert code == 2
    line = one_line(err)
    assert line == f"rankmon dashboards: cannot reach Grafana at {url}: connection refused"


def test_eval_warns_when_the_run_scores_nothing(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "empty.run").write_text("")
    (tmp_path / "other.run").write_text("q9 Q0 d1 1 1.0 tag\n")
    code, out, err = rankmon("eval", "qrels.txt", "empty.run", cwd=tmp_path)
    assert code == 0 and "num_q" in out
    assert one_line(err) == "rankmon eval: warning: empty.run holds no rankings: every measure is 0"
    code, _, err = rankmon("eval", "qrels.txt", "other.run", cwd=tmp_path)
    assert code == 0 and "no query of other.run is in the qrels" in one_line(err)


def test_eval_words_a_missing_qrels_and_a_missing_run_alike(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "one.run").write_text("q1 Q0 d1 1 1.0 tag\n")
    _, _, no_qrels = rankmon("eval", "nope.qrels", "one.run", cwd=tmp_path)
    _, _, no_run = rankmon("eval", "qrels.txt", "nope.run", cwd=tmp_path)
    assert one_line(no_qrels) == (
        "rankmon eval: nope.qrels: cannot read the judgments: No such file or directory"
    )
    assert (
        one_line(no_run) == "rankmon eval: nope.run: cannot read the run: No such file or directory"
    )


def test_an_unknown_measure_lists_every_name_eval_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "one.run").write_text("q1 Q0 d1 1 1.0 tag\n")
    code, _, err = rankmon("eval", "-m", "ndgc_cut.10", "qrels.txt", "one.run", cwd=tmp_path)
    assert code == 2
    known = one_line(err).split("known are ")[1].split(", ")
    assert {"ndcg_cut", "P", "num_q", "runid", "all_rankmon"} <= set(known)
    files = [str(tmp_path / "qrels.txt"), str(tmp_path / "one.run")]
    for name in known:  # and every one listed is taken (in process: one start-up is enough)
        assert main(["eval", "-m", name, *files]) == 0, name
        assert capsys.readouterr().err == "", name


def test_eval_takes_rankmons_measure_names_as_the_trec_eval_ones_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 1\n")
    (tmp_path / "one.run").write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d9 1 1.0 t\n")
    files = [str(tmp_path / "qrels.txt"), str(tmp_path / "one.run")]
    ours = ["-m", "ndcg@5", "-m", "ndcg@10", "-m", "precision@5", "-m", "mrr", "-m", "rprec"]
    trec = ["-m", "ndcg_cut.5,10", "-m", "P.5", "-m", "recip_rank", "-m", "Rprec"]
    outputs = []
    for measures in (ours, trec):
        assert main(["eval", "-q", *measures, *files]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert "ndcg_cut_10" in outputs[0] and "recip_rank" in outputs[0]


def test_a_misspelt_speedups_setting_is_refused_not_taken_for_on(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "one.run").write_text("q1 Q0 d1 1 1.0 tag\n")
    env = {"RANKMON_SPEEDUPS": "of"}
    code, _, err = rankmon("eval", "qrels.txt", "one.run", cwd=tmp_path, env=env)
    assert code == 2 and "RANKMON_SPEEDUPS" in one_line(err) and "'of'" in err


# -- the README and --help, against the code ----------------------------------------


def _leaf_parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every runnable command's parser, named as typed (`dashboards push`)."""

    def walk(
        prefix: str, parser: argparse.ArgumentParser
    ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
        subcommands = [
            action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
        ]
        if not subcommands:
            yield prefix, parser
        for action in subcommands:
            for name, child in action.choices.items():
                yield from walk(f"{prefix} {name}".strip(), child)

    yield from walk("", build_parser())


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


def test_every_option_of_every_command_has_help_text_shown_by_help(tmp_path: Path) -> None:
    for command, parser in _leaf_parsers():
        code, shown, _ = rankmon(*command.split(), "--help", cwd=tmp_path)
        assert code == 0, command
        for action in _options(parser):
            assert action.help and action.help != argparse.SUPPRESS, (command, action.dest)
            assert action.option_strings[-1] in shown, (command, action.option_strings)


def test_the_readme_commands_table_names_every_option_of_every_command() -> None:
    rows = [line for line in README.splitlines() if line.startswith("| `rankmon ")]
    for command, parser in _leaf_parsers():
        top = command.split()[0]
        (row,) = [r for r in rows if r.startswith(f"| `rankmon {top}")]
        synopsis = row.split("` |")[0] if "` |" in row else row
        for action in _options(parser):
            assert any(f"{o} " in synopsis or f"{o}]" in synopsis for o in action.option_strings), (
                command,
                action.option_strings,
            )


# `rankmon_<measure>_...` in the README stands for each exported measure kind (trec_eval's
# families' come once streamed: test_provided_measures_served.py).
MEASURES = tuple(kind.metric for kind in EXPORTED_KINDS if kind.family is None)


def _readme_series() -> set[str]:
    section = README.split("## What is exported")[1].split("\n## ")[0]
    names: set[str] = set()
    for token in re.findall(r"`((?:rankmon|process|python)_[a-z_<>*]+)", section):
        if "<measure>" in token:
            names |= {token.replace("<measure>", m) for m in MEASURES}
        else:
            names.add(token)
    return names


def test_the_readme_lists_exactly_the_series_a_running_service_exports(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "c.yaml").write_text(
        "kafka: {topic: events}\nevaluation_set: {path: qrels.txt}\n"
        "export: {host: 127.0.0.1, port: 0}\nlogging: {level: WARNING}\n"
        "alerts:\n  log: false\n  rules:\n    - {name: floor, measure: ndcg@10, below: 0.5}\n"
    )
    config = load_config(tmp_path / "c.yaml", environ={})
    monitor = monitor_on(config, FakeClock(T0), FakeStream("events"), FakeProducer())
    monitor.start()
    try:
        with urllib.request.urlopen(f"{monitor.metrics_url}", timeout=5) as response:
            text = response.read().decode()
    finally:
        monitor.close()
    families = set(re.findall(r"^# TYPE (\S+) ", text, flags=re.MULTILINE))
    scraped = {name for name in families if name.startswith("rankmon_")}
    listed = _readme_series()
    wildcards = {name for name in listed if name.endswith("*")}
    assert scraped == listed - wildcards
    for wildcard in wildcards:
        assert any(name.startswith(wildcard.rstrip("*")) for name in families), wildcard
