"""`rankmon compare QRELS RUN_BASELINE RUN_CANDIDATE [RUN ...]`: is a candidate better?

The statistics are those of the live comparisons (`monitor.trec.compare`); measures take
trec_eval's names and the runs trec_eval's ordering. Exit code 0 when every candidate passes
the gate, 1 when one fails, 2 on bad input (one line naming the file and line).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import orjson

from monitor.errors import MeasureError
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.stats.corrections import CORRECTIONS
from monitor.stats.judges import MeanInterval
from monitor.stats.paired import TESTS
from monitor.trec.audit import audited_difference
from monitor.trec.compare import GATES, RunComparison, compare_runs, missing_queries
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import Run, read_run
from monitor.trec.selection import MeasureSelection, select_measures

__all__ = ["register"]

DEFAULT_MEASURE = "ndcg_cut.10"

_DESCRIPTION = """\
Compare candidate TREC runs with a baseline run on one qrels, paired by query: per run and
measure the mean, the mean per-query difference (delta) from the baseline, its confidence
interval, a two-sided p-value (corrected over every run and measure), the effect size
(delta / sd of the differences), the number of queries, the smallest difference they can
show and a verdict. The means are over the qrels queries both runs rank, as `rankmon eval`
and trec_eval; with -c over every qrels query, one a run misses scoring 0.
"""

_EPILOG = """\
gates (exit code 0 when every candidate passes, 1 when one fails, 2 on bad input), on the
interval corrected for the family (confidence 1 - alpha / m, m = candidates x measures):
  better        the corrected interval's lower end above margin (default 0)
  non-inferior  the corrected interval's lower end above -margin (at most margin worse)
verdicts: better, worse, no_difference, or inconclusive when the queries are too few for
any p-value under the level (an inconclusive candidate fails every gate).

examples:
  rankmon compare qrels.txt v1.run v2.run -m ndcg_cut.10 -m P.10
  rankmon compare qrels.txt v1.run v2.run v3.run --gate non-inferior --margin 0.01 --format json
  rankmon compare llm-qrels.txt v1.run v2.run --audit human-qrels.txt
"""


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the `compare` subcommand."""
    parser = subparsers.add_parser(
        "compare",
        help="compare candidate TREC runs with a baseline: delta, interval, p-value, verdict",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("qrels", metavar="QRELS", help="judgments: TREC qrels or .jsonl")
    parser.add_argument("baseline", metavar="RUN_BASELINE", help="the baseline TREC run")
    parser.add_argument(
        "candidates", metavar="RUN_CANDIDATE", nargs="+", help="candidate TREC runs"
    )
    parser.add_argument(
        "-m",
        dest="measures",
        metavar="MEASURE",
        action="append",
        help=(
            f"a trec_eval measure or rankmon's name of it, repeatable (default: {DEFAULT_MEASURE})"
        ),
    )
    parser.add_argument(
        "--test",
        choices=TESTS,
        default="permutation",
        help="paired sign-flip permutation (default; exact up to 12 queries), Student's t, "
        "or the bootstrap (percentile interval)",
    )
    parser.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        help="of the intervals (default 0.95); the tests' level is 1 - it",
    )
    parser.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default="holm",
        help="of the p-values over every run and measure (default holm)",
    )
    parser.add_argument(
        "--gate", choices=GATES, default="better", help="what passing means (default better)"
    )
    parser.add_argument(
        "--margin",
        type=_margin,
        default=0.0,
        help="minimum improvement (better) or largest loss (non-inferior); default 0",
    )
    parser.add_argument(
        "-l",
        dest="level",
        type=int,
        default=1,
        help="relevance level for P, recall, map (default 1)",
    )
    parser.add_argument(
        "-c",
        dest="complete",
        action="store_true",
        help="compare on every qrels query: one a run misses scores 0 (default: the queries "
        "both runs rank, as rankmon eval and trec_eval)",
    )
    parser.add_argument(
        "--audit",
        metavar="HUMAN_QRELS",
        help="human judgments of a random sample of the queries, QRELS being a model's: "
        "also print each candidate's delta corrected by them (PPI++, at --confidence); the "
        "gate stays on QRELS",
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="text lines or one JSON object"
    )
    parser.set_defaults(handler=run_compare)


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.5 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0.5, 1), got {text}")
    return value


