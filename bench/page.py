"""The page at `/`: its HTML size and render time at 100 segments x 12 kept windows, against
one segment (the baseline, measured in the same run).

    .venv/bin/python bench/page.py [--segments 100] [--windows 12] [--queries 300] [--rounds 7]

Windows of `--queries` queries and the headline measures (nDCG@10, MRR, MAP) go into an
`ExplainStore` per segment (`segments.max_values` caps them at 100 per key by default, and
`export.explain.max_segments` at 1,000 in all); a tenth of the segments have a firing alert.
Printed: bytes of HTML, the first render's time (it computes each kept window's standard
errors) and the median of the `--rounds` renders after it (the page reloads itself: those
are cached), for one segment and for all, and their ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from monitor.explain.alert_table import AlertView
from monitor.explain.api import ExplainApi
from monitor.explain.page import ExplainPages
from monitor.explain.store import ExplainStore
from monitor.scoring.evalset import EvaluationSet
from monitor.windows.summary import Segment, WindowSummary

MEASURES = ["ndcg@10:linear", "mrr", "map"]
T0 = 1_767_225_600_000


def summary(segment: Segment, start: int, queries: int, rng: random.Random) -> WindowSummary:
    per_query = {f"q{q}": {m: rng.random() for m in MEASURES} for q in range(queries)}
    means = {m: sum(v[m] for v in per_query.values()) / queries for m in MEASURES}
    sums = {m: means[m] * queries for m in MEASURES}
    squares = {m: sum(v[m] ** 2 for v in per_query.values()) for m in MEASURES}
    return WindowSummary(
        window="5m", start_ms=start, end_ms=start + 300_000, segment=segment,
        evaluation_set_version="e1", events=queries, queries=queries,
        evaluation_set_queries=queries, means=means, sums=sums, event_means=means,
        query_means=per_query, squares=squares,
    )  # fmt: skip


def pages(segments: int, windows: int, queries: int) -> ExplainPages:
    rng = random.Random(7)
    store = ExplainStore(MEASURES, keep=windows, segments=max(segments, 1))
    alerts = []
    for number in range(segments):
        segment = (("model", f"model-{number:03d}"),)
        for w in range(windows):
            store.add(summary(segment, T0 + w * 300_000, queries, rng))
        if number % 10 == 0:
            end = T0 + windows * 300_000
            alerts.append(
                AlertView(
                    "ndcg10-floor",
                    "critical",
                    "firing",
                    segment,
                    MEASURES[0],
                    "0.41 against 0.6",
                    (end - 300_000, end),
                    since_ms=end,
                    windows=2,
                    runbook_url="https://runbooks.example/ndcg",
                )
            )
    evaluation_set = EvaluationSet.from_judgments({f"q{q}": {"d": 1} for q in range(queries)})
    api = ExplainApi(store, None, lambda: evaluation_set, default_measure=MEASURES[0])
    return ExplainPages(
        api, headline=MEASURES, alerts=lambda: alerts, floors=lambda m, s: [("floor", 0.6)]
    )


def measure(rendered: ExplainPages, rounds: int) -> tuple[int, float, float]:
    """HTML bytes, the first render's seconds, the median of the next `rounds` renders."""
    times, size = [], 0
    for _ in range(rounds + 1):
        began = time.perf_counter()
        body = rendered.index({}, {}).body
        times.append(time.perf_counter() - began)
        size = len(body)
    return size, times[0], statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=100)
    parser.add_argument("--windows", type=int, default=12)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    one_size, one_first, one_s = measure(pages(1, args.windows, args.queries), args.rounds)
    all_size, all_first, all_s = measure(
        pages(args.segments, args.windows, args.queries), args.rounds
    )
    print(f"{args.windows} kept windows of {args.queries} queries per segment; render: first, "
          f"then the median of {args.rounds} more")  # fmt: skip
    print(f"  1 segment:    {one_size / 1024:8.1f} KiB  {one_first * 1000:7.2f} ms, "
          f"then {one_s * 1000:7.2f} ms")  # fmt: skip
    print(f"  {args.segments} segments: {all_size / 1024:8.1f} KiB  {all_first * 1000:7.2f} ms, "
          f"then {all_s * 1000:7.2f} ms  (x{all_size / one_size:.1f} size, "
          f"x{all_s / one_s:.1f} time)")  # fmt: skip


if __name__ == "__main__":
    main()
