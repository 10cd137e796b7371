"""An LLM judge held to a human audit: does PPI++ keep its promise? Seeded simulation.

The population: (query, document) pairs at ranks 1..10 of served rankings, the document
relevant with a probability that falls with its rank; a human grade 0..3 and an LLM judge's
grade that runs higher than the human's (+0.5 on average) and follows a document-length
feature, with noise. The measure is linear in the grades: each pair's value is its gain
(the grade) discounted by its rank and scaled so that the mean over pairs is the mean over
queries of DCG@10 over the largest DCG@10 the scale allows. Its true value (human grades) is
computed exactly from the distributions.

Each simulation draws 2,000 model-labelled pairs and an audit of n pairs that have both
grades (n = 50, 100, 300), independently, as `monitor.stats.judges.ppi_mean` assumes, and
reports per n over the simulations:

- the coverage of PPI++'s 95 % interval (target 95 +- 1.5 %), beside 2 standard errors of
  the simulated rate;
- its mean width against the human-only interval of the same n (narrower is the point);
- the bias of the uncorrected measure (the model's grades alone) and how often its naive
  interval covers the truth.

Then the `judge` alert rule (`monitor.alerting.conditions.judge`, its defaults) on the audit
as the judging loop reads it: `--audit-per-window` new audit pairs a window, each model
judge read over its newest 200 (`judging.audit_pairs`), checked at every window:

- on a judge that does not change, for `--days` days of 288 windows (5 minutes): how often
  a check fires (beside its significance, 0.001), and how many days see a false alert;
- after the judge changes (its bias +0.5 grade higher, or its noise doubled), how many
  windows (and audit pairs) until the rule fires, over `--changes` changes.

And the monitor's corrected headline (`monitor.judging.correction.correct_window`, scored by
the real `Scorer`): windows of 400 queries of a replayed set, each query's top 10 holding 4
documents only the judge graded (the rest judged by people), people auditing whole queries
at random (`--audited` of them); over `--windows` windows, how often the 95 % interval covers
the window's nDCG@10 under the people's grades, its width, and the uncorrected bias.

And a held discovery released (`AlertEngine`, the example config's drop rule with
`unjudged: hold`): a replayed set of 400 queries, people-judged, 12 baseline windows; then
a release puts 4 documents nobody judged into the top 10 of 60 % of its queries. In the
regression they are junk (grade 0); the demo's LLM judge grades each one grade up. The
window before their judgments is held (its condensed list shows no drop); the next is
scored with the judge's grades and audited by people on whole queries (`--audit-share`, the
demo's 20 %). Over `--replays` replays: how often the drop pages, with the hold released on
the model's grades (as before) and on the audit-corrected value; and on replays where the
new documents are as good as those whose places they take (a change under the rule's 5 %
gate), how often it pages falsely.

And the judge worker's speed (`rankmon judge`'s `JudgeWorker` with its `ChatClient`): pairs
a second through a local chat-completions server that answers each request after a set
latency (`--latency`, 50 ms), at concurrency 1, 4 and 16, beside that endpoint's own limit
(concurrency / latency): what the worker's own work costs.

Run it with the checkout's `.venv` on the installed package:

    .venv/bin/python bench/judges.py [--simulations 1000] [--seed 20261203] [--days 200]
"""

from __future__ import annotations

import argparse
import math
import socket
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import numpy.typing as npt
import orjson

from monitor.alerting import AlertEngine, Status
from monitor.alerting.conditions import Judge
from monitor.alerting.state import Evidence
from monitor.config.alerts import parse_alerting_config
from monitor.judge.chat import ChatClient
from monitor.judge.prompt import DEFAULT_TEMPLATE, Prompt
from monitor.judge.worker import Document, HourlyBudget, JudgeReport, JudgeWorker
from monitor.judging.correction import JudgeViews, correct_window
from monitor.scoring.catalog import monitor_keys
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.stats.judges import classical_mean, judge_reading, ppi_mean, weighted_kappa
from monitor.windows.summary import WindowSummary

RANKS = 10
MODEL_PAIRS = 2_000
AUDITS = (50, 100, 300)
GRADES = (0, 1, 2, 3)
RELEVANT_GRADES = np.array([0.5, 0.3, 0.2])  # grades 1, 2, 3 of a relevant document
JUDGE_BIAS, JUDGE_LENGTH, JUDGE_NOISE = 0.5, 0.4, 0.8
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

