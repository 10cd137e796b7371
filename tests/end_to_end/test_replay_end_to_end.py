"""`rankmon replay` against a real HTTP ranker (the demo's synthetic ranker on loopback), the
real broker and the real service: a replay is one window, closed by its end markers (the idle
timeout is an hour) that names its replay, scored exactly as `rankmon eval` scores the run
file it writes; its failed queries are counted into the window, never dead-lettered; on a
schedule it replays again and again until SIGTERM, and a replay missed while the replayer was
suspended is skipped, counted, and the schedule goes on; a replayer killed mid-replay leaves a
window the idle timeout closes, its coverage saying what is missing, and the next replay is a
window of its own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import orjson
import pytest

from monitor.checkpoint.share import WindowShare
from monitor.checkpoint.share_reader import read_shares
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.demo.http_ranker import RankerServer, write_topics
from monitor.demo.ranker import ModelVersion
from monitor.demo.synthetic import generate_corpus
from monitor.service import Monitor
from tests.support.realparts import monitor_thread, write_service_config
from tests.support.recovery_support import read_topic

pytestmark = [pytest.mark.broker, pytest.mark.slow]

RANKMON = [sys.executable, "-m", "monitor.cli"]
CORPUS = generate_corpus(11, queries=30, judged_per_query=10, unjudged_per_query=10)
SLOW, FAILING = CORPUS.query_ids[1], CORPUS.query_ids[2]


def replay_config(
    directory: Path, broker: EmbeddedBroker, topic: str, ranker_url: str, extra: str = ""
) -> Path:
    config = write_service_config(directory, broker, topic, CORPUS.judgments)
    text = config.read_text()  # idle_timeout 1h: only the end markers close a replay
    write_topics(CORPUS, directory / "topics.tsv")
    text += f"""
replay:
  topics: topics.tsv
  depth: 20
  ranker: {{url: "{ranker_url}", timeout: 1s, retries: 0, concurrency: 4}}
  segment: {{model: v1}}
{extra}"""
    config.write_text(text)
    return config


def test_a_replay_is_scored_exactly_as_rankmon_eval_scores_its_run_file(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(2)
    ranker = RankerServer(
        CORPUS, ModelVersion("v1", 0.8), slow={SLOW}, slow_s=5.0, failing={FAILING}
    )
    with ranker:
        config = replay_config(tmp_path, tansu, topic, ranker.url)
        run_file = tmp_path / "replay.run"
        with monitor_thread(Monitor(load_config(config, environ={}))) as monitor:
            done = subprocess.run(
                [
                    *RANKMON,
                    "replay",
                    "--config",
                    str(config),
                    "--once",
                    "--run-file",
                    str(run_file),
                ],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            line = re.search(r"replay (r\S+): partial, 30 queries in", done.stdout)
            assert line is not None, done.stdout
            share = wait_for_the_share(tansu.bootstrap_servers, topic)
            outcomes = monitor.snapshot().outcomes
    assert share.summary.queries == 28 and share.summary.events == 28
    # The timeout and the 500 reached the window as the replay's failures, on the real broker.
    assert share.summary.failed_queries == 2
    assert share.summary.replays == (line.group(1),)  # the window names its replay
    assert share.summary.segment == (("model", "v1"),)
    # Every query the ranker answered, scored as `rankmon eval` scores the run file.
    evaluated = subprocess.run(
        [*RANKMON, "eval", "-q", "-m", "ndcg_cut.10", "-m", "P.10", "--format", "json",
         str(tmp_path / "qrels.txt"), str(run_file)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    per_query = json.loads(evaluated.stdout)["per_query"]
    assert set(per_query) == set(share.summary.query_means)
    assert SLOW not in per_query and FAILING not in per_query
    for query, values in per_query.items():
        streamed = share.summary.query_means[query]
        assert streamed["ndcg@10:linear"] == values["ndcg_cut_10"], query
        assert streamed["precision@10"] == values["P_10"], query
    # The two failed queries and the two partitions' start and end markers are notices,
    # counted and never dead-lettered; the rest was accepted.
    assert outcomes.get("replay_notice") == 6
    assert outcomes.get("accepted") == 28
    assert read_topic(tansu.bootstrap_servers, topic + ".dlq", timeout_s=2.0) == []


def wait_for_the_share(bootstrap: str, topic: str, timeout_s: float = 60.0) -> WindowShare:
    [share] = wait_for_shares(bootstrap, topic, 1, timeout_s)
    return share


def wait_for_shares(
    bootstrap: str, topic: str, count: int, timeout_s: float = 60.0
) -> list[WindowShare]:
    """The first `count` window shares, once published (more: a replay straddled two)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shares = [
            record
            for record in read_shares(bootstrap_servers=bootstrap, topic=topic + ".windows")
            if isinstance(record, WindowShare)
        ]
        if len(shares) >= count:
            assert len(shares) == count, "a replay straddled two windows"
            return shares
        time.sleep(0.5)
    raise AssertionError(f"fewer than {count} window shares were published")


