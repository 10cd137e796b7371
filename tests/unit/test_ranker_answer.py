"""What the replay reads of a ranker's answer (`monitor.replay.ranker.Reply.answer`): the
ids, and what a judge reads of each document, held to `events.max_document_bytes`."""

from __future__ import annotations

import orjson

from monitor.declare import read_settings
from monitor.replay.connection import Response
from monitor.replay.ranker import RankerClient, Reply
from monitor.replay.settings import RankerSettings
from monitor.sections import ConfigSection


def answered(hits: list[dict[str, object]], *, max_document_bytes: int = 400) -> Reply:
    settings = read_settings(RankerSettings, ConfigSection({"url": "http://ranker/s"}, "r", {}))
    client = RankerClient(settings, 10, max_document_bytes=max_document_bytes)
    body = orjson.dumps({"hits": hits})
    return Reply(client, Response(200, {}, body), attempts=1, latency_s=0.01)


def test_each_documents_title_and_snippet_are_kept_whole_when_short() -> None:
    hits = [
        {"id": f"d{n}", "score": 3 - n, "title": f"Title {n}", "snippet": f"Snippet {n}"}
        for n in range(3)
    ]
    answer = answered(hits).answer()
    assert answer.ids == ("d0", "d1", "d2")
    assert answer.documents == {
        f"d{n}": {"title": f"Title {n}", "snippet": f"Snippet {n}"} for n in range(3)
    }


def test_a_long_snippet_is_cut_to_the_limit_and_what_is_not_text_is_left_out() -> None:
    hits: list[dict[str, object]] = [
        {"id": "short", "title": "Kept", "snippet": "whole"},
        {"id": "long", "title": "T" * 100, "snippet": "é" * 400},  # 800 bytes of snippet
        {"id": "numbers", "title": 7, "snippet": ""},  # no text: no fields at all
        {"id": "half", "title": None, "snippet": "only the snippet"},
    ]
    documents = answered(hits, max_document_bytes=400).answer().documents
    assert documents["short"] == {"title": "Kept", "snippet": "whole"}
    long = documents["long"]
    assert long["title"] == "T" * 100  # whole: a cut title misleads
    assert long["snippet"] == "é" * 150  # what is left of 400 bytes, whole characters
    assert len(orjson.dumps(long["title"] + long["snippet"])) - 2 <= 400
    assert "numbers" not in documents
    assert documents["half"] == {"snippet": "only the snippet"}
