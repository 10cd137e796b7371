"""`rankmon eval QRELS RUN`: the metric engine offline on TREC files, with trec_eval's interface.

Options mirror trec_eval's (`-q`, `-c`, `-m`, `-l`, `-M`, `-J`, `-N`, `-n`, `-R`); what
rankmon adds is `--gain`, `--format json` and `--score-precision`. Bad input of any kind (a
file, a measure name, an option value) raises a `RankmonError`, which `monitor.cli` prints
as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from monitor.errors import MeasureError
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.gain import Gain
from monitor.trec.audit import Audit, audit
from monitor.trec.evaluate import evaluate_coded, evaluate_run
from monitor.trec.report import EvaluationReport
from monitor.trec.runfile import TREC_EVAL_MAX_RETRIEVED, CodedRun, Run, read_run
from monitor.trec.selection import MeasureSelection, select_measures
from monitor.trec.table import ALL_RANKMON, rankmon_names, trec_names

__all__ = ["register"]


def _wrapped(words: Sequence[str], separator: str = " ") -> str:
    return textwrap.fill(
        separator.join(words), width=86, initial_indent="  ", subsequent_indent="  "
    )


_DESCRIPTION = """\
Score a TREC run against graded judgments with rankmon's metric engine, printing what
trec_eval prints. The run is ordered as trec_eval orders it: score descending, ties by docno
descending in byte order. Measures follow trec_eval 10.0 (nDCG with linear gain, IDCG from
every judged document of the query, a query without relevant documents scores 0).
"""

_EPILOG = f"""\
measures (-m, trec_eval 10.0's names and parameters; MEASURE.PARAMS, e.g. P.5,10):
{_wrapped(trec_names())}
  groups: official, all_trec, set (trec_eval's); {ALL_RANKMON} (the default): the
  measures the streaming monitor computes too
  parameters: cutoffs P.5,10; recall levels iprec_at_recall..1,.5; gains
  ndcg.1=3,2=9; persistence rbp.p=0.8; coefficients utility.2,-1,0,0
  rankmon's names, as in alert rules, work too:
{_wrapped(rankmon_names(), separator=", ")}

examples:
  rankmon eval qrels.txt run.txt -q -m ndcg_cut.10 -m P.10
  rankmon eval qrels.txt run.txt -m ndcg@10 -m mrr
  rankmon eval qrels.txt run.txt -m all_trec -J
  rankmon eval qrels.txt run.txt -c --gain exp --format json
  rankmon eval llm-qrels.txt run.txt -m ndcg_cut.10 --audit human-qrels.txt
"""


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the `eval` subcommand."""
    parser = subparsers.add_parser(
        "eval",
        help="score a TREC run against qrels, trec_eval-compatible",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "qrels", metavar="QRELS", help="judgments: TREC qrels (qid iter docno grade) or .jsonl"
    )
    parser.add_argument("run", metavar="RUN", help="TREC run: qid Q0 docno rank score tag")
    _add_trec_eval_options(parser)
    _add_rankmon_options(parser)
    parser.set_defaults(handler=run_eval)


def _add_trec_eval_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q", dest="per_query", action="store_true", help="print every query's values too"
    )
    parser.add_argument(
        "-c",
        dest="complete",
        action="store_true",
        help="evaluate every qrels query: one the run misses scores 0 and counts in the mean "
        "(default: the mean is over the queries in both files, as trec_eval 9)",
    )
    parser.add_argument(
        "-m",
        dest="measures",
        metavar="MEASURE",
        action="append",
        help=f"a measure or family to report, repeatable (default: {ALL_RANKMON})",
    )
    parser.add_argument(
        "-l",
        dest="level",
        metavar="LEVEL",
        default="1",
        help="lowest grade that counts as relevant for P, recall, map, recip_rank and "
        "num_rel (default 1); nDCG always uses the grades themselves",
    )
    parser.add_argument(
        "-M",
        dest="max_retrieved",
        metavar="DEPTH",
        default=str(TREC_EVAL_MAX_RETRIEVED),
        help="evaluate only the first DEPTH documents of each query after ordering "
        f"(default {TREC_EVAL_MAX_RETRIEVED}, as trec_eval)",
    )
    parser.add_argument(
        "-J",
        dest="judged_only",
        action="store_true",
        help="drop the documents the qrels do not judge from every ranking (after -M)",
    )
    parser.add_argument(
        "-N",
        dest="num_docs",
        metavar="DOCS",
        default="0",
        help="number of documents in the collection (utility's fourth coefficient; default 0)",
    )
    parser.add_argument(
        "-n", dest="no_summary", action="store_true", help="no summary: only -q's lines"
    )
    parser.add_argument(
        "-R",
        dest="rel_format",
        metavar="FORMAT",
        default="qrels",
        help="judgment file format: qrels (the only one rankmon reads: TREC qrels or .jsonl)",
    )


def _add_rankmon_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gain",
        choices=("linear", "exp"),
        default="linear",
        help="nDCG gain of grade g: linear g (trec_eval, the default) or exp 2^g-1",
    )
    parser.add_argument(
        "--format",
        choices=("trec", "json"),
        default="trec",
        help='trec: trec_eval\'s lines (4 decimals); json: {"per_query": {qid: {measure: '
        'value}}, "all": {measure: value}} at full precision',
    )
    parser.add_argument(
        "--audit",
        metavar="HUMAN_QRELS",
        help="human judgments of a random sample of the queries, QRELS being a model's (an "
        "LLM judge's): also print each mean measure corrected by them (PPI++, with its 95%% "
        "interval) and the judge's agreement (weighted kappa); docs/metrics.md, 'Judges'",
    )
    parser.add_argument(
        "--score-precision",
        choices=("float64", "float32"),
        default="float64",
        help="compare run scores as doubles (trec_eval 10, the default) or as C floats "
        "(trec_eval 9 and pytrec_eval, where nearly equal scores tie)",
    )


