"""What the bounds of nDCG@k cost the stream: scoring per ranking with and without them.

The streaming monitor scores every event with `monitor_keys` (cutoffs 5, 10, 20; linear and
exp gains), `ndcg_lower@k` and `ndcg_upper@k` among them: the least and the most nDCG@k over
every grading of the unjudged documents (`monitor.scoring.bounds`, a kernel case each). This
scores the same rankings on the C path with the monitor's keys and with those keys less the
bounds, alternating, each side's best CPU time kept, and prints the cost per ranking and the
ratio. Run it with the checkout's `.venv` on the installed package:

    .venv/bin/python bench/bounds.py [--rankings N] [--unjudged SHARE]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence

from monitor.native import speedups_built
from monitor.scoring.catalog import MeasureKey, monitor_keys
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.gain import EXP, LINEAR
from monitor.scoring.scorer import Scorer
from monitor.testing.timing import best_cpu

QUERIES, JUDGED, DEPTH = 500, 40, 20


def rankings(
    n: int, unjudged: float, seed: int
) -> tuple[EvaluationSet, list[str], list[list[str]]]:
    """An evaluation set, and `n` rankings of up to DEPTH distinct documents, each document
    one nobody judged with probability `unjudged`."""
    rng = random.Random(seed)
    judgments = {
        f"q{q}": {f"d{q}-{d}": rng.randint(0, 3) for d in range(JUDGED)} for q in range(QUERIES)
    }
    queries = [f"q{rng.randrange(QUERIES)}" for _ in range(n)]
    ranked = []
    for query in queries:
        docs = [
            f"new-{rng.randrange(10**9)}" if rng.random() < unjudged else rng.choice(judged)
            for judged in [list(judgments[query])]
            for _ in range(DEPTH)
        ]
        ranked.append(list(dict.fromkeys(docs)))
    return EvaluationSet.from_judgments(judgments), queries, ranked


def coded(
    scorer: Scorer, queries: Sequence[str], ranked: Sequence[Sequence[str]]
) -> Callable[[], object]:
    """Score the rankings as the stream does: grade codes from the C index, then the kernel
    (and the numpy functions of the kinds without a C case)."""
    index = scorer.judgment_index
    assert index is not None
    rows = scorer.query_rows(queries)
    depth = -1 if scorer.lookup_depth is None else scorer.lookup_depth
    codes, lengths = index.codes(rows, ranked, depth)
    return lambda: scorer.score_coded(rows, codes, lengths)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rankings", type=int, default=20_000)
    parser.add_argument("--unjudged", type=float, default=0.2, help="share of unjudged docs")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not speedups_built():
        raise SystemExit("the C accelerators are not built: the stream's path is the C one")
    evaluation_set, queries, ranked = rankings(args.rankings, args.unjudged, args.seed)
    keys = monitor_keys((5, 10, 20), (LINEAR, EXP))
    without = [key for key in keys if key.kind not in {"ndcg_upper", "ndcg_lower"}]
    sides = {
        f"{len(without)} keys, no bounds": coded(Scorer(evaluation_set, without), queries, ranked),
        f"{len(keys)} keys, with both bounds": coded(Scorer(evaluation_set, keys), queries, ranked),
    }
    judged = Scorer(evaluation_set, [MeasureKey("judged", 10)]).score(queries, ranked)
    with_unjudged = float((judged[:, 0] < 1).mean())
    times: dict[str, float] = {}
    for _ in range(2):  # alternate, keep each side's best
        for name, run in sides.items():
            times[name] = min(times.get(name, float("inf")), best_cpu(run, args.repeats))
    n = args.rankings
    print(
        f"{n} rankings of {DEPTH} documents, {args.unjudged:.0%} unjudged "
        f"(an unjudged one in the top 10 of {with_unjudged:.0%}), best of {args.repeats}, C path"
    )
    base = next(iter(times.values()))
    for name, seconds in times.items():
        print(f"  {name:32s} {seconds / n * 1e6:6.2f} us per ranking  {seconds / base:5.2f}x")


if __name__ == "__main__":
    main()
