"""`rankmon explain QRELS RUN_BEFORE RUN_AFTER`: why did a measure change between two runs?

How many queries got worse, better or stayed the same; per query the value before and after,
the difference, and its contribution to the change of the mean (the contributions add up to
it; `monitor.explain.change` splits the change into the common queries' part and the mix's),
the common queries first, largest losses first; for the queries that lost most, where each
judged relevant document went (rank before -> after) and which entered or left the top k.
With `--topics FILE` (the replay's topics file: TSV, JSON lines or TREC topics) each query's
text stands beside its id. The same explanation the service serves at /explain, on TREC files.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import orjson

from monitor.errors import MeasureError, one_line
from monitor.explain.api import change_json
from monitor.replay.topics import query_texts
from monitor.scoring.evalset import load_evaluation_set
from monitor.scoring.gain import Gain
from monitor.trec.explain import explain_runs
from monitor.trec.runfile import read_run
from monitor.trec.selection import select_measures

__all__ = ["register"]

DEFAULT_MEASURE = "ndcg_cut.10"


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the `explain` subcommand."""
    parser = subparsers.add_parser(
        "explain",
        help="explain the change of a measure between two TREC runs, query by query",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("qrels", metavar="QRELS", help="judgments: TREC qrels or .jsonl")
    parser.add_argument("before", metavar="RUN_BEFORE", help="the TREC run before")
    parser.add_argument("after", metavar="RUN_AFTER", help="the TREC run after")
    parser.add_argument(
        "-m",
        dest="measure",
        metavar="MEASURE",
        default=DEFAULT_MEASURE,
        help=f"one trec_eval measure or rankmon's name of it (default {DEFAULT_MEASURE})",
    )
    parser.add_argument(
        "--top", type=_count, default=10, help="queries shown, the largest losses first (10)"
    )
    parser.add_argument(
        "--gain", choices=("linear", "exp"), default="linear", help="nDCG gain (linear)"
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="text lines or one JSON object"
    )
    parser.add_argument(
        "--topics",
        metavar="FILE",
        default=None,
        help="the query texts (replay.topics: TSV, JSON lines or TREC topics), shown by the ids",
    )
    parser.set_defaults(handler=run_explain)


def _count(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return int(text)


def run_explain(args: argparse.Namespace) -> int:
    """The `explain` handler."""
    gain = Gain.parse(args.gain)
    selection = select_measures([args.measure], gain)
    if len(selection.names) != 1 or selection.not_averaged():
        raise MeasureError(
            f"-m {args.measure}: name one measure, e.g. ndcg_cut.10 (not a family or a count)"
        )
    evaluation_set = load_evaluation_set(args.qrels)
    before, after = read_run(args.before), read_run(args.after)
    texts = {} if args.topics is None else query_texts(Path(args.topics))
    explanation = explain_runs(
        evaluation_set, before, after, selection, gain=gain, documents=args.top
    )
    body = change_json(explanation.change, explanation.rankings)
    body["queries"] = body["queries"][: args.top]
    if texts:
        for row in body["queries"]:
            row["text"] = texts.get(row["query"])
    if args.format == "json":
        value = {
            "measure": explanation.measure,
            "before_run": args.before,
            "after_run": args.after,
            **body,
        }
        sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    change = explanation.change
    lines = [
        f"{explanation.measure}: {_f(change.before)} on {change.before_queries} queries before, "
        f"{_f(change.after)} on {change.after_queries} after, change {change.change:+.4f}: "
        f"{change.common_change:+.4f} on the {change.common_queries} queries both have, "
        f"{change.mix_change:+.4f} from the mix of queries",
        "queries: "
        + ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in body["counts"].items()),
    ]
    rankings = dict(explanation.rankings)
    for row in body["queries"]:
        text = texts.get(row["query"])
        shown = row["query"] if text is None else f"{row['query']} {_quoted(text)}"
        lines.append(
            f"{shown}\tbefore {_f(row['before'])}\tafter {_f(row['after'])}\t"
            f"contribution {row['contribution']:+.5f}\t{row['status'].replace('_', ' ')}"
        )
        moved = rankings.get(row["query"])
        if moved is not None and moved.moves():
            went = ", ".join(
                f"{doc} {was}->{'gone' if now is None else now}" for doc, was, now in moved.moves()
            )
            lines.append(f"\tjudged relevant documents moved: {went}")
        if moved is not None and (moved.left or moved.entered):
            left = ", ".join(moved.left) or "-"
            entered = ", ".join(moved.entered) or "-"
            lines.append(f"\tleft the top {moved.k}: {left}; entered: {entered}")
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _quoted(text: str) -> str:
    """A query text on one line, quoted, at most 80 characters."""
    return f'"{one_line(text, 80)}"'


def _f(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.4f}"
