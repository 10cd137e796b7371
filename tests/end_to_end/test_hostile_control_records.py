"""Control records and ranker answers are input: hostile writers of the events, windows,
judgments and to-judge topics, and a hostile ranker, against the real broker and service.
Each test sends the hostile records first, then honest ones: the hostile ones are refused
with their reason, and nothing honest is lost, late or held up; what they could make rankmon
keep stays bounded.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka import KafkaProducer

from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.group.decider import DECIDES
from monitor.service import Monitor
from tests.end_to_end.test_group_decisions_end_to_end import Threads, wait_for
from tests.end_to_end.test_replay_end_to_end import wait_for_the_share
from tests.support.hostile_ranker import HostileRanker
from tests.support.realparts import monitor_thread, replay_once, write_service_config
from tests.support.recovery_support import read_topic, wait_until

pytestmark = [pytest.mark.broker]

YEAR_MS = 365 * 86_400_000
QRELS = {f"q{i}": {f"best{i}": 3, f"good{i}": 1} for i in range(20)}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def counted(monitor: Monitor, name: str) -> Counter[tuple[str, ...]]:
    """A counter's samples by their labels' values."""
    found: Counter[tuple[str, ...]] = Counter()
    for metric in monitor.registry.collect():
        for sample in metric.samples:
            if sample.name == name:
                found[tuple(sample.labels.values())] += int(sample.value)
    return found


def dead_letter_reasons(bootstrap: str, topic: str) -> Counter[str]:
    return Counter(
        dict(record.headers).get("rankmon-reason", b"").decode()
        for record in read_topic(bootstrap, topic)
    )


def test_control_records_past_an_events_limits_are_refused_and_no_honest_event_is_late(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    # 2 s windows, 2 s lateness, the default 10 s clock skew: a lateness shorter than the skew.
    topic = new_topic(1)
    config = write_service_config(tmp_path, tansu, topic, QRELS)
    environ = {"RANKMON_WINDOWS__SIZE": "2s", "RANKMON_WINDOWS__ALLOWED_LATENESS": "2s"}
    now = now_ms()
    producer = KafkaProducer(bootstrap_servers=tansu.bootstrap_servers, linger_ms=20)

    def send(value: dict[str, Any], record_ms: int) -> None:
        producer.send(topic, key=b"q", value=orjson.dumps(value), timestamp_ms=record_ms)

    v1 = {"model": "v1"}
    # 1. One end marker whose replay claims to start a year ahead: its windows would close.
    marker = {"id": "r-evil", "end": True, "events": 0, "queries": 1, "outcomes": {}}
    send({"segment": v1, "replay": {**marker, "started": now + YEAR_MS}}, now)
    # 2. 300 end markers with 4 kB replay ids: each would be kept.
    for i in range(300):
        long_id = f"{i:04d}" + "r" * 4096
        send({"segment": v1, "replay": {**marker, "id": long_id, "started": now}}, now)
    # 3. 20,000 failed-query rows a year ahead: each would open a window of its own.
    for i in range(20_000):
        failed = {"id": "r-evil", "outcome": "error", "reason": "x"}
        row = {"event_id": f"r-evil/{i}", "query_id": "q1", "segment": v1, "replay": failed}
        send({**row, "event_time": now + YEAR_MS + i * 2_000}, now)
    # 4. 500 failed-query rows of queries the evaluation set does not have: each a cell.
    for i in range(500):
        failed = {"id": "r-evil", "outcome": "error", "reason": "x"}
        row = {"event_id": f"r-evil/u{i}", "query_id": f"unknown-{i}", "replay": failed}
        send({**row, "segment": v1, "event_time": now}, now)
    # 5. One ranking event 290 s ahead (inside events.max_future), then 100 honest ones.
    send({"event_id": "ahead", "query_id": "q0", "ranking": ["best0"], "segment": v1,
          "event_time": now + 290_000}, now)  # fmt: skip
    for second in range(1, 101):
        at = now + second * 1000
        send({"event_id": f"honest-{second}", "query_id": f"q{second % 20}",
              "ranking": [f"best{second % 20}"], "segment": v1, "event_time": at}, at)  # fmt: skip
    producer.flush()
    producer.close()

    with monitor_thread(Monitor(load_config(config, environ=environ))) as monitor:
        wait_until(
            lambda: sum(counted(monitor, "rankmon_events_total").values()) >= 20_902,
            60,
            "every record to be counted",
        )
        outcomes = counted(monitor, "rankmon_events_total")
        open_windows, open_replays = monitor.windows.open_windows, len(monitor.windows.replay_ends)
        ended = monitor.windows.replay_ends.replays_in(0, 1 << 62, ())
    assert outcomes[("accepted", "")] == 101
    assert outcomes[("late", "")] == 0
    assert outcomes[("invalid", "too_far_in_future")] == 20_001
    assert outcomes[("invalid", "string_too_long")] == 300
    assert outcomes[("unknown_query", "")] == 500
    # Nothing of theirs is kept: no replay, no window a year ahead.
    assert (open_replays, ended) == (0, ())
    assert open_windows <= 52  # at most the 100 s of honest events' windows and the one ahead
    reasons = dead_letter_reasons(tansu.bootstrap_servers, f"{topic}.dlq")
    assert reasons == {"too_far_in_future": 20_001, "string_too_long": 300, "": 500}


GROUP_RULES = """
alerts:
  log: false
  rules:
    - {name: always-bad, measure: ndcg@10, below: 0.99, for: 1}