def _warn_when_nothing_is_scored(
    path: str, run_queries: frozenset[str], qrels_queries: Iterable[str]
) -> None:
    """The report of a run that scores nothing is all zeros, as trec_eval prints it; say why
    on stderr, so a wrong file does not pass for a very bad ranker."""
    if not run_queries:
        print(
            f"rankmon eval: warning: {path} holds no rankings: every measure is 0", file=sys.stderr
        )
    elif run_queries.isdisjoint(qrels_queries):
        print(
            f"rankmon eval: warning: no query of {path} is in the qrels (wrong file?): "
            "every measure is 0",
            file=sys.stderr,
        )


def run_eval(args: argparse.Namespace) -> int:
    """The `eval` handler: load, score, print; returns the exit code."""
    selection = select_measures(args.measures or [ALL_RANKMON], Gain.parse(args.gain))
    relevance_level = _whole_number(args.level, "-l LEVEL (relevance level)")
    max_retrieved = _whole_number(args.max_retrieved, "-M DEPTH (documents per query)")
    num_docs = _whole_number(args.num_docs, "-N DOCS (documents in the collection)")
    _check_rel_format(args.rel_format)
    evaluation_set = load_evaluation_set(args.qrels)
    run = _read_run(args, evaluation_set, selection, max_retrieved)
    report: EvaluationReport
    if isinstance(run, CodedRun):
        _warn_when_nothing_is_scored(args.run, frozenset(run.query_ids), evaluation_set.query_ids)
        report = evaluate_coded(
            evaluation_set,
            run,
            selection,
            complete=args.complete,
            relevance_level=relevance_level,
        )
    else:
        _warn_when_nothing_is_scored(args.run, run.query_ids, evaluation_set.query_ids)
        report = evaluate_run(
            evaluation_set,
            run,
            selection,
            complete=args.complete,
            relevance_level=relevance_level,
            judged_only=args.judged_only,
            num_docs=num_docs,
        )
    checked = None
    if args.audit is not None:
        read = run if isinstance(run, Run) else None  # coded against the model's judgments
        checked = _audit(
            args,
            evaluation_set,
            report,
            read,
            selection=selection,
            relevance_level=relevance_level,
        )
    if args.format == "json":
        text = report.to_json(summary=not args.no_summary)
        if checked is not None:
            document = orjson.loads(text)
            document["audit"] = checked.to_dict()
            text = orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        sys.stdout.write(text.decode())
    else:
        lines = list(report.trec_lines(per_query=args.per_query, summary=not args.no_summary))
        if checked is not None:
            lines += checked.trec_lines()
        sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


def _audit(
    args: argparse.Namespace,
    model_set: EvaluationSet,
    report: EvaluationReport,
    run: Run | None,
    *,
    selection: MeasureSelection,
    relevance_level: int,
) -> Audit:
    """The run (read again when it was read coded against the model's judgments) scored
    under the human judgments of `--audit`, and the audit of the model's report by them
    (`monitor.trec.audit`)."""
    human_set = load_evaluation_set(args.audit)
    if run is None:
        max_retrieved = _whole_number(args.max_retrieved, "-M DEPTH (documents per query)")
        run = read_run(args.run, score_precision=args.score_precision, max_retrieved=max_retrieved)
    human = evaluate_run(
        human_set,
        run,
        selection,
        complete=args.complete,
        relevance_level=relevance_level,
        judged_only=args.judged_only,
    )
    return audit(report, human, model_set, human_set, args.audit)


def _read_run(
    args: argparse.Namespace,
    evaluation_set: EvaluationSet,
    selection: MeasureSelection,
    max_retrieved: int,
) -> Run | CodedRun:
    """The run, read straight into grade codes against the evaluation set's judgment index
    when the scorer computes every value asked for (and the C accelerators and at most 255
    grades give an index)."""
    index = None
    if not args.judged_only and selection.engine_only:
        index = evaluation_set.judgment_index()
    if index is None:
        return read_run(args.run, score_precision=args.score_precision, max_retrieved=max_retrieved)
    return read_run(
        args.run,
        score_precision=args.score_precision,
        max_retrieved=max_retrieved,
        index=index,
        depth=selection.lookup_depth,
    )


def _check_rel_format(name: str) -> None:
    if name == "qrels":
        return
    if name in ("qrels_prefs", "qrels_jg"):
        raise MeasureError(
            f"-R {name}: rankmon reads graded qrels only (trec_eval's -R qrels), not "
            "preference or judgment-group files"
        )
    raise MeasureError(f"-R {name!r}: unknown judgment format; rankmon reads -R qrels")


MAX_COUNT = 2**31 - 1


def _whole_number(text: str, option: str) -> int:
    # Parsed here rather than by argparse so that a bad value is one line, like every error.
    # Bounded to what the C readers count in (int32 ranks): a larger depth means "all".
    if not text.isascii() or not text.isdigit() or len(text) > 10 or int(text) > MAX_COUNT:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise MeasureError(f"{option} must be a whole number from 0 to {MAX_COUNT}, got {shown!r}")
    return int(text)
