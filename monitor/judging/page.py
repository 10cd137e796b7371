"""The judging page for people: `GET /judge`, `GET /judge/queue`, `POST /judge/grade`.

`/judge` is a page with no data of its own; its script asks `/judge/queue` for the work
(`monitor.judging.desk`: the audit first, then the pairs asked for, highest priority first)
and shows one pair at a time: the query's text, the document's title, snippet and link, and a
button per grade (keys `0`-`3`, `s` skip, `u` undo), with the person's progress and their
agreement with the model judges on the pairs both graded. A model's grade is never shown
before the person grades (no anchoring).

A grade is a `POST /judge/grade` of `{"query_id", "doc_id", "grade"}`, written to the
judgments topic as `{"source": "human:<name>", "judged_at": now, ...}`, keyed as the pair;
the judging loop reads it back and makes a new evaluation-set version, as with any judge.
While Kafka does not answer, a post is answered 503 and its grade kept, sent with the next.
Undo shows the last pair again: its new grade replaces the old one (the same source graded
the pair later). A post is refused unless:

- the person is known (`monitor.judging.people`): 401;
- it is no cross-site request: the `X-Rankmon-CSRF` header equals the `rankmon_csrf` cookie
  the page set (`SameSite=Strict`, `HttpOnly`; the page carries the same random value), and
  an `Origin`, if sent, is the page's own: 403;
- its body is JSON (`Content-Type: application/json`, which no cross-site form can send):
  415; a query of the evaluation set, ids within `events.max_id_bytes`, a grade of
  `judging.grades`: 422.

Everything a page shows is set as text (never as HTML), links only when http(s), under a
Content-Security-Policy that runs the page's own script alone.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from http.cookies import CookieError, SimpleCookie
from typing import Any, Final

import orjson

from monitor.export.http import PostRoute, Response, Route
from monitor.judging.desk import DeskView, JudgingDesk
from monitor.judging.pairs import pair_key
from monitor.judging.people import People
from monitor.kafka.bootstrap import KafkaUnavailableError
from monitor.kafka.producer import RecordSink
from monitor.limits import longer_than

__all__ = ["CSRF_COOKIE", "CSRF_HEADER", "QUEUE_PAIRS", "JudgingPage"]

CSRF_COOKIE: Final = "rankmon_csrf"
CSRF_HEADER: Final = "x-rankmon-csrf"
QUEUE_PAIRS: Final = 50  # pairs one queue answer holds
MAX_POSTED: Final = 10_000  # pairs remembered as posted by this instance, until read back
GRADE_NAMES: Final = {0: "irrelevant", 1: "related", 2: "highly relevant", 3: "perfectly relevant"}


class JudgingPage:
    """The page's three routes (module docstring)."""

    def __init__(
        self,
        desk: JudgingDesk,
        people: People,
        producer: RecordSink,
        topic: str,
        *,
        grades: Callable[[], Collection[int]],
        known_query: Callable[[str], bool],
        max_id_bytes: int,
        now_ms: Callable[[], int],
    ) -> None:
        """`people`: who sends a request (`monitor.judging.people.People`); `grades()` and
        `known_query(q)`: what a grade may be and which queries are the evaluation set's."""
        self.desk = desk
        self.people = people
        self._producer = producer
        self._topic = topic
        self._grades = grades
        self._known_query = known_query
        self._max_id_bytes = max_id_bytes
        self._now_ms = now_ms
        self._posted: OrderedDict[tuple[str, str], str] = OrderedDict()  # pair -> source
        self._lock = threading.Lock()

    def routes(self) -> dict[str, Route]:
        return {"/judge": self.page, "/judge/queue": self.queue}

    def posts(self) -> dict[str, PostRoute]:
        return {"/judge/grade": self.grade}

    # -- routes ---------------------------------------------------------------------------

    def page(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        csrf = secrets.token_hex(16)
        nonce = secrets.token_urlsafe(16)
        grades = sorted(self._grades())
        html = _PAGE.replace("__NONCE__", nonce).replace("__CSRF__", csrf)
        html = html.replace("__GRADES__", json.dumps([[g, GRADE_NAMES.get(g, "")] for g in grades]))
        return Response(
            "200 OK",
            "text/html; charset=utf-8",
            html.encode(),
            {
                "Set-Cookie": f"{CSRF_COOKIE}={csrf}; Path=/judge; SameSite=Strict; HttpOnly",
                "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer",
                "X-Frame-Options": "DENY",
                "Content-Security-Policy": (
                    f"default-src 'none'; script-src 'nonce-{nonce}'; "
                    f"style-src 'nonce-{nonce}'; connect-src 'self'; base-uri 'none'; "
                    "form-action 'none'; frame-ancestors 'none'"
                ),
            },
        )

    def queue(self, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
        person = self.people.who(headers)
        if person is None:
            return _json("401 Unauthorized", {"error": f"sign in with {self.people.ways}"})
        source = f"human:{person}"
        view = self.desk.view()
        with self._lock:
            posted = set(self._posted)
        pairs = [p for p in view.pairs if (p.query_id, p.doc_id) not in posted]
        return _json("200 OK", _queue(person, source, view, pairs[:QUEUE_PAIRS], len(posted)))

    def grade(self, body: bytes, headers: Mapping[str, str]) -> Response:
        person = self.people.who(headers)
        if person is None:
            return _json("401 Unauthorized", {"error": f"sign in with {self.people.ways}"})
        refused = _cross_site(headers)
        if refused is not None:
            return _json("403 Forbidden", {"error": refused})
        if not headers.get("content-type", "").startswith("application/json"):
            return _json("415 Unsupported Media Type", {"error": "send application/json"})
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return _json("422 Unprocessable Content", {"error": "the body is no JSON"})
        problem = self._problem(value)
        if problem is not None:
            return _json("422 Unprocessable Content", {"error": problem})
        key = (value["query_id"], value["doc_id"])
        source = f"human:{person}"
        judgment = {
            "query_id": key[0],
            "doc_id": key[1],
            "grade": value["grade"],
            "source": source,
            "judged_at": self._now_ms(),
        }
        self._producer.send(self._topic, pair_key(*key), orjson.dumps(judgment), [])
        try:
            self._producer.flush()
        except KafkaUnavailableError as error:
            return _json(
                "503 Service Unavailable",
                {"error": f"the grade is not written yet ({error}): it is kept, and sent "
                 "with the next one once Kafka answers"},
            )  # fmt: skip
        with self._lock:
            self._posted[key] = source
            self._posted.move_to_end(key)
            while len(self._posted) > MAX_POSTED:
                self._posted.popitem(last=False)
        return _json("200 OK", {"written": judgment})

    def _problem(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return "expected a JSON object"
        query, doc, grade = value.get("query_id"), value.get("doc_id"), value.get("grade")
        if not (isinstance(query, str) and isinstance(doc, str) and query and doc):
            return "query_id and doc_id must be non-empty strings"
        if longer_than(query, self._max_id_bytes) or longer_than(doc, self._max_id_bytes):
            return f"an id is longer than events.max_id_bytes ({self._max_id_bytes})"
        if not self._known_query(query):
            return "not a query of the evaluation set"
        grades = self._grades()
        if type(grade) is not int or grade not in grades:
            return f"grade must be one of {', '.join(map(str, sorted(grades)))}"
        return None


def _cross_site(headers: Mapping[str, str]) -> str | None:
    """Why a post is no request of the page itself (None: it is)."""
    try:
        cookie = SimpleCookie(headers.get("cookie", ""))
    except CookieError:
        cookie = SimpleCookie()
    morsel = cookie.get(CSRF_COOKIE)
    sent = headers.get(CSRF_HEADER, "")
    if morsel is None or len(sent) < 32 or not secrets.compare_digest(morsel.value, sent):
        return "the page's token is missing or stale: reload /judge"
    origin = headers.get("origin")
    if origin is not None and origin.split("://", 1)[-1] != headers.get("host", ""):
        return "a post from another site"
    return None


def _queue(
    person: str, source: str, view: DeskView, pairs: list[Any], posted: int
) -> dict[str, Any]:
    agreement = view.agreement.get(source)
    return {
        "person": person,
        "pairs": [p.to_json() for p in pairs],
        "progress": {
            "audit_left": view.audit_left,
            "audit_queries": view.audit_queries,
            "audit_queries_done": view.audit_queries_done,
            "open_left": view.open_left,
            "graded_by_you": view.graded_by.get(source, 0),
            "posted_here": posted,
        },
        "agreement": None
        if agreement is None
        else {"pairs": agreement[0], "same": agreement[1], "model_minus_you": agreement[2]},
    }


def _json(status: str, value: Mapping[str, Any]) -> Response:
    return Response(status, "application/json", orjson.dumps(value), {"Cache-Control": "no-store"})


_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rankmon: judge</title>
<style nonce="__NONCE__">
body { font: 16px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 52rem; padding: 1rem;
       color: #1d1d1f; }
header { display: flex; justify-content: space-between; align-items: baseline; gap: 1rem; }
#progress, #agreement, #who { color: #555; font-size: .9rem; }
#card { border: 1px solid #ccc; border-radius: .5rem; padding: 1rem; margin: 1rem 0; }
#query { font-size: 1.3rem; margin: 0 0 .25rem; }
#title { font-size: 1.1rem; font-weight: 600; margin: .75rem 0 .25rem; }
#snippet { white-space: pre-wrap; margin: 0; }
.tag { font-size: .8rem; background: #fde68a; border-radius: .25rem; padding: 0 .3rem; }
.ids { color: #777; font-size: .8rem; }
#grades { display: flex; flex-wrap: wrap; gap: .5rem; }
button { font: inherit; padding: .5rem .9rem; border-radius: .4rem; border: 1px solid #888;
         background: #f5f5f7; cursor: pointer; }
button:focus-visible { outline: 3px solid #2563eb; }
#status { min-height: 1.5rem; color: #555; }
#status.error { color: #b91c1c; }
</style></head>
<body data-csrf="__CSRF__">
<header><h1>Judge</h1><span id="who"></span></header>
<p id="progress">Loading the work...</p>
<p id="agreement"></p>
<section id="card" hidden aria-live="polite">
  <p class="ids"><span id="kind" class="tag"></span> <span id="ids"></span></p>
  <h2 id="query"></h2>
  <p id="title"></p>
  <p id="snippet"></p>
  <p><a id="link" target="_blank" rel="noopener noreferrer" hidden>open the document</a></p>
</section>
<div id="grades"></div>
<p><button id="skip" type="button">Skip (s)</button>
   <button id="undo" type="button" disabled>Undo (u)</button></p>
<p id="status" role="status"></p>
<script nonce="__NONCE__">
"use strict";
const GRADES = __GRADES__;
const csrf = document.body.dataset.csrf;
const hash = new URLSearchParams(location.hash.slice(1));
if (hash.get("token")) {
  sessionStorage.setItem("rankmon-token", hash.get("token"));
  history.replaceState(null, "", location.pathname);
}
const token = sessionStorage.getItem("rankmon-token");
const auth = token ? {"Authorization": "Bearer " + token} : {};
let pairs = [], current = null, last = null, busy = false;
const skipped = new Set();
const $ = (id) => document.getElementById(id);
const key = (p) => JSON.stringify([p.query_id, p.doc_id]);
function say(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}
function safeLink(url) { return /^https?:\\/\\//i.test(url || "") ? url : null; }
function show() {
  current = pairs.find((p) => !skipped.has(key(p))) || null;
  $("card").hidden = current === null;
  for (const b of $("grades").children) b.disabled = current === null;
  $("skip").disabled = current === null;
  if (current === null) { say("Nothing left to judge now. Thank you."); return; }
  $("kind").textContent = current.audit ? "audit" : "asked";
  $("ids").textContent = current.query_id + " / " + current.doc_id;
  $("query").textContent = current.query_text || current.query_id;
  $("title").textContent = current.title || current.doc_id;
  $("snippet").textContent = current.snippet || "";
  const link = safeLink(current.document_url) || safeLink(current.url);
  $("link").hidden = link === null;
  if (link) $("link").href = link; else $("link").removeAttribute("href");
}
async function load() {
  const answer = await fetch("/judge/queue", {headers: auth, cache: "no-store"});
  const body = await answer.json();
  if (!answer.ok) {
    say(body.error || answer.statusText, true);
    $("progress").textContent = "";
    return;
  }
  $("who").textContent = "judging as " + body.person;
  const p = body.progress;
  $("progress").textContent = "Audit: " + p.audit_left + " pairs left, " + p.audit_queries_done +
    " of " + p.audit_queries + " queries done. Asked: " + p.open_left + " pairs left. You graded " +
    (p.graded_by_you + p.posted_here) + ".";
  const a = body.agreement;
  $("agreement").textContent = a ? "You and the model agree on " + a.same + " of " +
    a.pairs + " audited pairs; the model grades " + a.model_minus_you.toFixed(2) +
    " above you on average." : "";
  pairs = body.pairs;
  show();
}
async function grade(value) {
  if (current === null || busy) return;
  busy = true;
  const pair = current;
  try {
    const answer = await fetch("/judge/grade", {
      method: "POST",
      headers: Object.assign({"Content-Type": "application/json", "X-Rankmon-CSRF": csrf}, auth),
      body: JSON.stringify({query_id: pair.query_id, doc_id: pair.doc_id, grade: value}),
    });
    const body = await answer.json();
    if (!answer.ok) { say(body.error || answer.statusText, true); return; }
    last = pair;
    $("undo").disabled = false;
    pairs = pairs.filter((p) => key(p) !== key(pair));
    say("Graded " + pair.doc_id + " " + value + ".");
    if (pairs.length < 5) await load(); else show();
  } finally { busy = false; }
}
function skip() {
  if (current === null) return;
  skipped.add(key(current));
  say("Skipped " + current.doc_id + ".");
  show();
}
function undo() {
  if (last === null) return;
  pairs = [last].concat(pairs.filter((p) => key(p) !== key(last)));
  skipped.delete(key(last));
  say("Grade " + last.doc_id + " again: the new grade replaces the old.");
  last = null;
  $("undo").disabled = true;
  show();
}
for (const [value, name] of GRADES) {
  const b = document.createElement("button");
  b.type = "button";
  b.dataset.grade = String(value);
  b.textContent = value + (name ? " " + name : "");
  b.addEventListener("click", () => grade(value));
  $("grades").appendChild(b);
}
$("skip").addEventListener("click", skip);
$("undo").addEventListener("click", undo);
document.addEventListener("keydown", (e) => {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const g = GRADES.find(([value]) => String(value) === e.key);
  if (g) { e.preventDefault(); grade(g[0]); }
  else if (e.key === "s") { e.preventDefault(); skip(); }
  else if (e.key === "u") { e.preventDefault(); undo(); }
});
load().catch((error) => say("Cannot load the work: " + error, true));
</script>
</body></html>
"""