DISCOUNTS = np.log2(np.arange(RANKS) + 2.0)
WEIGHTS = RANKS / (DISCOUNTS * float(np.sum(3.0 / DISCOUNTS)))  # mean over pairs = sDCG@10


def relevant_share(ranks: Ints) -> Floats:
    """P(relevant) at each 0-based rank: 0.6 at the top, falling 15 % a rank."""
    return 0.6 * 0.85 ** ranks.astype(np.float64)


def true_value() -> float:
    """The measure under human grades, exactly: the mean over ranks of weight x E[grade]."""
    ranks = np.arange(RANKS)
    expected_grade = relevant_share(ranks) * float(RELEVANT_GRADES @ np.array([1.0, 2.0, 3.0]))
    return float(np.mean(WEIGHTS * expected_grade))


def draw(
    rng: np.random.Generator, pairs: int, bias: float = JUDGE_BIAS, noise: float = JUDGE_NOISE
) -> tuple[Ints, Ints, Ints]:
    """`pairs` pairs: their ranks, human grades and the judge's grades."""
    ranks = rng.integers(0, RANKS, pairs)
    relevant = rng.random(pairs) < relevant_share(ranks)
    grades = np.where(relevant, rng.choice([1, 2, 3], pairs, p=RELEVANT_GRADES), 0)
    length = rng.standard_normal(pairs)
    judged = grades + bias + JUDGE_LENGTH * length + noise * rng.standard_normal(pairs)
    model = np.clip(np.rint(judged), 0, 3).astype(np.int64)
    return ranks, grades.astype(np.int64), model


def values(ranks: Ints, grades: Ints) -> Floats:
    """Each pair's value: its gain, discounted by its rank and scaled (module docstring)."""
    return np.asarray(WEIGHTS[ranks] * grades, dtype=np.float64)


def rate(hits: int, total: int) -> str:
    share = hits / total
    return f"{share:6.1%} (+-{2 * math.sqrt(share * (1 - share) / total):.1%})"


SPAN = 200  # judging.audit_pairs
WINDOWS_A_DAY = 288
RULE = Judge()  # its defaults


def fires(human: Ints, model: Ints) -> bool:
    """Whether the judge rule fires on the audit read so far."""
    reading = judge_reading("llm:m@p", human.tolist(), model.tolist(), GRADES, SPAN)
    return RULE.on_judges([reading]).evidence is Evidence.BAD


def stable_days(rng: np.random.Generator, days: int, per_window: int) -> None:
    """False alerts of the judge rule on a judge that does not change."""
    checks = fired = bad_days = 0
    warm = 2 * SPAN
    for _ in range(days):
        _, human, model = draw(rng, warm + WINDOWS_A_DAY * per_window)
        day_fired = 0
        for window in range(1, WINDOWS_A_DAY + 1):
            end = warm + window * per_window
            checks += 1
            day_fired += fires(human[:end], model[:end])
        fired += day_fired
        bad_days += day_fired > 0
    share = fired / checks
    bound = RULE.significance + 2 * math.sqrt(RULE.significance * (1 - RULE.significance) / checks)
    print(
        f"stable judge, {days} days of {WINDOWS_A_DAY} windows, {per_window} audit pairs a "
        f"window: a check fires {share:.5f} (bound: significance {RULE.significance:g} + 2 "
        f"standard errors = {bound:.5f}); days with a false alert: {rate(bad_days, days)}"
    )


def delays(rng: np.random.Generator, changes: int, per_window: int) -> None:
    """Windows from a judge change until the judge rule fires."""
    warm = 2 * SPAN
    for name, bias, noise in (
        ("bias +0.5 grade", JUDGE_BIAS + 0.5, JUDGE_NOISE),
        ("noise doubled", JUDGE_BIAS, 2 * JUDGE_NOISE),
    ):
        waited: list[int] = []
        missed = 0
        horizon = 2 * SPAN // per_window + 10
        for _ in range(changes):
            _, human_before, model_before = draw(rng, warm)
            _, human_after, model_after = draw(rng, horizon * per_window, bias, noise)
            human = np.concatenate([human_before, human_after])
            model = np.concatenate([model_before, model_after])
            for window in range(1, horizon + 1):
                end = warm + window * per_window
                if fires(human[:end], model[:end]):
                    waited.append(window)
                    break
            else:
                missed += 1
        if not waited:
            print(f"judge change ({name}): never fired within {horizon} windows")
            continue
        print(
            f"judge change ({name}): fired after a median of {np.median(waited):.0f} windows "
            f"({np.median(waited) * per_window:.0f} audit pairs), 90 % within "
            f"{np.percentile(waited, 90):.0f}; not within {horizon} windows: "
            f"{rate(missed, changes)}"
        )


