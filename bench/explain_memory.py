"""Memory of the explanations: what one kept window of one segment costs, and one sampled
ranking, measured with tracemalloc on the classes the service uses.

    .venv/bin/python bench/explain_memory.py
    .venv/bin/python bench/explain_memory.py --queries 1000 --measures 17

A window of `--queries` queries x `--measures` measures goes into an `ExplainStore` (the
float64 matrix and the query ids); its summary's nested dictionaries, which the store does
not keep, are measured too for comparison. Rankings of `--depth` document ids (the deepest
cutoff) go into `RankingSamples`, one per query and pane. Printed: bytes per kept window and
segment, per sampled ranking, and the total at the defaults (`keep_windows` 12,
`max_rankings` 50,000) for the configured numbers of segments.
"""

from __future__ import annotations

import argparse
import gc
import random
import tracemalloc
from collections.abc import Callable

from monitor.explain.store import ExplainStore
from monitor.windows.samples import RankingSamples
from monitor.windows.summary import WindowSummary


def summary(start_ms: int, queries: int, measures: list[str], rng: random.Random) -> WindowSummary:
    query_means = {f"query-{q:06d}": {m: rng.random() for m in measures} for q in range(queries)}
    means = {m: 0.5 for m in measures}
    return WindowSummary(
        window="5m", start_ms=start_ms, end_ms=start_ms + 300_000, segment=(("model", "v1"),),
        evaluation_set_version="e1", events=queries, queries=queries,
        evaluation_set_queries=queries, means=means, sums=means, event_means=means,
        query_means=query_means, squares=means,
    )  # fmt: skip


def allocated(build: Callable[[], object]) -> tuple[int, object]:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--measures", type=int, default=17)
    parser.add_argument("--windows", type=int, default=12)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--segments", type=int, default=4)
    args = parser.parse_args()
    rng = random.Random(1)
    measures = [f"m{j}@10" for j in range(args.measures)]
    summaries = [summary(w * 300_000, args.queries, measures, rng) for w in range(args.windows)]
    nested, _ = allocated(lambda: summary(0, args.queries, measures, random.Random(2)))
    store = ExplainStore(measures, keep=args.windows)

    def fill() -> ExplainStore:
        for s in summaries:
            store.add(s)
        return store

    stored, _ = allocated(fill)
    per_window = stored / args.windows
    ranking = [f"doc-{rng.randrange(10**9):09d}" for _ in range(args.depth)]
    samples = RankingSamples(300_000, args.depth, 10**9)

    def sample() -> RankingSamples:
        for q in range(args.queries):
            for w in range(args.windows):
                key = samples.key((("model", "v1"),), f"query-{q:06d}", w * 300_000)
                if key is not None:
                    samples.keep(key, ranking)
        return samples

    sampled, _ = allocated(sample)
    per_ranking = sampled / (args.queries * args.windows)
    print(
        f"one kept window of one segment ({args.queries} queries x {args.measures} measures): "
        f"{per_window / 1024:.1f} KiB (its summary's nested dicts, not kept: "
        f"{nested / 1024:.1f} KiB)"
    )
    print(f"one sampled ranking of {args.depth} document ids: {per_ranking:.0f} bytes")
    total_windows = per_window * args.windows * args.segments
    total_rankings = per_ranking * args.queries * args.windows * args.segments
    print(
        f"{args.segments} segments x {args.windows} windows: "
        f"{total_windows / 2**20:.1f} MiB of windows, {total_rankings / 2**20:.1f} MiB of "
        "rankings (one per query and window); at the max_rankings default of 50,000: "
        f"{50_000 * per_ranking / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    main()
