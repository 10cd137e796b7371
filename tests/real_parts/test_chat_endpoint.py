"""The judge worker against a real HTTP server speaking the chat-completions protocol: 429s
with Retry-After waited out, timeouts and refusals as outcomes, grades with provenance."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import orjson
import pytest

from monitor.judge.chat import ChatAnswer, ChatClient, ChatFailure
from monitor.judge.prompt import DEFAULT_TEMPLATE, Prompt
from monitor.judge.worker import Document, HourlyBudget, JudgeReport, JudgeWorker
from tests.support.chat_server import ChatServer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(busy=1) as chat:
        yield chat


def client(url: str, waits: list[float], *, timeout_s: float = 5.0, retries: int = 2) -> ChatClient:
    return ChatClient(
        url, model="test-model", key="sk-test", temperature=0.0, max_tokens=50,
        timeout_s=timeout_s, retries=retries, backoff_s=0.01, sleep=waits.append,
    )  # fmt: skip


def ask(chat: ChatClient, text: str) -> ChatAnswer | ChatFailure:
    try:
        return chat.ask(Prompt.of(DEFAULT_TEMPLATE).messages({"query": "q", "text": text}))
    finally:
        chat.close()


def test_a_429_is_retried_after_what_its_retry_after_says_with_the_key_as_a_bearer_token(
    server: ChatServer,
) -> None:
    waits: list[float] = []
    answer = ask(client(server.url, waits), "GRADE=2")
    assert isinstance(answer, ChatAnswer)
    assert answer.text.endswith("Grade: 2") and answer.tokens == 100 and answer.attempts == 2
    assert waits == [1.0]
    assert server.state["auth"] == ["Bearer sk-test"] * 2
    assert server.state["bodies"][0]["model"] == "test-model"


def test_an_answer_slower_than_the_timeout_is_a_timeout_after_the_retries(
    server: ChatServer,
) -> None:
    server.state["busy"] = 0
    waits: list[float] = []
    answer = ask(client(server.url, waits, timeout_s=0.3, retries=1), "SLOW=1 GRADE=1")
    assert answer == ChatFailure("timeout", 2)
    assert waits == [0.01]


def test_an_answer_dripped_a_byte_at_a_time_times_out_within_one_attempts_timeout(
    server: ChatServer,
) -> None:
    # Each read comes well within the timeout (a byte every 20 ms), the whole would take
    # over 4 s: a socket's own timeout bounds one read and never fired.
    server.state["busy"] = 0
    started = time.monotonic()
    answer = ask(client(server.url, [], timeout_s=0.5, retries=0), "DRIP=0.02 GRADE=1")
    assert answer == ChatFailure("timeout", 1)
    assert time.monotonic() - started < 2.0


def test_a_server_that_stays_busy_fails_the_pair_with_its_status() -> None:
    with ChatServer(busy=10) as busy:
        waits: list[float] = []
        answer = ask(client(busy.url, waits, retries=2), "GRADE=1")
    assert isinstance(answer, ChatFailure) and answer.reason == "http_429"
    assert waits == [1.0, 1.0]


def test_the_worker_sends_grades_with_provenance_and_counts_what_is_no_grade(
    server: ChatServer,
) -> None:
    server.state["busy"] = 0
    documents = {
        "good": Document("A title", "GRADE=3 the exact answer"),
        "coy": Document("", "REFUSE"),
        "vague": Document("", "BABBLE"),
    }
    prompt = Prompt.of(DEFAULT_TEMPLATE)
    chat = client(server.url, [])
    worker = JudgeWorker(
        chat, prompt, source="llm:test-model@p", model="test-model",
        temperature=0.0, queries={"q1": "what is it"}, documents=documents, grades=(0, 1, 2, 3),
        concurrency=2, budget=HourlyBudget(0, 0), now_ms=lambda: 1_767_225_600_000,
    )  # fmt: skip
    pairs = [{"query_id": "q1", "doc_id": d} for d in ("good", "coy", "vague", "gone")]
    pairs.append({"query_id": "q9", "doc_id": "good"})
    sent: list[tuple[bytes, bytes]] = []
    report = JudgeReport()
    worker.judge(pairs, lambda k, v: sent.append((k, v)), report, stop=threading.Event(),
                 wait=False)  # fmt: skip
    chat.close()
    assert dict(report.outcomes) == {
        "graded": 1, "refused": 1, "unparsable": 1, "unknown_document": 1, "unknown_query": 1
    }  # fmt: skip
    assert (report.requests, report.tokens) == (3, 300)
    [(key, value)] = sent
    assert orjson.loads(key) == ["q1", "good"]
    judgment = orjson.loads(value)
    assert judgment == {
        "query_id": "q1", "doc_id": "good", "grade": 3, "source": "llm:test-model@p",
        "judged_at": 1_767_225_600_000, "model": "test-model", "prompt": prompt.hash,
        "temperature": 0.0, "reason": "The passage speaks to the query.",
    }  # fmt: skip
    assert worker.graded == {("q1", "good")}