WINDOW_QUERIES, MODEL_DOCS = 400, 4
KEYS = monitor_keys((10,), ("linear",))
NDCG = [str(k) for k in KEYS].index("ndcg@10:linear")


def window_coverage(rng: np.random.Generator, windows: int, audited: int) -> None:
    """The corrected headline's interval against the window's value under people's grades."""
    covered, widths, biases, misses = 0, [], [], 0
    queries = [f"q{i}" for i in range(WINDOW_QUERIES)]
    rankings = [[f"{q}-d{r}" for r in range(RANKS)] for q in queries]
    for _ in range(windows):
        people: dict[str, dict[str, int]] = {}
        model: dict[str, dict[str, int]] = {}
        graded: set[tuple[str, str]] = set()
        for query, ranking in zip(queries, rankings, strict=True):
            ranks = np.arange(RANKS)
            relevant = rng.random(RANKS) < relevant_share(ranks)
            human = np.where(relevant, rng.choice([1, 2, 3], RANKS, p=RELEVANT_GRADES), 0)
            length = rng.standard_normal(RANKS)
            judged = human + JUDGE_BIAS + JUDGE_LENGTH * length
            judged = judged + JUDGE_NOISE * rng.standard_normal(RANKS)
            by_model = np.clip(np.rint(judged), 0, 3)
            unknown = rng.choice(RANKS, MODEL_DOCS, replace=False)  # the judge's documents
            people[query] = {doc: int(g) for doc, g in zip(ranking, human, strict=True)}
            model[query] = dict(people[query])
            for rank in unknown:
                model[query][ranking[rank]] = int(by_model[rank])
                graded.add((query, ranking[rank]))
        audit = set(rng.choice(WINDOW_QUERIES, audited, replace=False).tolist())
        audited_pairs = frozenset(p for p in graded if int(p[0][1:]) in audit)
        people_seen = {  # what the monitor knows of the people's grades
            q: {d: g for d, g in docs.items() if (q, d) not in graded or (q, d) in audited_pairs}
            for q, docs in people.items()
        }
        views = JudgeViews(
            EvaluationSet(model, None),
            EvaluationSet(people_seen, None),
            frozenset(graded),
            audited_pairs,
        )
        score = _scoring({id(s): Scorer(s, KEYS) for s in (views.model, views.people)})

        summary = WindowSummary(
            window="5m", start_ms=0, end_ms=300_000, segment=(), evaluation_set_version="",
            events=WINDOW_QUERIES, queries=WINDOW_QUERIES,
            evaluation_set_queries=WINDOW_QUERIES, means={}, sums={}, event_means={},
            query_means={query: {} for query in queries},
        )  # fmt: skip
        ranking_of = dict(zip(queries, rankings, strict=True)).get
        correction = correct_window(summary, ranking_of, views, score, RANKS)
        interval = correction.interval
        if interval is None:
            misses += 1
            continue
        full = Scorer(EvaluationSet(people, None), KEYS).score(queries, rankings)[:, NDCG]
        raw = Scorer(views.model, KEYS).score(queries, rankings)[:, NDCG]
        truth = float(full.mean())
        covered += interval.covers(truth)
        widths.append(interval.width)
        biases.append(float(raw.mean()) - truth)
    done = windows - misses
    print(
        f"corrected headline, {done} windows of {WINDOW_QUERIES} queries, {audited} audited "
        f"in full: 95 % interval covers {rate(covered, done)} (target 95 +- 1.5 %), width "
        f"{np.mean(widths):.4f}; uncorrected bias {np.mean(biases):+.4f}"
    )