"""


def test_a_progress_record_claiming_the_future_does_not_stall_the_groups_decisions(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    kafka_rebalances: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A group of two shares a topic of two partitions; a writer of the windows topic sends a
    # progress record for both partitions stamped 2^62. Taken, it stood as their newest
    # record, so no window was ever whole: nothing decided until 32 waited, then each forced.
    topic = new_topic(2)
    config = write_service_config(tmp_path, tansu, topic, QRELS, GROUP_RULES)
    group = [Monitor(load_config(config, environ={})) for _ in range(2)]
    threads = Threads()
    caplog.set_level(logging.WARNING, logger="monitor.group.ledger")
    try:
        for monitor in group:
            threads.start(monitor)
        wait_for(
            lambda: (
                sorted(p for m in group for p in m.source.assignment) == [0, 1]
                and all(m.source.assignment for m in group)
                and any(m.group.role == DECIDES for m in group)
            ),
            60,
            "the group of two to share the partitions",
        )
        lie = {
            "record": "progress",
            "schema_version": 1,
            "partitions": [0, 1],
            "closed_through_ms": None,
            "quiet": False,
            "at_ms": 1 << 62,
            "shares": [],
        }
        producer = KafkaProducer(bootstrap_servers=tansu.bootstrap_servers)
        producer.send(f"{topic}.windows", key=b"progress/p0,1", value=orjson.dumps(lie))
        producer.flush()
        start = now_ms() // 10_000 * 10_000 - 100_000
        for window in range(7):  # six windows of rankings, then a closer per query
            for query in range(20):
                event = {
                    "event_id": f"e{window}-q{query}",
                    "query_id": f"q{query}",
                    "ranking": [f"good{query}", f"best{query}"],
                    "segment": {"model": "v1"},
                    "event_time": start + window * 10_000 + query + (5_000 if window == 6 else 0),
                }
                producer.send(topic, key=f"q{query}".encode(), value=orjson.dumps(event))
        producer.close()
        decider = next(m for m in group if m.group.role == DECIDES)
        wait_for(
            lambda: decider.group.decider is not None and decider.group.decider.decided >= 6,
            60,
            lambda: f"the decider to decide the 6 windows (decided {decided(decider)})",
        )
        ledger = decider.group.decider.ledger  # type: ignore[union-attr]
        firing = [a.rule.name for a in decider.alerts.active() if a.status.value == "firing"]
        refused = counted(decider, "rankmon_control_records_refused_total")
    finally:
        threads.stop_all()
    # Refused each time it is read: the decider's restore and its tail may both read it.
    times = ledger.refused
    assert times >= 1 and refused == {("windows", "progress_in_future"): times}
    dead = read_topic(tansu.bootstrap_servers, f"{topic}.dlq")
    assert [(dict(r.headers)["rankmon-outcome"], r.key) for r in dead] == [
        (b"windows", b"progress/p0,1")
    ] * times
    assert "always-bad" in firing
    forced = [r for r in caplog.records if "without every member's final word" in r.getMessage()]
    assert forced == []  # each window decided whole, by the members' honest progress


def decided(monitor: Monitor) -> int:
    decider = monitor.group.decider
    return 0 if decider is None else decider.decided


JUDGING = """
judging:
  enabled: true
  tojudge_topic: {topic}.tojudge
  judgments_topic: {topic}.judgments
  max_judgments: 1000
  sources_allowed: ["human:*", "llm:*"]
