"""The replay loop as production runs it, on the real broker and service with a real HTTP
ranker on loopback: a dead ranker ends the replay as `aborted` after the circuit breaker's
failures, not after every query's retries, and the monitor's `ranker-failing` rule fires on
the replay's window, which its end marker closes (the times are printed, not asserted: about
1.1 s to `aborted` and 0.8 s more to the page here, with a 1 s tick)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from monitor.checkpoint.share import WindowShare
from monitor.checkpoint.share_reader import read_shares
from monitor.cli import main
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.replay.replayer import Replayer
from monitor.service import Monitor
from monitor.trec.runfile import read_run
from tests.end_to_end.test_replay_end_to_end import (
    scheduled_replayer,
    wait_for_replays,
    wait_for_shares,
    wait_for_the_share,
)
from tests.support.bm25_ranker import Bm25Ranker, corpus
from tests.support.hostile_ranker import HostileRanker
from tests.support.realparts import monitor_thread, replay_once, write_service_config
from tests.support.recovery_support import wait_until

pytestmark = [pytest.mark.broker]

QUERIES = 207
RANKMON = [sys.executable, "-m", "monitor.cli"]
RULES = """
alerts:
  log: false
  rules:
    - {name: ranker-failing, replay_errors: {max: 0.05}, severity: critical}
"""


def replay_files(
    directory: Path, broker: EmbeddedBroker, topic: str, queries: int, rules: str = ""
) -> tuple[Path, dict[str, str]]:
    """The service config (with `rules`) and a topics file of `queries` queries, each
    `best<q>` graded 3 and `good<q>` 1; the query texts by id."""
    texts = {f"q{i}": f"text {i}" for i in range(queries)}
    qrels = {q: {f"best{q}": 3, f"good{q}": 1} for q in texts}
    config = write_service_config(directory, broker, topic, qrels, rules)
    (directory / "topics.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in texts.items()))
    return config, texts


def test_a_dead_ranker_aborts_the_replay_within_seconds_and_pages_at_the_next_tick(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(1)
    config, _ = replay_files(tmp_path, tansu, topic, QUERIES, RULES)
    with (
        HostileRanker({}) as ranker,
        monitor_thread(Monitor(load_config(config, environ={}))) as monitor,
    ):
        ranker.down = True
        config.write_text(
            config.read_text()
            + f"""
replay:
  topics: topics.tsv
  ranker: {{url: "{ranker.url}", timeout: 1s, retries: 2, backoff: 100ms}}
  segment: {{model: v1}}
"""
        )
        settings = load_config(config, environ={})
        assert settings.replay is not None
        assert settings.replay.ranker.circuit_breaker == 10  # the default
        replayer = Replayer(settings.replay, settings.kafka, settings.evaluation_set.path)
        wait_until(lambda: bool(monitor.source.assignment), 30, "the monitor's partitions")
        began = time.monotonic()
        try:
            report = replayer.once()
        finally:
            replayer.close()
        aborted_s = time.monotonic() - began

        def paged() -> bool:
            return any(
                a.rule.name == "ranker-failing" and a.status.value == "firing"
                for a in monitor.alerts.active()
            )

        wait_until(paged, 30, "ranker-failing to fire", poll_s=0.05)
        paged_s = time.monotonic() - began
    print(
        f"\ndead ranker, {QUERIES} queries: aborted after {aborted_s:.1f} s "
        f"({len(ranker.bodies)} requests), ranker-failing fired after {paged_s:.1f} s"
    )
    assert report.result == "aborted"
    assert report.outcomes["error"] == QUERIES  # every query accounted for, as failed
    # Ten queries failed with their retries (and at most the other three in flight): the
    # requests do not grow with the set (before, 621: every query tried three times).
    assert len(ranker.bodies) <= 3 * (10 + 3)


STOP_RULES = """
alerts:
  log: false
  rules:
    - {name: ranker-failing, replay_errors: {max: 0.05}, severity: critical}
    - {name: ndcg-floor, measure: ndcg@10, below: 0.99, severity: critical}
"""


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_replay_stops_sending_and_its_window_is_held_not_paged(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path, signal_number: int
) -> None:
    # 207 queries at 20 a second take 10 s; the signal comes after about 1 s. Before, Ctrl-C
    # left the replay's threads sending all 207 queries, wrote no run file and no end marker,
    # and the queries it had sent made a window without a replay id, scored as quality (and
    # on SIGTERM, every cancelled query was counted as the ranker's failure: a page).
    topic = new_topic(1)
    config, texts = replay_files(tmp_path, tansu, topic, QUERIES, STOP_RULES)
    rankings = {t: [f"good{q}", f"best{q}"] for q, t in texts.items()}  # nDCG < 0.99
    run_file = tmp_path / "replay.run"
    with (
        HostileRanker(rankings) as ranker,
        monitor_thread(Monitor(load_config(config, environ={}))) as monitor,
    ):
        config.write_text(
            config.read_text()
            + f"""
