"""What streaming a trec_eval measure costs: the scorer's per-ranking time with each kind
trec_eval's families provide (`metrics.measures: [bpref]`, ...) added to the monitor's default
keys, against the default keys alone, measured in the same run.

    .venv/bin/python bench/provided.py                  # 2,000 queries, batches of 500
    .venv/bin/python bench/provided.py --rankings 5000  # more batches

One synthetic evaluation set (20 judged documents per query, graded 0-3, one in ten judged
with a negative grade) and rankings of 100 documents, about 14 of them judged: what the
stream scores per poll (`Scorer.score` on batches of 500, the C accelerators on, as the
service runs). Times are CPU seconds of this process, the best of `--repeats`; the figure
is microseconds per ranking and the ratio to the default keys alone.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

from monitor.scoring.catalog import KIND_TABLE, MeasureKey, monitor_keys
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer

BATCH = 500


def collection(
    queries: int, rankings: int, seed: int
) -> tuple[EvaluationSet, list[str], list[list[str]]]:
    rng = random.Random(seed)
    grades: dict[str, dict[str, int]] = {}
    for q in range(queries):
        docs = rng.sample(range(1000), 20)
        grades[f"q{q}"] = {f"d{d}": rng.choice([-1] + [0, 0, 1, 1, 2, 3] * 2) for d in docs}
    ids = [f"q{rng.randrange(queries)}" for _ in range(rankings)]
    ranked = []
    for qid in ids:
        judged = list(grades[qid])
        picked = rng.sample(judged, 14) + [f"u{rng.randrange(10**6)}" for _ in range(86)]
        rng.shuffle(picked)
        ranked.append(picked)
    return EvaluationSet.from_judgments(grades), ids, ranked


def per_ranking_us(
    scorer: Scorer, ids: Sequence[str], rankings: Sequence[Sequence[str]], repeats: int
) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for at in range(0, len(rankings), BATCH):
            scorer.score(ids[at : at + BATCH], rankings[at : at + BATCH])
        best = min(best, time.process_time() - start)
    return best / len(rankings) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--rankings", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    evaluation_set, ids, rankings = collection(args.queries, args.rankings, args.seed)
    default = monitor_keys([5, 10, 20], ["linear", "exp"])
    base = per_ranking_us(Scorer(evaluation_set, default), ids, rankings, args.repeats)
    print(f"{len(rankings):,} rankings of 100 documents, batches of {BATCH}, CPU time")
    print(f"{'the default keys (' + str(len(default)) + ')':<36} {base:8.1f} us/ranking")
    for kind in (kind for kind in KIND_TABLE if kind.family is not None):
        key = MeasureKey(kind.name, 10 if kind.cutoff else None)
        cost = per_ranking_us(Scorer(evaluation_set, [*default, key]), ids, rankings, args.repeats)
        print(f"  + {key!s:<32} {cost:8.1f} us/ranking  ({cost / base:4.2f} x)")


if __name__ == "__main__":
    main()
