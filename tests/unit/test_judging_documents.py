"""What a judge reads of a pair: the events' `documents` (title, snippet, url) and the query's
text travel with each to-judge record, within their limits, so that a judge (the LLM worker,
a person at /judge) needs nothing else; the replayer takes them from the ranker's answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from monitor.ingest.events import Rejection, decode_event
from monitor.ingest.schema import Reason
from monitor.judging.documents import DocumentShelf, document_url
from monitor.replay.events import query_event
from monitor.replay.ranker import Answer, fit_document
from monitor.replay.topics import Query
from tests.support.fakes import FakeProducer
from tests.support.judging_monitor import QUERIES, Stream, discovered, known


def told(i: int) -> dict[str, dict[str, str]]:
    return {
        f"new{i}": {"title": f"New {i}", "snippet": f"what new{i} says", "url": f"https://x/{i}"},
        f"best{i}": {"title": f"Best {i}"},
    }


@pytest.fixture
def stream(tmp_path: Path) -> Iterator[Stream]:
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"q{i}\tquery number {i}\n" for i in range(QUERIES)))
    running = Stream(
        tmp_path,
        FakeProducer(),
        judging="document_url: 'https://docs.example/view/{doc_id}'",
        evaluation_set=f"topics: {topics}",
    )
    yield running
    running.monitor.close()


def test_each_to_judge_record_carries_the_query_text_and_what_the_events_said_of_the_document(
    stream: Stream,
) -> None:
    for _ in range(3):
        stream.window(known)
    stream.window(discovered, told)
    asked = {str(p["query_id"]): p for p in stream.asked()}
    assert len(asked) == QUERIES
    assert asked["q7"] == {
        **asked["q7"],
        "doc_id": "new7",
        "query_text": "query number 7",
        "title": "New 7",
        "snippet": "what new7 says",
        "url": "https://x/7",
        "document_url": "https://docs.example/view/new7",
    }


def test_a_document_the_events_said_nothing_of_is_asked_with_the_query_text_and_link_alone(
    stream: Stream,
) -> None:
    for _ in range(3):
        stream.window(known)
    stream.window(discovered)
    record = stream.asked()[0]
    assert {"title", "snippet", "url"}.isdisjoint(record)
    assert record["query_text"] == f"query number {str(record['query_id'])[1:]}"
    assert record["document_url"] == f"https://docs.example/view/{record['doc_id']}"


def test_an_event_saying_too_much_of_a_document_is_refused_with_the_limit_named() -> None:
    value = {"event_id": "e", "query_id": "q", "ranking": ["d1", "d2"],
             "documents": {"d1": {"title": "t" * 1000, "snippet": "s" * 1049}}}  # fmt: skip
    result = decode_event(orjson.dumps(value), 0, now_ms=0, max_document_bytes=2048)
    assert isinstance(result, Rejection) and result.reason is Reason.STRING_TOO_LONG
    assert "events.max_document_bytes (2048)" in result.detail
    value["documents"] = {"d1": {"title": "t" * 1000, "snippet": "s" * 1048, "body": "b" * 9999}}
    kept = decode_event(orjson.dumps(value), 0, now_ms=0, max_document_bytes=2048)
    assert not isinstance(kept, Rejection)
    assert kept.documents == {"d1": (("title", "t" * 1000), ("snippet", "s" * 1048))}


def test_the_shelf_forgets_the_least_recently_seen_documents_past_its_bytes() -> None:
    shelf = DocumentShelf(max_bytes=4 * 700)
    for n in range(10):
        shelf.keep("q", {f"d{n}": (("snippet", "x" * 150),)})
        assert shelf.bytes <= shelf.max_bytes
    assert shelf.get("q", "d0") == {}
    assert shelf.get("q", "d9") == {"snippet": "x" * 150}
    assert len(shelf) == 4 and shelf.evicted == 6


def test_a_document_link_cannot_be_bent_by_its_id() -> None:
    link = document_url("https://docs.example/view/{doc_id}", "../admin?x=1#y")
    assert link == "https://docs.example/view/..%2Fadmin%3Fx%3D1%23y"


def test_the_replayer_keeps_the_title_and_link_whole_and_cuts_the_snippet_to_the_limit() -> None:
    fields = [("url", "https://x/1"), ("snippet", "é" * 40), ("title", "T" * 10)]
    fitted = fit_document(fields, max_bytes=41)
    assert fitted == (("title", "T" * 10), ("snippet", "é" * 10), ("url", "https://x/1"))
    # a link that cannot fit whole is left out, never cut
    assert fit_document([("url", "https://" + "x" * 60)], max_bytes=41) == ()


def test_a_replayed_query_event_says_what_the_ranker_said_of_each_document() -> None:
    answer = Answer("ranked", ("d1", "d2"), documents={"d1": {"title": "One"}})
    _, value = query_event("r1", Query("q1", "text"), answer, {}, 1_767_225_600_000)
    event = orjson.loads(value)
    assert event["documents"] == {"d1": {"title": "One"}}
    decoded = decode_event(value, 1_767_225_600_000, now_ms=1_767_225_600_000)
    assert not isinstance(decoded, Rejection)
    assert decoded.documents == {"d1": (("title", "One"),)}