replay:
  topics: topics.tsv
  ranker: {{url: "{ranker.url}", timeout: 5s, rate: 20}}
  segment: {{model: v1}}
"""
        )
        wait_until(lambda: bool(monitor.source.assignment), 30, "the monitor's partitions")
        replayer = subprocess.Popen(
            [*RANKMON, "replay", "--config", str(config), "--once", "--run-file", str(run_file)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: len(ranker.bodies) >= 20, 30, "the replay under way", poll_s=0.05)
        replayer.send_signal(signal_number)
        signalled = len(ranker.bodies)
        out, err = replayer.communicate(timeout=30)
        share = wait_for_the_share(tansu.bootstrap_servers, topic)
        firing = [a.rule.name for a in monitor.alerts.active() if a.status.value == "firing"]
        floor = monitor.alerts.find("ndcg-floor", (("model", "v1"),))
    assert replayer.returncode == 130, err
    # Nothing sent after the signal but what was paced before the handler ran (20 a second:
    # a loaded machine may take a moment to run it), far from the 207 asked before.
    assert len(ranker.bodies) <= signalled + 20
    asked = len(ranker.bodies)
    line = re.search(r"replay (r\S+): aborted: stopped", out)
    assert line is not None, out
    # The run file holds what was answered; the window names the replay as stopped.
    assert len(read_run(run_file).rankings) == asked
    assert share.summary.replays == share.summary.stopped_replays == (line.group(1),)
    assert (share.summary.queries, share.summary.failed_queries) == (asked, 0)
    # No page: the cancelled queries are no failures, and the quality rules hold.
    assert firing == []
    assert floor is not None and floor.verdict is not None
    assert "stopped before every query was asked" in floor.verdict.note


@pytest.mark.slow
def test_a_restarted_scheduled_replayer_keeps_to_the_schedule_and_no_record_is_late(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    # A replayer restarted in the window of its last replay used to replay at once: that
    # replay's records fell in the window the last one's end marker had closed, all late
    # (30 of 30 here, with replay.schedule.run_at_start on).
    topic = new_topic(1)
    config, texts = replay_files(tmp_path, tansu, topic, 30)
    port = free_port()
    with (
        HostileRanker({t: [f"best{q}"] for q, t in texts.items()}) as ranker,
        monitor_thread(Monitor(load_config(config, environ={}))) as monitor,
    ):
        config.write_text(
            config.read_text()
            + f"""
replay:
  topics: topics.tsv
  ranker: {{url: "{ranker.url}", timeout: 5s}}
  segment: {{model: v1}}
  schedule: {{interval: 10s}}
  metrics_port: {port}
"""
        )
        first = scheduled_replayer(config)
        wait_for_replays(port, first, replays=1)
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)
        asked = len(ranker.bodies)
        again = scheduled_replayer(config)  # within the window of the replay just made
        try:
            wait_for_replays(port, again, replays=1)
            wait_for_shares(tansu.bootstrap_servers, topic, 2)
        finally:
            again.send_signal(signal.SIGTERM)
            again.communicate(timeout=30)
        outcomes = monitor.snapshot().outcomes
    assert asked == 30 and len(ranker.bodies) >= 60
    assert outcomes.get("late") is None and outcomes.get("accepted") == len(ranker.bodies)


def test_a_replays_run_file_is_rebuilt_from_the_topic_as_the_archive_kept_it(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(2)
    config, texts = replay_files(tmp_path, tansu, topic, 20)
    rankings = {t: [f"best{q}", f"other{q}", "shared"] for q, t in texts.items()}
    with HostileRanker(rankings) as ranker:
        config.write_text(
            config.read_text()
            + f"""
replay:
  topics: topics.tsv
  ranker: {{url: "{ranker.url}"}}
  archive: {{directory: kept}}
"""
        )
        report = replay_once(config)
    rebuilt = tmp_path / "rebuilt.run"
    args = ["replay", "export", "--config", str(config), "--replay", report.replay_id]
    assert main([*args, "--output", str(rebuilt)]) == 0
    archived = read_run(tmp_path / "kept" / f"{report.replay_id}.run")
    assert dict(read_run(rebuilt).rankings) == dict(archived.rankings) == report.rankings
    assert len(report.rankings) == 20
    # A replay the topic does not hold: exit 1, one line.
    assert main([*args[:-1], "r-none", "--output", str(tmp_path / "none.run")]) == 1


def bm25_files(
    directory: Path, broker: EmbeddedBroker, topic: str
) -> tuple[Path, dict[str, str], dict[str, str]]:
    """The service config and topics file of the BM25 corpus (tests/support/bm25_ranker.py):
    the config, the documents and the query texts."""
    documents, texts, qrels = corpus()
    config = write_service_config(directory, broker, topic, qrels)
    (directory / "topics.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in texts.items()))
    return config, documents, texts


def test_two_rankers_replayed_on_one_schedule_each_fill_their_whole_window_none_late(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    # A real BM25 ranker (SQLite FTS5 over real text) as two releases on one cron tick,
    # v2 slower. v1's end markers used to close the window for both: v2's records came
    # after them and were late (its windows held 53-88 of 141 queries in the issue).
    topic = new_topic(3)
    config, documents, texts = bm25_files(tmp_path, tansu, topic)
    with (
        Bm25Ranker(documents, v2_delay_s=0.03) as ranker,
        monitor_thread(Monitor(load_config(config, environ={}))) as monitor,
    ):
        replayers, ports = [], []
        for release in ("v1", "v2"):
            port = free_port()
            own = tmp_path / f"replay-{release}.yaml"
            own.write_text(
                config.read_text()
                + f"""