def _scoring(
    scorers: dict[int, Scorer],
) -> Callable[[EvaluationSet, Sequence[str], Sequence[Sequence[str]]], list[float]]:
    def score(
        evaluation_set: EvaluationSet, queries: Sequence[str], rankings: Sequence[Sequence[str]]
    ) -> list[float]:
        if not queries:
            return []
        return [float(v) for v in scorers[id(evaluation_set)].score(queries, rankings)[:, NDCG]]

    return score


DISCOVERY_QUERIES, NEW_DOCS, AFFECTED = 400, 2, 0.5
BASELINE_WINDOWS = 12
HOLD_RULE = {
    "name": "ndcg10-drop",
    "measure": "ndcg@10",
    "drop": {"relative": 0.05, "baseline_windows": BASELINE_WINDOWS, "significance": 0.01,
             "min_queries": 30, "unjudged": "hold", "max_hold": 12},
}  # fmt: skip


def _people_grades(rng: np.random.Generator, size: int) -> Ints:
    ranks = np.arange(size)
    relevant = rng.random(size) < relevant_share(ranks % RANKS)
    grades = np.where(relevant, rng.choice([1, 2, 3], size, p=RELEVANT_GRADES), 0)
    return np.asarray(grades, dtype=np.int64)


def _window_of(index: int, queries: Sequence[str], scores: Floats) -> WindowSummary:
    """A window of one replay of the set: each query's measures (rows of `KEYS`)."""
    names = [str(k) for k in KEYS]
    query_means = {
        q: {name: float(v) for name, v in zip(names, row, strict=True)}
        for q, row in zip(queries, scores.tolist(), strict=True)
    }
    means = {name: float(np.mean(scores[:, i])) for i, name in enumerate(names)}
    return WindowSummary(
        window="5m", start_ms=index * 300_000, end_ms=(index + 1) * 300_000, segment=(),
        evaluation_set_version="e1", events=len(queries), queries=len(queries),
        evaluation_set_queries=len(queries), means=means,
        sums={name: mean * len(queries) for name, mean in means.items()},
        event_means=means, query_means=query_means,
    )  # fmt: skip


def held_replay(
    rng: np.random.Generator, *, regression: bool, audit_share: float, audited: bool
) -> tuple[bool, float, float]:
    """One replay: whether the drop paged, and the true and model-read relative change."""
    queries = [f"q{i}" for i in range(DISCOVERY_QUERIES)]
    base = [[f"{q}-d{r}" for r in range(RANKS)] for q in queries]
    people = {
        q: dict(zip(ranking, _people_grades(rng, RANKS).tolist(), strict=True))
        for q, ranking in zip(queries, base, strict=True)
    }
    candidate, new_people, new_model = [], {}, {}
    for q, ranking in zip(queries, base, strict=True):
        if rng.random() >= AFFECTED:
            candidate.append(ranking)
            continue
        fresh = [f"{q}-n{j}" for j in range(NEW_DOCS)]
        slots = sorted(rng.choice(RANKS, NEW_DOCS, replace=False).tolist())
        merged = list(ranking)
        for slot, doc in zip(slots, fresh, strict=True):
            merged.insert(slot, doc)
        candidate.append(merged)
        grades = np.zeros(NEW_DOCS, dtype=np.int64)
        if not regression:  # as good as the documents whose places they take
            grades = np.asarray([people[q][ranking[s]] for s in slots], dtype=np.int64)
        for doc, grade in zip(fresh, grades.tolist(), strict=True):
            new_people[(q, doc)] = grade
            new_model[(q, doc)] = min(3, grade + 1)  # the demo's judge: one grade up
    audit = set(rng.choice(DISCOVERY_QUERIES, int(audit_share * DISCOVERY_QUERIES), replace=False))
    audited_pairs = frozenset(p for p in new_model if int(p[0][1:]) in audit)
    model_view = {q: dict(g) for q, g in people.items()}
    people_view = {q: dict(g) for q, g in people.items()}
    truth = {q: dict(g) for q, g in people.items()}
    for (q, doc), grade in new_model.items():
        model_view[q][doc] = grade
        truth[q][doc] = new_people[(q, doc)]
        if (q, doc) in audited_pairs:
            people_view[q][doc] = new_people[(q, doc)]
    views = JudgeViews(
        EvaluationSet(model_view, None), EvaluationSet(people_view, None),
        frozenset(new_model), audited_pairs,
    )  # fmt: skip
    before = Scorer(EvaluationSet(people, None), KEYS)
    judged = Scorer(views.model, KEYS)
    windows = [_window_of(i, queries, before.score(queries, base)) for i in range(BASELINE_WINDOWS)]
    windows.append(_window_of(BASELINE_WINDOWS, queries, before.score(queries, candidate)))
    lifted = _window_of(BASELINE_WINDOWS + 1, queries, judged.score(queries, candidate))
    windows.append(lifted)
    config = parse_alerting_config(
        {"rules": [HOLD_RULE], "log": False}, cutoffs=[10], gains=["linear"], segment_keys=[],
        window="5m", judging=True,
    )  # fmt: skip
    engine = AlertEngine(config, start_ms=0)
    if audited:
        score = _scoring({id(s): Scorer(s, KEYS) for s in (views.model, views.people)})
        correction = correct_window(lifted, dict(zip(queries, candidate, strict=True)).get,
                                    views, score, RANKS)  # fmt: skip
        interval = correction.interval
        values: dict[str, float | str] = {
            "measure": "ndcg@10:linear",
            "estimate": math.nan if interval is None else interval.estimate,
            "lower": math.nan if interval is None else interval.lower,
            "upper": math.nan if interval is None else interval.upper,
            "audited": float(correction.audited),
        }
        engine.corrected = lambda segment, start_ms: values if start_ms == lifted.start_ms else None
    paged = False
    for summary in windows:
        engine.observe([summary], summary.end_ms)
        alert = engine.find("ndcg10-drop", ())
        paged = paged or (alert is not None and alert.status is Status.FIRING)
    start = windows[0].means["ndcg@10:linear"]
    true_after = float(
        Scorer(EvaluationSet(truth, None), KEYS).score(queries, candidate)[:, NDCG].mean()
    )
    return paged, true_after / start - 1.0, lifted.means["ndcg@10:linear"] / start - 1.0


