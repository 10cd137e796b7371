"""The judging page for people at /judge, in Debian's headless Chromium, on a monitor whose
judging loop asked for pairs and whose model judge graded half of them: a person signs in with
a token, gets the audit pairs first (whole queries drawn at random, in draw order), grades by
click and by key, undoes one and grades it again; the grades land on the judgments topic as
`human:<name>` and become the next evaluation-set version, with the undone pair's new grade.
Posts without a person, without the page's token or from another site are refused."""

from __future__ import annotations

import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from monitor.judging.desk import audit_draw
from tests.support.browser import Browser
from tests.support.fakes import FakeProducer
from tests.support.judging_monitor import QUERIES, Stream, discovered, known

pytestmark = pytest.mark.slow

AUDIT_RATE = 0.2
MODEL = "llm:m@p1"
CARD = "!document.querySelector('#card').hidden"
STATUS = "document.querySelector('#status').textContent"


def told(i: int) -> dict[str, dict[str, str]]:
    return {f"new{i}": {"title": f"<b>New</b> {i}", "snippet": f"what new{i} says",
                        "url": f"https://docs.example/{i}"}}  # fmt: skip


@pytest.fixture
def stream(tmp_path: Path) -> Iterator[tuple[Stream, str]]:
    token = secrets.token_hex(16)
    (tmp_path / "people.txt").write_text(f"# who judges\nalice {token}\n")
    (tmp_path / "topics.tsv").write_text("".join(f"q{i}\tquery {i}\n" for i in range(QUERIES)))
    running = Stream(
        tmp_path,
        FakeProducer(),
        judging=f"page: true, people_header: '', people_tokens: {tmp_path / 'people.txt'}, "
        f"audit_rate: {AUDIT_RATE}",
        evaluation_set=f"topics: {tmp_path / 'topics.tsv'}",
    )
    for _ in range(3):
        running.window(known)
    running.window(discovered, told)  # asks for new0 ... new39
    # The model grades the first half: a drawn query's pair is audit work, the rest leave.
    running.judge(
        [{"query_id": f"q{i}", "doc_id": f"new{i}", "grade": 2, "source": MODEL}
         for i in range(QUERIES // 2)]
    )  # fmt: skip
    running.window(discovered, told)
    running.monitor.start()
    yield running, token
    running.monitor.close()


def human_records(stream: Stream) -> list[tuple[str, str, int, str]]:
    sent = [orjson.loads(v) for _, v, _ in stream.producer.sent.get("events.judgments", [])]
    return [
        (j["query_id"], j["doc_id"], j["grade"], j["source"])
        for j in sent
        if str(j["source"]).startswith("human")
    ]


def post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_person_grades_the_audit_first_by_click_and_key_and_undoes_one(
    stream: tuple[Stream, str], tmp_path: Path
) -> None:
    running, token = stream
    base = running.monitor.metrics_url.removesuffix("/metrics")
    drawn = sorted((i for i in range(QUERIES // 2) if audit_draw(f"q{i}") < AUDIT_RATE),
                   key=lambda i: audit_draw(f"q{i}"))  # fmt: skip
    assert len(drawn) >= 2  # the audit work: drawn queries the model graded
    version = running.monitor.snapshot().evaluation_set_version

    with Browser(tmp_path / "profile") as browser:
        browser.open(f"{base}/judge#token={token}")
        browser.wait_for(CARD)
        assert browser.evaluate("location.hash") == ""  # the token left the address bar
        first, second = (f"q{drawn[0]} / new{drawn[0]}", f"q{drawn[1]} / new{drawn[1]}")
        assert browser.evaluate("document.querySelector('#ids').textContent") == first
        assert browser.evaluate("document.querySelector('#kind').textContent") == "audit"
        # What the events said of the document, as text: its markup is not the page's.
        assert browser.evaluate("document.querySelector('#title').textContent") == (
            f"<b>New</b> {drawn[0]}"
        )
        assert browser.evaluate("document.querySelector('#title b')") is None
        assert browser.evaluate("document.querySelector('#query').textContent") == (
            f"query {drawn[0]}"
        )
        assert browser.evaluate("document.querySelector('#link').href") == (
            f"https://docs.example/{drawn[0]}"
        )
        progress = browser.evaluate("document.querySelector('#progress').textContent")
        assert f"Audit: {len(drawn)} pairs left, 0 of {len(drawn)} queries done." in progress
        assert f"Asked: {QUERIES // 2} pairs left" in progress

        browser.click("#grades button[data-grade='2']")  # by click
        browser.wait_for(f"document.querySelector('#ids').textContent === {second!r}")
        browser.press("3")  # by key
        browser.wait_for(
            f"document.querySelector('#status').textContent === 'Graded new{drawn[1]} 3.'"
        )
        browser.press("u")  # undo: the pair again
        browser.wait_for(f"document.querySelector('#ids').textContent === {second!r}")
        browser.press("1")
        browser.wait_for(
            f"document.querySelector('#status').textContent === 'Graded new{drawn[1]} 1.'"
        )

        assert human_records(running) == [
            (f"q{drawn[0]}", f"new{drawn[0]}", 2, "human:alice"),
            (f"q{drawn[1]}", f"new{drawn[1]}", 3, "human:alice"),
            (f"q{drawn[1]}", f"new{drawn[1]}", 1, "human:alice"),
        ]
        running.window(discovered, told)  # the judgments are read back: a new version
        book = running.monitor.judging.book  # type: ignore[union-attr]
        assert running.monitor.snapshot().evaluation_set_version != version
        assert book.in_effect[(f"q{drawn[0]}", f"new{drawn[0]}")].grade == 2
        assert book.in_effect[(f"q{drawn[1]}", f"new{drawn[1]}")].grade == 1  # the undo's
        assert book.in_effect[(f"q{drawn[1]}", f"new{drawn[1]}")].source == "human:alice"

        browser.open(f"{base}/judge")  # signed in for the session: the token is kept
        browser.wait_for(CARD)
        agreement = browser.wait_for("document.querySelector('#agreement').textContent")
        assert agreement.startswith("You and the model agree on 1 of 2 audited pairs")
        assert browser.console == []


def test_posts_without_a_person_the_pages_token_or_from_another_site_are_refused(
    stream: tuple[Stream, str],
) -> None:
    running, token = stream
    base = running.monitor.metrics_url.removesuffix("/metrics")
    with urllib.request.urlopen(f"{base}/judge", timeout=10) as answer:
        cookie = answer.headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in answer.headers["Set-Cookie"]
        assert "script-src 'nonce-" in answer.headers["Content-Security-Policy"]
    csrf = cookie.split("=", 1)[1]
    body = orjson.dumps({"query_id": "q25", "doc_id": "new25", "grade": 3})
    page = {"Content-Type": "application/json", "Cookie": cookie, "X-Rankmon-CSRF": csrf}
    signed = {"Authorization": f"Bearer {token}"}
    url = f"{base}/judge/grade"
    assert post(url, body, page) == 401  # nobody known
    assert post(url, body, {**page, "Authorization": "Bearer " + "x" * 32}) == 401
    assert post(url, body, {**signed, "Content-Type": "application/json"}) == 403  # no token
    assert post(url, body, {**page, **signed, "X-Rankmon-CSRF": "0" * 32}) == 403  # not its
    assert post(url, body, {**page, **signed, "Origin": "https://evil.example"}) == 403
    assert post(url, body, {**page, **signed, "Content-Type": "text/plain"}) == 415
    bad = orjson.dumps({"query_id": "nope", "doc_id": "d", "grade": 3})
    assert post(url, bad, {**page, **signed}) == 422  # not a query of the set
    assert post(url, orjson.dumps({"query_id": "q1", "doc_id": "d", "grade": 9}),
                {**page, **signed}) == 422  # fmt: skip
    assert human_records(running) == []
    with urllib.request.urlopen(
        urllib.request.Request(f"{base}/judge/queue", headers=signed), timeout=10
    ) as answer:
        assert orjson.loads(answer.read())["person"] == "alice"
    assert post(url, body, {**page, **signed}) == 200
    assert human_records(running) == [("q25", "new25", 3, "human:alice")]
