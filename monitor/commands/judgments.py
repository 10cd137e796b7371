"""`rankmon judgments export --config FILE --output QRELS`: the evaluation set the judging loop
made, as a file.

Reads the evaluation set's file and the judgments topic to its end, decides each judgment as
the monitor does (`monitor.judging.judgments`) and writes the merged set as TREC qrels
(`qid 0 docno grade`, sorted), with a provenance file beside it (`QRELS.provenance.jsonl`, or
`--provenance`): one JSON object per grade saying its source (`qrels` for the file's), when it
was judged and where on the topic it was read; the audit grades (a model's beside a person's)
come last, marked `"audit": true`. Point `evaluation_set.path` at the output to make the
judgments part of the file. Exit 0; 2 with one line on stderr if the config is bad or the topic
cannot be read.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

from monitor.config.loader import load_config
from monitor.errors import InputError
from monitor.judging.judgments import JudgmentBook, Refusal, decode_judgment
from monitor.judging.topics import TopicFeed
from monitor.kafka.bootstrap import KafkaUnavailableError
from monitor.kafka.consumer import SourceRecord
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `judgments export`."""
    parser = subparsers.add_parser(
        "judgments",
        help="the evaluation set with the judging loop's judgments merged in",
        description="Write the evaluation set the judging loop made: the file's judgments "
        "and those read from the judgments topic, with where each grade came from.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write the merged qrels and their provenance")
    export.add_argument("--config", required=True, metavar="FILE", help="the YAML config file")
    export.add_argument("--output", required=True, metavar="QRELS", help="the merged qrels")
    export.add_argument(
        "--provenance",
        metavar="FILE",
        help="where each grade came from, JSON lines (default: QRELS.provenance.jsonl)",
    )
    export.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="give up when the topic yields nothing for this long before its end (default: 60)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Read the file and the topic, write the merged qrels and the provenance."""
    config = load_config(args.config)
    settings = config.evaluation_set
    base = load_evaluation_set(settings.path, source=settings.source, keep=settings.sources)
    book = JudgmentBook.for_config(config.judging, base, settings.sources)
    limits = config.record_limits
    outcomes: Counter[str] = Counter()
    topic = config.judging.judgments_topic

    def take(record: SourceRecord) -> None:
        decoded = decode_judgment(record, limits, time.time_ns() // 1_000_000)
        outcome = decoded if isinstance(decoded, Refusal) else book.add(decoded)
        outcomes[outcome.reason if isinstance(outcome, Refusal) else outcome] += 1

    feed = TopicFeed(config.kafka, topic, "export", timeout_s=args.timeout)
    try:
        feed.catch_up(take)
    except KafkaUnavailableError as error:
        raise InputError(topic, f"cannot be read: {error}") from None
    finally:
        feed.close()
    merged = book.merged()
    output = Path(args.output)
    provenance = Path(args.provenance or f"{output}.provenance.jsonl")
    _write(output, _qrels(merged))
    _write(provenance, b"".join(orjson.dumps(row) + b"\n" for row in book.provenance()))
    refused = {k: v for k, v in sorted(outcomes.items()) if k not in ("accepted", "audit")}
    print(
        f"rankmon judgments export: {base.num_judgments} judgments from "
        f"{config.evaluation_set.path}, {outcomes['accepted']} accepted and "
        f"{outcomes['audit']} audit from {topic}"
        + (f", refused: {refused}" if refused else "")
        + f"; version {merged.version}, {merged.num_judgments} judgments -> {output}",
        file=sys.stderr,
    )
    return 0


def _qrels(evaluation_set: EvaluationSet) -> bytes:
    return "".join(
        f"{query} 0 {doc} {grade}\n"
        for query in sorted(evaluation_set)
        for doc, grade in sorted(evaluation_set.grades(query).items())
    ).encode()


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all: a half-written qrels file must never be read as the set."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_bytes(data)
        partial.replace(path)
    except OSError as error:
        raise InputError(str(path), f"cannot write: {error.strerror or error}") from None