def held_discoveries(rng: np.random.Generator, replays: int, audit_share: float) -> None:
    """The held discovery's release, on the model's grades and on the audit."""
    print(
        f"held discovery, {replays} replays of {DISCOVERY_QUERIES} queries, {NEW_DOCS} unjudged "
        f"documents in {AFFECTED:.0%} of their top 10, a +1-grade judge, "
        f"{audit_share:.0%} of queries audited:"
    )
    for regression in (True, False):
        pages = {False: 0, True: 0}
        changes: list[tuple[float, float]] = []
        for _ in range(replays):
            for audited in (False, True):
                paged, true_change, read = held_replay(
                    rng, regression=regression, audit_share=audit_share, audited=audited
                )
                pages[audited] += paged
                changes.append((true_change, read))
        true_change = float(np.mean([c[0] for c in changes]))
        read = float(np.mean([c[1] for c in changes]))
        what = "a regression" if regression else "new documents as good as those they displace"
        print(
            f"  {what}: true change {true_change:+.1%}, read on the judge's grades {read:+.1%}; "
            f"pages with the hold released on the model's grades {rate(pages[False], replays)}, "
            f"on the audit-corrected value {rate(pages[True], replays)}"
        )


class _SlowChat(BaseHTTPRequestHandler):
    """A chat-completions endpoint answering `Grade: 2` after `latency` seconds."""

    latency = 0.05
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: without this, Nagle holds the second back
        # for the client's delayed ACK (40 ms), the server's cost, not the worker's
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        time.sleep(self.latency)
        body = orjson.dumps({
            "choices": [{"message": {"role": "assistant", "content": "Fits.\nGrade: 2"}}],
            "usage": {"total_tokens": 120},
        })  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def worker_speed(pairs: int, latency: float) -> None:
    """Pairs a second through the worker against an endpoint of a set latency."""
    _SlowChat.latency = latency
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowChat)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    documents = {f"d{i}": Document("Title", f"text of document {i} " * 40) for i in range(pairs)}
    print(f"judge worker, {pairs} pairs, endpoint latency {latency * 1000:.0f} ms:")
    for concurrency in (1, 4, 16):
        chat = ChatClient(url, model="m", key=None, temperature=0.0, max_tokens=50,
                          timeout_s=10.0, retries=0, backoff_s=0.1)  # fmt: skip
        worker = JudgeWorker(
            chat, Prompt.of(DEFAULT_TEMPLATE), source="llm:m@p", model="m", temperature=0.0,
            queries={"q": "what is it"}, documents=documents, grades=GRADES,
            concurrency=concurrency, budget=HourlyBudget(0, 0),
        )  # fmt: skip
        report = JudgeReport()
        todo = [{"query_id": "q", "doc_id": d} for d in documents]
        started = time.perf_counter()
        worker.judge(todo, lambda key, value: None, report, stop=threading.Event(), wait=True)
        elapsed = time.perf_counter() - started
        chat.close()
        assert report.outcomes["graded"] == pairs, report.line()
        limit = concurrency / latency
        print(
            f"  concurrency {concurrency:2d}: {pairs / elapsed:7.1f} pairs/s, the endpoint's "
            f"limit {limit:.1f}: {pairs / elapsed / limit:.2f} of it"
        )
    server.shutdown()
    server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--simulations", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--days", type=int, default=200)
    parser.add_argument("--changes", type=int, default=500)
    parser.add_argument("--audit-per-window", type=int, default=20)
    parser.add_argument("--windows", type=int, default=1_000)
    parser.add_argument("--audited", type=int, default=40)
    parser.add_argument("--only-alert", action="store_true", help="skip the PPI++ parts")
    parser.add_argument("--replays", type=int, default=400)
    parser.add_argument("--audit-share", type=float, default=0.2)
    parser.add_argument("--only-held", action="store_true", help="the held discovery alone")
    parser.add_argument("--pairs", type=int, default=400, help="pairs through the worker")
    parser.add_argument("--latency", type=float, default=0.05, help="the endpoint's, seconds")
    parser.add_argument("--only-worker", action="store_true", help="the worker's speed alone")
    args = parser.parse_args()
    if args.only_worker:
        worker_speed(args.pairs, args.latency)
        return
    if args.only_held:
        held_discoveries(np.random.default_rng(args.seed), args.replays, args.audit_share)
        return
    rng = np.random.default_rng(args.seed)
    if not args.only_alert:
        coverage(rng, args.simulations)
        window_coverage(rng, args.windows, args.audited)
    stable_days(rng, args.days, args.audit_per_window)
    delays(rng, args.changes, args.audit_per_window)
    held_discoveries(rng, args.replays, args.audit_share)
    worker_speed(args.pairs, args.latency)