replay:
  topics: {tmp_path / "topics.tsv"}
  ranker: {{url: "{ranker.url(release)}", preset: json, timeout: 5s, concurrency: 1}}
  segment: {{model: {release}}}
  schedule: {{interval: 10s}}
  metrics_port: {port}
"""
            )
            replayers.append(scheduled_replayer(own))
            ports.append(port)
        try:
            for port, replayer in zip(ports, replayers, strict=True):
                wait_for_replays(port, replayer, replays=1)
            wait_for_shares(tansu.bootstrap_servers, topic, 2)
        finally:
            for replayer in replayers:
                replayer.send_signal(signal.SIGTERM)
                replayer.communicate(timeout=30)
        time.sleep(2.5)  # the monitor's tick after the last markers
        outcomes = monitor.snapshot().outcomes
    shares = [
        record
        for record in read_shares(
            bootstrap_servers=tansu.bootstrap_servers, topic=f"{topic}.windows"
        )
        if isinstance(record, WindowShare)
    ]
    held = sorted(
        (s.summary.segment[0][1], s.summary.queries, len(s.summary.replays)) for s in shares
    )
    print(f"\n(release, queries, replays) per window: {held}; asked: {dict(ranker.asked)}")
    assert {release for release, _, _ in held} == {"v1", "v2"}
    assert all(queries == len(texts) and replays == 1 for _, queries, replays in held)
    assert outcomes.get("late") is None


def test_a_manual_replay_beside_the_schedule_is_counted_whole_and_nothing_is_late(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    # `replay --once` by hand while the scheduled replayer runs, after the scheduled replay
    # of its window ended: its window had closed, and all its records were late.
    topic = new_topic(2)
    config, documents, texts = bm25_files(tmp_path, tansu, topic)
    port = free_port()
    with (
        Bm25Ranker(documents) as ranker,
        monitor_thread(Monitor(load_config(config, environ={}))) as monitor,
    ):
        config.write_text(
            config.read_text()
            + f"""
replay:
  topics: {tmp_path / "topics.tsv"}
  ranker: {{url: "{ranker.url("v1")}", preset: json, timeout: 5s}}
  segment: {{model: v1}}
  schedule: {{interval: 10s}}
  metrics_port: {port}
"""
        )
        scheduled = scheduled_replayer(config)
        try:
            wait_for_replays(port, scheduled, replays=1)
            # the scheduled replay's window is closed (published), and the manual one starts
            # inside it: at least 3 s before its end, else after the next scheduled one
            shares = wait_for_shares(tansu.bootstrap_servers, topic, 1)
            if time.time() * 1000 > shares[0].summary.end_ms - 3_000:
                shares = wait_for_shares(tansu.bootstrap_servers, topic, 2)
            closed = shares[-1].summary
            manual = subprocess.run(
                [*RANKMON, "replay", "--config", str(config), "--once"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            replay_id = re.search(r"replay (\S+?): ", manual.stdout + manual.stderr)
            assert manual.returncode == 0 and replay_id, manual.stderr
            wait_until(
                lambda: any(
                    isinstance(share, WindowShare) and replay_id[1] in share.summary.replays
                    for share in read_shares(
                        bootstrap_servers=tansu.bootstrap_servers, topic=f"{topic}.windows"
                    )
                ),
                30,
                "the manual replay's window",
            )
        finally:
            scheduled.send_signal(signal.SIGTERM)
            scheduled.communicate(timeout=30)
        outcomes = monitor.snapshot().outcomes
    [counted] = [
        share.summary
        for share in read_shares(
            bootstrap_servers=tansu.bootstrap_servers, topic=f"{topic}.windows"
        )
        if isinstance(share, WindowShare) and replay_id[1] in share.summary.replays
    ]
    print(f"\nthe manual replay counted in the window at {counted.start_ms}: {counted.replays}")
    assert counted.start_ms == closed.end_ms  # the window after the closed one
    assert counted.queries == len(texts)
    assert outcomes.get("late") is None
