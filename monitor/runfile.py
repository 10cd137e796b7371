"""TREC run files for `rankmon eval`: each query's retrieved documents in trec_eval's order.

A run line is `qid Q0 docno rank score tag`, fields separated by ASCII whitespace (C's
`isspace`, as trec_eval reads them). The `Q0` and `rank` columns are ignored, and so is
anything after the tag (trec_eval's own `results.trunc` carries junk there). The tag of the
first line is the run id trec_eval prints as `runid`.

Ordering (METRICS-SPEC.md R1-R4, trec_eval form_res_rels.c):

- R1: score descending; ties by docno descending in byte order (`strcmp`): "b" before "a",
  "d9" before "d10", "a" before "B". UTF-8 preserves code-point order, so comparing the
  decoded strings is comparing the bytes.
- R2: scores are compared as C doubles (trec_eval 10.0, `float64`, the default) or as C
  floats (trec_eval 9.x and pytrec_eval, `float32`): there 0.30000000000000004 and 0.3 tie
  and the docno decides.
- R3: a docno twice in one query is an error naming the query, the document and both lines.
- R4: `max_retrieved` keeps the first N documents after ordering (trec_eval's `-M`, whose
  default is 1000).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from monitor.errors import InputError

__all__ = [
    "TREC_EVAL_MAX_RETRIEVED",
    "Run",
    "ScorePrecision",
    "load_run",
    "parse_run",
    "trec_order",
]

ScorePrecision = Literal["float64", "float32"]

# trec_eval's default -M: documents beyond the first 1000 of a query are not evaluated.
TREC_EVAL_MAX_RETRIEVED = 1000

_FIELDS = 6
# A decimal number (or infinity) as C's atof reads it; Python's float() would also take
# "1_0", and "nan" would make the order undefined.
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf(?:inity)?", re.I)


@dataclass(frozen=True)
class Run:
    """A loaded run: `rankings[qid]` is the query's documents in evaluation order, rank 1 first."""

    path: str
    tag: str
    rankings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def query_ids(self) -> frozenset[str]:
        """The queries the run retrieved documents for."""
        return frozenset(self.rankings)


def trec_order(
    docnos: Sequence[str], scores: Sequence[float], score_precision: ScorePrecision = "float64"
) -> tuple[str, ...]:
    """The documents of one query ordered by score descending, ties by docno descending.

    Docnos must be unique (a tie on both keys would leave the order to the sort). With
    `float32` each score is rounded to the nearest C float first, as trec_eval 9.x stores it.
    """
    _check_precision(score_precision)
    keys: Sequence[float] = array("f", scores) if score_precision == "float32" else scores
    # Both keys descending: one reversed sort of (score, docno) pairs.
    return tuple(docno for _, docno in sorted(zip(keys, docnos, strict=True), reverse=True))


def load_run(
    path: str | Path,
    *,
    score_precision: ScorePrecision = "float64",
    max_retrieved: int | None = None,
) -> Run:
    """Read and order a TREC run file; any unreadable file or bad line raises `InputError`."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InputError(str(path), f"cannot read the run: {error.strerror or error}") from error
    return parse_run(data, str(path), score_precision=score_precision, max_retrieved=max_retrieved)


def parse_run(
    data: bytes,
    path: str,
    *,
    score_precision: ScorePrecision = "float64",
    max_retrieved: int | None = None,
) -> Run:
    """Parse run text (`path` names it in errors); see the module docstring for the rules."""
    _check_precision(score_precision)
    if max_retrieved is not None and max_retrieved < 0:
        raise ValueError(f"max_retrieved must be >= 0, got {max_retrieved}")
    collected: dict[str, _QueryLines] = {}
    tag = ""
    for number, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < _FIELDS:
            raise InputError(
                path, f"expected 'qid Q0 docno rank score tag', found {len(fields)} fields", number
            )
        qid = _text(fields[0], "query id", path, number)
        docno = _text(fields[2], "docno", path, number)
        score = _score(fields[4], path, number)
        if not collected:
            tag = _text(fields[5], "tag", path, number)
        collected.setdefault(qid, _QueryLines(qid)).add(docno, score, path, number)
    rankings = {
        qid: trec_order(lines.docnos, lines.scores, score_precision)[:max_retrieved]
        for qid, lines in collected.items()
    }
    return Run(path=path, tag=tag, rankings=rankings)


@dataclass
class _QueryLines:
    """One query's lines as read, before ordering; rejects a docno seen twice."""

    qid: str
    docnos: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)

    def add(self, docno: str, score: float, path: str, number: int) -> None:
        first = self.lines.setdefault(docno, number)
        if first != number:
            raise InputError(
                path,
                f"query {self.qid}: duplicate document {docno} (first on line {first})",
                number,
            )
        self.docnos.append(docno)
        self.scores.append(score)


def _text(raw: bytes, what: str, path: str, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(path, f"{what} is not valid UTF-8 ({error.reason})", number) from error


def _score(raw: bytes, path: str, number: int) -> float:
    if _NUMBER.fullmatch(raw) is None:
        shown = raw.decode("utf-8", "replace")
        raise InputError(path, f"score {shown!r} is not a number", number)
    return float(raw)


def _check_precision(score_precision: str) -> None:
    if score_precision not in get_args(ScorePrecision):
        raise ValueError(
            f"score_precision must be one of {get_args(ScorePrecision)}, got {score_precision!r}"
        )
