"""`rankmon judge` on the real broker, beside the real service, against a real HTTP server
speaking the chat-completions protocol: the pairs the judging loop asks for are graded and
written with their provenance, the monitor makes a new evaluation-set version of them, and a
second run asks nothing twice.

    tumbling 10s, lateness 1s, tick 1s                   (as test_judging_end_to_end)
    windows 0-3   the judged documents, best first        the baseline
    window 4      a new document nobody judged first       its 30 pairs on the to-judge topic
    rankmon judge --once                                   30 grades of 3 (the first request
                                                           answered 429, Retry-After 1)
    the monitor's next version has the new documents judged; rankmon judge --once again: 0
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from monitor.cli import main
from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.judge.prompt import DEFAULT_TEMPLATE, Prompt
from monitor.service import Monitor
from tests.end_to_end.test_judging_end_to_end import EXTRA, QRELS, QUERIES, Run
from tests.support.chat_server import ChatServer
from tests.support.judging_monitor import discovered, known
from tests.support.realparts import monitor_thread, write_service_config
from tests.support.recovery_support import read_topic, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.slow]

JUDGE = """
judge:
  url: {url}
  model: test-model
  key_env: JUDGE_KEY
  documents: {documents}
  concurrency: 4
  backoff: 10ms
"""


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer(busy=1) as server:
        yield server


@pytest.fixture
def setup(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    chat: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Run, Path]]:
    topic = new_topic(1)
    for suffix in (".tojudge", ".judgments"):
        tansu.create_topic(topic + suffix, 1)
    documents = tmp_path / "documents.jsonl"
    documents.write_bytes(
        b"".join(
            orjson.dumps({"doc_id": f"new{i}", "title": "New", "text": f"GRADE=3 answer {i}"})
            + b"\n"
            for i in range(QUERIES)
        )
    )
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"q{i}\tquery number {i}\n" for i in range(QUERIES)))
    extra = EXTRA.format(topic=topic) + JUDGE.format(url=chat.url, documents=documents)
    config = write_service_config(tmp_path, tansu, topic, QRELS, extra)
    text = config.read_text()
    config.write_text(
        text.replace("evaluation_set: {path: ", f"evaluation_set: {{topics: {topics}, path: ")
    )
    monkeypatch.setenv("JUDGE_KEY", "sk-test")
    environ = {"JUDGE_KEY": "sk-test"}
    with monitor_thread(Monitor(load_config(config, environ=environ))) as monitor:
        yield Run(monitor, tansu, topic), config


def test_the_judge_grades_what_the_loop_asks_with_provenance_once_and_the_set_follows(
    setup: tuple[Run, Path], chat: ChatServer, tansu: EmbeddedBroker
) -> None:
    run, config = setup
    bootstrap = tansu.bootstrap_servers
    for _ in range(4):
        run.window(known)
    version = run.monitor.snapshot().evaluation_set_version
    run.window(discovered)
    wait_until(
        lambda: len(read_topic(bootstrap, f"{run.topic}.tojudge")) >= QUERIES, 10, "the pairs"
    )
    assert main(["judge", "--once", "--config", str(config)]) == 0
    judgments = [orjson.loads(r.value) for r in read_topic(bootstrap, f"{run.topic}.judgments")]
    prompt = Prompt.of(DEFAULT_TEMPLATE).hash
    assert sorted((j["query_id"], j["doc_id"]) for j in judgments) == sorted(
        (f"q{i}", f"new{i}") for i in range(QUERIES)
    )
    assert {j["grade"] for j in judgments} == {3}
    assert {j["source"] for j in judgments} == {f"llm:test-model@{prompt}"}
    assert {(j["model"], j["prompt"], j["temperature"]) for j in judgments} == {
        ("test-model", prompt, 0.0)
    }
    first = chat.state["bodies"][0]["messages"][-1]["content"]
    assert "Query: query number" in first and "GRADE=3 answer" in first
    assert chat.requests == QUERIES + 1  # one 429, waited out
    assert chat.state["auth"][0] == "Bearer sk-test"
    wait_until(
        lambda: run.monitor.snapshot().evaluation_set_version != version, 10, "the new version"
    )
    assert main(["judge", "--once", "--config", str(config)]) == 0
    assert chat.requests == QUERIES + 1  # a restart asks nothing twice
    assert len(read_topic(bootstrap, f"{run.topic}.judgments")) == QUERIES