def _margin(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def run_compare(args: argparse.Namespace) -> int:
    """The `compare` handler: load, compare, print; 0 if every candidate passes, else 1."""
    if args.level < 0:
        raise MeasureError(f"-l LEVEL must be >= 0, got {args.level}")
    selection = select_measures(args.measures or [DEFAULT_MEASURE])
    evaluation_set = load_evaluation_set(args.qrels)
    paths = [args.baseline, *args.candidates]
    runs = [(Path(path).name, read_run(path)) for path in paths]
    names = [name for name, _ in runs]
    if len(set(names)) < len(names):
        runs = [(path, run) for path, (_, run) in zip(paths, runs, strict=True)]
    _say_queries(evaluation_set, runs, paths, complete=args.complete)
    results = compare_runs(
        evaluation_set,
        runs[0],
        runs[1:],
        selection,
        test=args.test,
        confidence=args.confidence,
        correction=args.correction,
        gate=args.gate,
        margin=args.margin,
        relevance_level=args.level,
        complete=args.complete,
    )
    small = min((r.result.queries for r in results), default=0)
    if args.test == "bootstrap" and small < 50:
        print(
            f"rankmon compare: warning: --test bootstrap on {small} queries: its intervals run "
            "too narrow under 50 queries; the permutation test (the default) holds its level",
            file=sys.stderr,
        )
    audited = _audited(args, evaluation_set, runs, selection) if args.audit else {}
    if args.format == "json":
        rows = []
        for r in results:
            row = r.to_json()
            if (r.run, r.measure) in audited:
                row["audit"] = _interval_json(audited[(r.run, r.measure)])
            rows.append(row)
        value = {"baseline": runs[0][0], "results": rows}
        sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        lines = []
        for r in results:
            line = _line(r, args)
            if (r.run, r.measure) in audited:
                corrected = audited[(r.run, r.measure)]
                line += (
                    f"\taudited delta {corrected.estimate:+.4f} {args.confidence:.0%} CI "
                    f"[{corrected.lower:+.4f}, {corrected.upper:+.4f}]"
                )
            lines.append(line + "\n")
        sys.stdout.write("".join(lines))
    return 0 if all(r.passes for r in results) else 1


def _audited(
    args: argparse.Namespace,
    evaluation_set: EvaluationSet,
    runs: list[tuple[str, Run]],
    selection: MeasureSelection,
) -> dict[tuple[str, str], MeanInterval]:
    """(candidate, measure) -> its difference from the baseline under the human judgments of
    `--audit`, corrected by PPI++ (`monitor.trec.audit`)."""
    human_set = load_evaluation_set(args.audit)
    options = {"complete": args.complete, "relevance_level": args.level}
    model = [evaluate_run(evaluation_set, run, selection, **options) for _, run in runs]
    human = [evaluate_run(human_set, run, selection, **options) for _, run in runs]
    queries = frozenset(human_set.query_ids)
    return {
        (runs[i][0], name): audited_difference(
            (model[0], model[i]),
            (human[0], human[i]),
            name,
            audited_queries=queries,
            confidence=args.confidence,
            path=args.audit,
        )
        for i in range(1, len(runs))
        for name in selection.names
    }


def _interval_json(interval: MeanInterval) -> dict[str, float]:
    return {
        "delta": interval.estimate,
        "ci_lower": interval.lower,
        "ci_upper": interval.upper,
        "tuning": interval.tuning,
    }


def _say_queries(
    evaluation_set: EvaluationSet,
    runs: list[tuple[str, Run]],
    paths: list[str],
    *,
    complete: bool,
) -> None:
    """One note per run that misses qrels queries, saying what happens to them."""
    for (_, run), path in zip(runs, paths, strict=True):
        missing = missing_queries(evaluation_set, run)
        if not missing:
            continue
        fate = (
            "they score 0 (-c, as trec_eval -c)"
            if complete
            else "they are left out of every mean it is part of (-c scores them 0)"
        )
        print(
            f"rankmon compare: note: {path} has no ranking for {missing} of the "
            f"{len(evaluation_set)} qrels queries; {fate}",
            file=sys.stderr,
        )


def _line(r: RunComparison, args: argparse.Namespace) -> str:
    res = r.result
    level = f"{args.confidence:.0%}"
    corrected = (
        ""
        if args.correction == "none"
        else f" ({args.correction} {res_p(r.p_value_corrected)}, family CI "
        f"[{r.ci_lower_corrected:+.4f}, {r.ci_upper_corrected:+.4f}])"
    )
    gate = "passes" if r.passes else "fails"
    return (
        f"{r.run}\t{r.measure}\tmean {r.mean:.4f}\tbaseline {r.baseline_mean:.4f}\t"
        f"delta {res.delta:+.4f}\t{level} CI [{res.ci_lower:+.4f}, {res.ci_upper:+.4f}]\t"
        f"p {res_p(res.p_value)}{corrected}\t"
        f"effect {res.effect_size:+.2f}\tn {res.queries}\t"
        f"detects {r.min_detectable:.4f}\t{r.verdict}\t{args.gate} gate: {gate}"
    )


def res_p(p: float) -> str:
    return "nan" if math.isnan(p) else f"{p:.4g}"