"""


def test_hostile_judgments_and_pairs_are_refused_and_the_judging_loop_goes_on(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(1)
    for suffix in (".tojudge", ".judgments"):
        tansu.create_topic(topic + suffix, 1)
    config = write_service_config(tmp_path, tansu, topic, QRELS, JUDGING.format(topic=topic))
    now = now_ms()
    producer = KafkaProducer(bootstrap_servers=tansu.bootstrap_servers, linger_ms=20)

    def judge(query: str, doc: str, grade: int, source: str, at: int) -> None:
        value = {"query_id": query, "doc_id": doc, "grade": grade, "source": source,
                 "judged_at": at}  # fmt: skip
        producer.send(f"{topic}.judgments", key=orjson.dumps([query, doc]),
                      value=orjson.dumps(value), timestamp_ms=now)  # fmt: skip

    # A person's newer grade, then an old one of theirs sent again.
    judge("q2", "extra", 3, "human:ann", now - 1_000)
    judge("q2", "extra", 1, "human:ann", now - 86_400_000)
    judge("q3", "extra", 3, "human:ann", now + YEAR_MS)  # judged a year ahead
    judge("q4", "extra", 3, "human", now)  # a source the allow-list does not name
    for i in range(1_100):  # a flood of distinct pairs, past judging.max_judgments
        judge("q5", f"spam{i}", 1, "llm:flood", now)
    # Five pairs stamped a year ahead on the to-judge topic: the hourly budget, spent for a year.
    for i in range(5):
        producer.send(f"{topic}.tojudge", key=orjson.dumps([f"q{i}", "x"]), value=b"{}",
                      timestamp_ms=now + YEAR_MS)  # fmt: skip
    producer.flush()

    with monitor_thread(Monitor(load_config(config, environ={}))) as monitor:
        # One honest window whose rankings each show an unjudged document, and its closer.
        start = now // 10_000 * 10_000 - 60_000
        for query in range(20):
            event = {
                "event_id": f"e{query}",
                "query_id": f"q{query}",
                "segment": {"model": "v1"},
                "ranking": [f"new{query}", f"best{query}"],
                "event_time": start + query,
            }
            producer.send(topic, key=f"q{query}".encode(), value=orjson.dumps(event))
        closer = {"event_id": "closer", "query_id": "q0", "ranking": ["best0"],
                  "segment": {"model": "v1"}, "event_time": start + 12_000}  # fmt: skip
        producer.send(topic, key=b"q0", value=orjson.dumps(closer))
        producer.flush()
        producer.close()
        asked: list[Any] = []

        def honest_pairs() -> bool:
            asked[:] = [r for r in read_topic(tansu.bootstrap_servers, f"{topic}.tojudge")
                        if r.timestamp < now + YEAR_MS]  # fmt: skip
            return len(asked) >= 20

        wait_until(honest_pairs, 30, "the honest window's pairs on the to-judge topic")
        judging = monitor.judging
        assert judging is not None
        kept, grade = judging.book.kept, judging.current().grades("q2").get("extra")
        judgments = counted(monitor, "rankmon_judgments_total")
        refused = counted(monitor, "rankmon_control_records_refused_total")
    assert sorted(orjson.loads(r.key)[1] for r in asked) == sorted(f"new{q}" for q in range(20))
    assert refused == {("tojudge", "too_far_in_future"): 5}
    assert grade == 3  # the newer grade stands
    assert kept == 1_000  # the book holds at most judging.max_judgments grades
    assert judgments[("accepted", "")] == 1_000
    expected = {"superseded": 1, "judged_in_future": 1, "source_not_allowed": 1,
                "too_many_judgments": 101}  # fmt: skip
    assert {reason: judgments[("refused", reason)] for reason in expected} == expected
    assert dead_letter_reasons(tansu.bootstrap_servers, f"{topic}.dlq") == {
        **expected,
        "too_far_in_future": 5,
    }


def test_a_ranker_answer_the_monitor_would_refuse_is_a_failed_query_of_its_replay(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    # Eleven queries: eight honest, one answered with 1 GiB, one dripped a byte at a time, one
    # with a document id past events.max_id_bytes. The window counts 8 queries and the 3
    # failures (replay_errors sees them), and nothing reaches the dead-letter topic.
    topic = new_topic(1)
    texts = {f"q{i}": f"text {{depth}} q{i}" for i in range(8)}
    texts |= {"q8": "huge q8", "q9": "drip q9", "q10": "long id q10"}
    qrels = {q: {f"best{q}": 3, f"good{q}": 1} for q in texts}
    config = write_service_config(tmp_path, tansu, topic, qrels)
    (tmp_path / "topics.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in texts.items()))
    rankings = {text: [f"best{q}", f"good{q}"] for q, text in texts.items()}
    with (
        HostileRanker(rankings) as ranker,
        monitor_thread(Monitor(load_config(config, environ={}))) as monitor,
    ):
        config.write_text(config.read_text() + f"""
replay:
  topics: topics.tsv
  depth: 10
  ranker: {{url: "{ranker.url}", timeout: 1s, retries: 0, max_response_bytes: 1048576}}
  segment: {{model: v1}}
""")  # fmt: skip
        report = replay_once(config)
        share = wait_for_the_share(tansu.bootstrap_servers, topic)
        outcomes = monitor.snapshot().outcomes
    assert report.reasons == {"too_large": 1, "timeout": 1, "id_too_long": 1}
    assert (share.summary.queries, share.summary.failed_queries) == (8, 3)
    assert outcomes.get("accepted") == 8 and outcomes.get("invalid") is None
    assert read_topic(tansu.bootstrap_servers, f"{topic}.dlq", timeout_s=2.0) == []
    # The placeholder in the query texts was sent as written.
    sent = {body["query"] for body in ranker.bodies}
    assert "text {depth} q0" in sent