def test_scheduled_replays_repeat_export_their_metrics_and_stop_on_sigterm(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(2)
    port = free_port()
    with RankerServer(CORPUS, ModelVersion("v1", 0.8)) as ranker:
        schedule = f"  schedule: {{interval: 4s}}\n  metrics_port: {port}\n"
        config = replay_config(tmp_path, tansu, topic, ranker.url, schedule)
        with scheduled_replayer(config, RANKMON_WINDOWS__SIZE="4s") as process:
            metrics = wait_for_replays(port, process, replays=2)
            process.send_signal(signal.SIGTERM)
            _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    assert 'rankmon_replay_queries_total{outcome="ranked"}' in metrics
    assert "rankmon_replay_ranker_latency_seconds_bucket" in metrics
    markers = [
        orjson.loads(r.value)["replay"]
        for r in read_topic(tansu.bootstrap_servers, topic)
        if b'"end":true' in r.value
    ]
    events = Counter(
        orjson.loads(r.value)["replay"]["id"]
        for r in read_topic(tansu.bootstrap_servers, topic)
        if b'"end":true' not in r.value and b'"start":true' not in r.value
    )
    replays = {m["id"] for m in markers}
    assert len(replays) >= 2
    for replay in replays:  # every replay ended, on both partitions, accounting for each event
        ends = [m for m in markers if m["id"] == replay]
        assert len(ends) == 2
        assert sum(m["events"] for m in ends) == events[replay] == 30


def scheduled_replayer(config: Path, **environ: str) -> subprocess.Popen[str]:
    """`rankmon replay --config CONFIG` on its schedule, with `environ` added."""
    return subprocess.Popen(
        [*RANKMON, "replay", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **environ},
    )


def wait_for_replays(
    port: int, process: subprocess.Popen[str], replays: int, timeout_s: float = 60
) -> str:
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
                text = str(page.read().decode())
        except OSError:
            time.sleep(0.3)
            continue
        done = re.search(r'rankmon_replays_total\{result="complete"\} (\d+)', text)
        if done and float(done[1]) >= replays:
            return text
        time.sleep(0.3)
    raise AssertionError(f"fewer than {replays} replays in {timeout_s:.0f} s:\n{text}")


def test_a_misfired_replay_is_skipped_and_counted_and_the_schedule_goes_on(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    """SIGSTOP stands for a suspended laptop, a paused container or a long GC pause: the
    replay due meanwhile is more than `misfire_grace` late when the replayer wakes."""
    topic = new_topic(2)
    port = free_port()
    with RankerServer(CORPUS, ModelVersion("v1", 0.8)) as ranker:
        schedule = f"  schedule: {{interval: 4s, misfire_grace: 1s}}\n  metrics_port: {port}\n"
        config = replay_config(tmp_path, tansu, topic, ranker.url, schedule)
        with scheduled_replayer(config, RANKMON_WINDOWS__SIZE="4s") as process:
            wait_for_replays(port, process, replays=2)  # the one at start, one on the 4 s grid
            time.sleep(4 - time.time() % 4 + 1.0)  # 1 s after a grid replay began: it is over
            process.send_signal(signal.SIGSTOP)
            time.sleep(5.5)  # past the next grid time; it wakes 2.5 s after it, grace is 1 s
            process.send_signal(signal.SIGCONT)
            before = missed_replays(port)
            metrics = wait_for_replays(port, process, replays=3)  # the next grid time runs
            process.send_signal(signal.SIGTERM)
            _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    assert before == 1, errors
    assert "rankmon_replay_missed_total 1.0" in metrics
    assert "a scheduled replay was skipped: not started within replay.schedule.misfire_grace" in (
        errors
    )


def missed_replays(port: int) -> float:
    """rankmon_replay_missed_total, once the woken replayer has counted its misfire."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            found = re.search(r"^rankmon_replay_missed_total (\S+)", page.read().decode(), re.M)
        if found and float(found[1]) > 0:
            return float(found[1])
        time.sleep(0.2)
    return 0.0


def test_a_replayer_killed_mid_replay_leaves_a_window_the_idle_timeout_closes_with_its_coverage(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(2)
    slow = set(CORPUS.query_ids)  # every query takes 0.3 s: the replay lasts about 9 s
    with RankerServer(CORPUS, ModelVersion("v1", 0.8), slow=slow, slow_s=0.3) as ranker:
        config = replay_config(tmp_path, tansu, topic, ranker.url)
        text = config.read_text().replace("concurrency: 4", "concurrency: 1")
        config.write_text(text.replace("idle_timeout: 1h", "idle_timeout: 2s"))
        with monitor_thread(Monitor(load_config(config, environ={}))):
            replayer = subprocess.Popen([*RANKMON, "replay", "--config", str(config), "--once"])
            deadline = time.monotonic() + 30
            while len(read_topic(tansu.bootstrap_servers, topic, timeout_s=0.5)) < 5:
                assert time.monotonic() < deadline, "the replayer published nothing"
            replayer.send_signal(signal.SIGKILL)  # no end marker, most queries never asked
            replayer.wait(timeout=10)
            published = [  # the queries it published (its start markers aside)
                record
                for record in read_topic(tansu.bootstrap_servers, topic, timeout_s=1.0)
                if b'"start":true' not in record.value
            ]
            half = wait_for_the_share(tansu.bootstrap_servers, topic)
            # The next replay is a window of its own, whole (the ranker at its own speed now:
            # thirty slow queries one at a time would take 9 s of the suite).
            ranker.slow = frozenset()
            again = subprocess.run(
                [*RANKMON, "replay", "--config", str(config), "--once"],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert again.returncode == 0, again.stderr
            shares = wait_for_shares(tansu.bootstrap_servers, topic, count=2)
    assert not any(b'"end":true' in record.value for record in published)
    assert half.summary.queries == len(published) < len(CORPUS.query_ids)
    assert half.summary.coverage == len(published) / len(CORPUS.query_ids)  # what is missing
    assert half.summary.replays == ()  # its markers never came
    whole = shares[-1].summary
    assert (whole.queries, whole.coverage, len(whole.replays)) == (30, 1.0, 1)
    assert whole.start_ms > half.summary.start_ms


def test_a_cron_schedule_in_its_own_time_zone_runs_next_at_its_minute_there(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    """Kathmandu is UTC+5:45: a cron read in UTC (or the host's zone) would run hours off.
    The replayer, started on the real broker, says when its next replay runs; a cron three
    hours ahead in Kathmandu is due then, not 5:45 later or earlier. (That APScheduler fires
    at that time, within the misfire grace, the interval tests show on the same broker.)"""
    zone = ZoneInfo("Asia/Kathmandu")
    due = (datetime.now(zone) + timedelta(hours=3)).replace(second=0, microsecond=0)
    topic = new_topic(2)
    port = free_port()
    with RankerServer(CORPUS, ModelVersion("v1", 0.8)) as ranker:
        schedule = (
            f'  schedule: {{cron: "{due.minute} {due.hour} * * *", timezone: Asia/Kathmandu, '
            f"misfire_grace: 5s}}\n  metrics_port: {port}\n"
        )
        config = replay_config(tmp_path, tansu, topic, ranker.url, schedule)
        with scheduled_replayer(config) as process:
            wait_for_metrics(port, process)
            process.send_signal(signal.SIGTERM)
            _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    said = re.search(r"replay scheduled .*next=(\S+)", errors)
    assert said is not None, errors
    print(f"\ndue {due.isoformat()}, scheduled next {said[1]}")
    assert datetime.fromisoformat(said[1]) == due
    assert said[1].endswith("+05:45")


def wait_for_metrics(port: int, process: subprocess.Popen[str]) -> None:
    """Until the replayer serves its /metrics (it has scheduled its replays by then)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the replayer served no /metrics in 30 s")
