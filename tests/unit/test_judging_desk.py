"""The judging page's work and who may do it: the audit's drawn queries come first, whole and in
draw order, then the unjudged pairs by priority; the desk's memory is bounded; a person is
known by the auth proxy's header or a token, never by nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.config.loader import load_config
from monitor.errors import ConfigError, InputError
from monitor.judging.desk import JudgingDesk, audit_draw
from monitor.judging.judgments import Judgment, JudgmentBook
from monitor.judging.people import People, read_tokens
from monitor.scoring.evalset import EvaluationSet

QUERIES = [f"q{i}" for i in range(40)]
DRAWN = sorted((q for q in QUERIES if audit_draw(q) < 0.25), key=audit_draw)


def book() -> JudgmentBook:
    base = EvaluationSet.from_judgments({q: {"known": 1} for q in QUERIES})
    return JudgmentBook(base, (0, 1, 2, 3))


def judged(b: JudgmentBook, pair: tuple[str, str], grade: int, source: str, at: int = 1) -> None:
    assert b.add(Judgment(*pair, grade, source, at)) in ("accepted", "audit")


def test_the_audit_comes_first_a_whole_query_at_a_time_in_draw_order() -> None:
    desk, b = JudgingDesk(0.25, 1000, 2048), book()
    for query in QUERIES:
        for rank, doc in enumerate(("a", "b"), start=1):
            desk.asked((query, doc), {"priority": 0.01 * rank, "rank": rank, "title": doc})
            judged(b, (query, doc), 2, "llm:m@p")
            desk.graded((query, doc), "llm:m@p")
    desk.asked(("q1", "open"), {"priority": 0.5, "rank": 3})
    desk.asked(("q2", "open"), {"priority": 0.9, "rank": 4})
    desk.refresh(b)
    view = desk.view()
    audit = [(p.query_id, p.doc_id) for p in view.pairs if p.audit]
    assert audit == [(q, doc) for q in DRAWN for doc in ("a", "b")]
    assert [(p.query_id, p.doc_id) for p in view.pairs[len(audit) :]] == [
        ("q2", "open"),
        ("q1", "open"),
    ]
    assert (view.audit_left, view.audit_queries, view.audit_queries_done) == (
        2 * len(DRAWN),
        len(DRAWN),
        0,
    )
    # a person grades one query whole, and half of another: one query done
    for doc, grade in (("a", 2), ("b", 1)):
        judged(b, (DRAWN[0], doc), grade, "human:ann", 2)
        desk.graded((DRAWN[0], doc), "human:ann")
    judged(b, (DRAWN[1], "a"), 0, "human:ann", 2)
    desk.graded((DRAWN[1], "a"), "human:ann")
    desk.refresh(b)
    view = desk.view()
    assert (view.audit_left, view.audit_queries_done) == (2 * len(DRAWN) - 3, 1)
    assert view.pairs[0].query_id == DRAWN[1] and view.pairs[0].doc_id == "b"
    assert view.graded_by == {"human:ann": 3}
    same, diff = 1, (0 + 1 + 2) / 3  # the model said 2 to the person's 2, 1 and 0
    n, agreed, mean = view.agreement["human:ann"]
    assert (n, agreed) == (3, same)
    assert mean == pytest.approx(diff)


def test_the_desk_keeps_the_most_useful_pairs_and_no_text_past_an_events_limits() -> None:
    desk, b = JudgingDesk(0.0, max_open=10, max_readable_bytes=100), book()
    for n in range(30):
        desk.asked((f"q{n}", "d"), {"priority": n / 100, "rank": 1, "snippet": "x" * 50})
    desk.asked(("q39", "huge"), {"priority": 1.0, "snippet": "y" * 10_000})
    desk.refresh(b)
    pairs = desk.view().pairs
    assert len(pairs) == 10
    assert [p.query_id for p in pairs][:3] == ["q39", "q29", "q28"]
    assert pairs[0].readable == {}  # past the limits: the pair, without its text
    assert pairs[1].readable == {"snippet": "x" * 50}


def test_a_pair_a_model_graded_outside_the_audit_leaves_the_peoples_work() -> None:
    undrawn = next(q for q in QUERIES if audit_draw(q) >= 0.25)
    desk, b = JudgingDesk(0.25, 100, 2048), book()
    desk.asked((undrawn, "d"), {"priority": 0.1})
    desk.asked((DRAWN[0], "d"), {"priority": 0.1})
    for query in (undrawn, DRAWN[0]):
        judged(b, (query, "d"), 3, "llm:m@p")
        desk.graded((query, "d"), "llm:m@p")
    desk.refresh(b)
    assert [(p.query_id, p.audit) for p in desk.view().pairs] == [(DRAWN[0], True)]


def test_the_draw_is_uniform_and_the_same_on_every_start() -> None:
    draws = [audit_draw(f"query-{n}") for n in range(20_000)]
    assert audit_draw("q1") == audit_draw("q1")
    share = sum(d < 0.2 for d in draws) / len(draws)
    assert abs(share - 0.2) < 4 * (0.2 * 0.8 / len(draws)) ** 0.5


def test_a_person_is_known_by_a_token_or_the_proxys_header_and_never_by_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "people.txt"
    path.write_text("# people\nann 0123456789abcdef0123\nbob fedcba9876543210fedc  # night shift\n")
    tokens = read_tokens(path)
    people = People("X-Forwarded-User", tokens)
    assert people.who({"authorization": "Bearer 0123456789abcdef0123"}) == "ann"
    assert people.who({"authorization": "Bearer wrong-token-0000000"}) is None
    assert people.who({"x-forwarded-user": "carol"}) == "carol"
    assert people.who({"x-forwarded-user": "two words"}) is None
    assert people.who({"x-forwarded-user": "x" * 65}) is None
    assert people.who({}) is None
    assert People("", tokens).who({"x-forwarded-user": "carol"}) is None  # header not trusted


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ann\n", "expected 'name token'"),
        ("ann short\n", "a token is 16 characters at least"),
        ("ann 0123456789abcdef\nbob 0123456789abcdef\n", "a token is given twice"),
    ],
)
def test_a_bad_token_file_names_its_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "people.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=problem) as raised:
        read_tokens(path)
    assert str(path) in str(raised.value)


def test_a_judging_page_that_would_take_anonymous_grades_is_refused_at_start(
    tmp_path: Path,
) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "rankmon.yaml").write_text(
        "kafka: {bootstrap_servers: ['127.0.0.1:1'], topic: events}\n"
        "evaluation_set: {path: qrels.txt}\n"
        "judging: {enabled: true, page: true, people_header: ''}\n"
    )
    with pytest.raises(ConfigError, match="no anonymous judgments") as raised:
        load_config(tmp_path / "rankmon.yaml", environ={})
    assert "judging.page" in str(raised.value)