def coverage(rng: np.random.Generator, simulations: int) -> None:
    """PPI++'s interval against the human-only and the uncorrected ones."""
    truth = true_value()
    _, big_human, big_model = draw(rng, 200_000)
    kappa = weighted_kappa(big_human.tolist(), big_model.tolist(), GRADES)
    print(
        f"{simulations} simulations per audit size; {MODEL_PAIRS} model-labelled pairs; "
        f"true value {truth:.4f}; judge: mean grade {big_model.mean():.2f} against the "
        f"humans' {big_human.mean():.2f}, weighted kappa {kappa:.3f}"
    )
    print("target: PPI++ coverage 95 +- 1.5 %; rates with 2 standard errors of the simulation")
    for n in AUDITS:
        covered = human_covered = naive_covered = 0
        widths, human_widths, tunings, biases = [], [], [], []
        for _ in range(simulations):
            model_ranks, _, model_only = draw(rng, MODEL_PAIRS)
            audit_ranks, audit_human, audit_model = draw(rng, n)
            human = values(audit_ranks, audit_human)
            corrected = ppi_mean(
                human, values(audit_ranks, audit_model), values(model_ranks, model_only)
            )
            alone = classical_mean(human)
            naive = classical_mean(values(model_ranks, model_only))
            covered += corrected.covers(truth)
            human_covered += alone.covers(truth)
            naive_covered += naive.covers(truth)
            widths.append(corrected.width)
            human_widths.append(alone.width)
            tunings.append(corrected.tuning)
            biases.append(naive.estimate - truth)
        sims = simulations
        width, human_width = float(np.mean(widths)), float(np.mean(human_widths))
        print(
            f"n={n:3d}: PPI++ coverage {rate(covered, sims)}, width {width:.4f} "
            f"({width / human_width:.2f}x the human-only {human_width:.4f}, which covers "
            f"{human_covered / sims:.1%}), lam {np.mean(tunings):.2f}; uncorrected bias "
            f"{np.mean(biases):+.4f}, its interval covers {naive_covered / sims:.1%}"
        )


if __name__ == "__main__":
    main()
