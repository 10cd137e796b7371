"""Two `rankmon judge` workers of one group on the real broker, against a real chat-completions
server: they split the to-judge topic's partitions and never ask about the same pair; when one
stops, the other takes its partitions and grades what comes on them; the worker's own
/metrics counts what it did.

    to-judge topic: 4 partitions, pairs keyed ["q", "d"]
    workers A and B join the group        2 partitions each (rankmon_judge_partitions)
    40 pairs                              each asked once, A and B both graded some
    A stops; 12 more pairs                B holds all 4 partitions and grades the 12
"""

from __future__ import annotations

import dataclasses
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from kafka import KafkaProducer

from monitor.config.loader import Config, load_config
from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.judge.run import run_judge
from monitor.judge.worker import JudgeReport
from monitor.judging.pairs import pair_key
from tests.support.chat_server import ChatServer
from tests.support.realparts import write_service_config
from tests.support.recovery_support import read_topic, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.slow]

JUDGE = """
judging: {{enabled: true, tojudge_topic: {topic}.tojudge, judgments_topic: {topic}.judgments}}
judge: {{url: {url}, model: m, concurrency: 2, backoff: 10ms, group_id: judges-{topic}}}
"""


class Worker:
    """`rankmon judge` following the topic in a thread, until `stop()`."""

    def __init__(self, config: Config, metrics_port: int = 0) -> None:
        assert config.judge is not None
        self.settings = dataclasses.replace(config.judge, metrics_port=metrics_port)
        self.config = config
        self.report = JudgeReport()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        run_judge(self.settings, self.config.kafka, self.config.judging, {}, once=False,
                  stop=self._stop, report=self.report)  # fmt: skip

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive()


@pytest.fixture
def setup(
    tansu: EmbeddedBroker, new_topic: Callable[..., str], tmp_path: Path
) -> Iterator[tuple[Config, ChatServer]]:
    topic = new_topic(1)
    tansu.create_topic(f"{topic}.tojudge", 4)
    tansu.create_topic(f"{topic}.judgments", 1)
    with ChatServer() as chat:
        extra = JUDGE.format(topic=topic, url=chat.url)
        path = write_service_config(tmp_path, tansu, topic, {"q0": {"d": 1}}, extra)
        # Tansu holds a group join half the session timeout: a short one keeps the joins quick.
        text = path.read_text().replace("session_timeout_ms: 6000", "session_timeout_ms: 2000")
        path.write_text(text)
        yield load_config(path, environ={}), chat


def ask(config: Config, pairs: range) -> None:
    producer = KafkaProducer(bootstrap_servers=list(config.kafka.bootstrap_servers))
    for i in pairs:
        value = {
            "query_id": f"q{i}",
            "doc_id": f"d{i}",
            "priority": 0.1,
            "query_text": f"query {i}",
            "title": "T",
            "snippet": f"GRADE=2 text {i}",
        }
        key = pair_key(f"q{i}", f"d{i}")
        producer.send(config.judging.tojudge_topic, key=key, value=orjson.dumps(value))
    producer.flush()
    producer.close()


def judged(config: Config) -> list[tuple[str, str]]:
    records = read_topic(config.kafka.bootstrap_servers[0], config.judging.judgments_topic)
    values = [orjson.loads(record.value) for record in records]
    return [(j["query_id"], j["doc_id"]) for j in values]


def test_two_workers_of_a_group_split_the_pairs_and_one_takes_over_when_the_other_stops(
    setup: tuple[Config, ChatServer],
) -> None:
    config, chat = setup
    port = free_port()
    a, b = Worker(config, metrics_port=port), Worker(config)
    try:
        wait_until(lambda: a.report.partitions == b.report.partitions == 2, 60, "2 partitions each")
        ask(config, range(40))
        wait_until(lambda: len(judged(config)) >= 40, 60, "40 judgments")
        asked = chat.state["requests"]
        assert len(asked) == 40 and set(asked.values()) == {1}  # no pair asked twice
        graded_a, graded_b = a.report.outcomes["graded"], b.report.outcomes["graded"]
        assert graded_a + graded_b == 40 and graded_a > 0 and graded_b > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
        graded_line = next(
            line for line in metrics.splitlines()
            if line.startswith("rankmon_judge_pairs_total") and 'outcome="graded"' in line
        )  # fmt: skip
        assert float(graded_line.split()[-1]) == graded_a
        assert "rankmon_judge_partitions{" in metrics

        a.stop()
        wait_until(lambda: b.report.partitions == 4, 60, "B holding every partition")
        ask(config, range(40, 52))
        wait_until(lambda: len(judged(config)) >= 52, 60, "52 judgments")
        assert len(asked) == 52 and set(asked.values()) == {1}
        assert b.report.outcomes["graded"] == graded_b + 12
        assert sorted(judged(config)) == sorted((f"q{i}", f"d{i}") for i in range(52))
    finally:
        for worker in (a, b):
            worker.stop()
