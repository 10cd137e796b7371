"""Time `rankmon eval` end to end against pytrec_eval's parse + evaluate, on the same files.

Generates a TREC run of QUERIES x 100 documents (20,000 by default: 2M lines, ~64 MB) with
20 judged documents per query graded 0-3, about 14 of them retrieved, and its qrels. Then, each
in its own process so that peak RSS is that tool's alone:

- `rankmon eval --format json -m ndcg_cut.10 -m P.10 -m recall.10 -m recip_rank -m map`, the
  installed command, as a user runs it (interpreter start-up and imports included);
- pytrec_eval: `parse_qrel`, `parse_run` and `RelevanceEvaluator.evaluate` on the same files
  and measures (its interpreter start-up included too).

Prints wall seconds, peak RSS (the child's `ru_maxrss`) and the ratios, best of `--repeats`
alternating rounds, and checks that both gave the same means to 1e-12. rankmon's modules are
byte-compiled first, as an installed package's are (pip compiles them; an environment with
PYTHONDONTWRITEBYTECODE set would otherwise compile them again in every run).

    .venv/bin/python bench/eval.py                    # 20k queries
    .venv/bin/python bench/eval.py --queries 100000   # the large run (~320 MB)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import monitor

MEASURES = ["ndcg_cut.10", "P.10", "recall.10", "recip_rank", "map"]
GRADE_PROBABILITIES = [0.4, 0.3, 0.2, 0.1]  # grades 0, 1, 2, 3

PYTREC_EVAL = """
import json, sys
import pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = {"ndcg_cut.10", "P.10", "recall.10", "recip_rank", "map"}
per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
names = ["ndcg_cut_10", "P_10", "recall_10", "recip_rank", "map"]
means = {n: sum(v[n] for v in per_query.values()) / len(per_query) for n in names}
print(json.dumps(means))
"""


def write_files(
    folder: Path, queries: int, depth: int, judged: int, seed: int
) -> tuple[Path, Path]:
    """A run with distinct scores per query (exact in float32) and its qrels."""
    rng = np.random.default_rng(seed)
    corpus = max(50 * depth, 2 * queries)
    retrieved_judged = round(judged * 0.7)
    run_path, qrels_path = folder / "run.txt", folder / "qrels.txt"
    with run_path.open("w") as run, qrels_path.open("w") as qrels:
        for q in range(queries):
            picks = np.unique(rng.integers(0, corpus, depth + judged + 20))
            rng.shuffle(picks)
            ranked = picks[:depth]
            rows = [
                f"q{q} Q0 doc{doc} {rank} {depth - rank}.25 bench\n"
                for rank, doc in enumerate(ranked.tolist())
            ]
            run.write("".join(rows))
            judged_docs = [
                *rng.choice(ranked, retrieved_judged, replace=False).tolist(),
                *picks[depth : depth + judged - retrieved_judged].tolist(),
            ]
            grades = rng.choice(4, len(judged_docs), p=GRADE_PROBABILITIES).tolist()
            qrels.write(
                "".join(f"q{q} 0 doc{d} {g}\n" for d, g in zip(judged_docs, grades, strict=True))
            )
    return qrels_path, run_path


def measured(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, the command's own peak RSS (MB) and its stdout, via a wrapper process."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=True)\n"
        "seconds = time.perf_counter() - start\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "sys.stderr.write(f'{seconds} {peak}\\n')\n"
        "sys.stdout.write(done.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *command], capture_output=True, text=True, check=True
    )
    seconds, peak = (float(x) for x in done.stderr.split())
    return seconds, peak, done.stdout


def rankmon_means(stdout: str) -> dict[str, float]:
    means: dict[str, float] = json.loads(stdout)["all"]
    return means


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--judged", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rankmon = str(Path(sys.executable).parent / "rankmon")
    package = Path(monitor.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = write_files(Path(tmp), args.queries, args.depth, args.judged, args.seed)
        size = os.path.getsize(run) / 1e6
        print(f"run: {args.queries:,} queries x {args.depth} docs, {size:.0f} MB; qrels "
              f"{os.path.getsize(qrels) / 1e6:.1f} MB")  # fmt: skip
        ours = [rankmon, "eval", "--format", "json", *(f"-m{m}" for m in MEASURES)]
        ours += [str(qrels), str(run)]
        theirs = [sys.executable, "-c", PYTREC_EVAL, str(qrels), str(run)]
        best: dict[str, tuple[float, float]] = {}
        outputs: dict[str, str] = {}
        for round_ in range(args.repeats):
            order = [("rankmon", ours), ("pytrec_eval", theirs)]
            for name, command in order if round_ % 2 == 0 else order[::-1]:
                seconds, peak, out = measured(command)
                outputs[name] = out
                old = best.get(name, (float("inf"), 0.0))
                best[name] = (min(old[0], seconds), max(old[1], peak))
    ours_means = rankmon_means(outputs["rankmon"])
    theirs_means = json.loads(outputs["pytrec_eval"])
    gap = max(abs(ours_means[n] - theirs_means[n]) for n in theirs_means)
    for name, (seconds, peak) in best.items():
        print(f"{name:<12} {seconds:6.2f} s   peak RSS {peak:7.1f} MB")
    speed = best["pytrec_eval"][0] / best["rankmon"][0]
    memory = best["rankmon"][1] / best["pytrec_eval"][1]
    print(f"rankmon eval is {speed:.2f}x pytrec_eval's speed, with {memory:.2f}x its peak RSS")
    print(f"largest difference of the means: {gap:.1e}")


if __name__ == "__main__":
    main()
