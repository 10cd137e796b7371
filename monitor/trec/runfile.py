"""TREC run files for `rankmon eval`: each query's retrieved documents in trec_eval's order.

A run line is `qid Q0 docno rank score tag`, fields separated by ASCII whitespace (C's
`isspace`, as trec_eval reads them). The `Q0` and `rank` columns are ignored, and so is
anything after the tag (trec_eval's own `results.trunc` carries junk there). The tag of the
first line is the run id trec_eval prints as `runid`.

Ordering (docs/metric-conventions.md R1-R4, trec_eval form_res_rels.c):

- R1: score descending; ties by docno descending in byte order (`strcmp`): "b" before "a",
  "d9" before "d10", "a" before "B". UTF-8 preserves code-point order, so comparing the
  decoded strings is comparing the bytes.
- R2: scores are compared as C doubles (trec_eval 10.0, `float64`, the default) or as C
  floats (trec_eval 9.x and pytrec_eval, `float32`): there 0.30000000000000004 and 0.3 tie
  and the docno decides.
- R3: a docno twice in one query is an error naming the query, the document and both lines.
- R4: `max_retrieved` keeps the first N documents after ordering (trec_eval's `-M`, whose
  default is 1000).

`read_run` is the one reader. With the C accelerators a file is parsed and ordered in C
(`monitor/trec/run_order.c`), which leaves to its one fallback, the Python parser below, every
file it does not decide alone (non-ASCII bytes, a short line, an unusual score token, a
duplicate): the same runs, and the same errors. Given a judgment index (when every measure
asked for comes from the scorer), the C reader goes one step further and looks each
document's grade code up as it reads (`CodedRun`), so no docno becomes a string.
"""

from __future__ import annotations

import math
import os
import re
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args, overload

from monitor import native
from monitor.errors import InputError

if TYPE_CHECKING:
    from monitor._speedups import JudgmentIndex

__all__ = [
    "TREC_EVAL_MAX_RETRIEVED",
    "CodedRun",
    "Run",
    "ScorePrecision",
    "parse_run",
    "read_run",
    "trec_order",
]

ScorePrecision = Literal["float64", "float32"]

# trec_eval's default -M: documents beyond the first 1000 of a query are not evaluated.
TREC_EVAL_MAX_RETRIEVED = 1000

_FIELDS = 6
_CHUNK_BYTES = 1 << 22  # what the streaming C reader takes at a time
# Python's str.split() also splits on these, C's isspace (and so trec_eval) does not: a file
# holding any of them is split on ASCII whitespace only, which is slower.
_NON_ASCII_SPACE = re.compile(
    "[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
_ASCII_SPACE = re.compile("[ \t\n\r\f\v]+")


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


@dataclass(frozen=True)
class CodedRun:
    """A run read straight into grade codes against one scorer's judgment index (C only).

    Every query of the run in first-appearance order with its evaluation-set row (-1: not in
    the qrels) and its ranking's length after the `max_retrieved` cut; `codes` holds, for each
    query with a row in that order, the grade codes of its first `depth` documents.
    """

    path: str
    tag: str
    query_ids: list[str]
    rows: list[int]
    codes: bytes
    lengths: list[int]


@overload
def read_run(
    path: str | Path,
    *,
    score_precision: ScorePrecision = ...,
    max_retrieved: int | None = ...,
    index: None = ...,
    depth: int | None = ...,
) -> Run: ...
@overload
def read_run(
    path: str | Path,
    *,
    score_precision: ScorePrecision = ...,
    max_retrieved: int | None = ...,
    index: JudgmentIndex,
    depth: int | None = ...,
) -> Run | CodedRun: ...
def read_run(
    path: str | Path,
    *,
    score_precision: ScorePrecision = "float64",
    max_retrieved: int | None = None,
    index: JudgmentIndex | None = None,
    depth: int | None = None,
) -> Run | CodedRun:
    """The one run reader: a TREC run file in trec_eval's order, or `InputError` naming the
    file (and the line at fault).

    The C reader decides every file it can (with `index`: straight into that judgment
    index's grade codes, the first `depth` documents of each query, as a `CodedRun`; without:
    a `Run`); its one fallback is the Python parser, which reads everything else or names the
    bad line. A coded file is streamed in chunks, one query's lines in memory at a time; a run
    whose queries are not each in one block of lines is read whole instead.
    """
    if index is not None:
        _check_precision(score_precision)
        try:
            coded = _c_coded(path, index, depth, score_precision, max_retrieved)
        except OSError as error:
            raise InputError.unreadable(str(path), "run", error) from error
        if coded is not None:
            return coded
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InputError.unreadable(str(path), "run", error) from error
    return parse_run(data, str(path), score_precision=score_precision, max_retrieved=max_retrieved)


def parse_run(
    data: bytes,
    path: str,
    *,
    score_precision: ScorePrecision = "float64",
    max_retrieved: int | None = None,
) -> Run:
    """`read_run` on run text already in memory (`path` names it in errors)."""
    _check_precision(score_precision)
    if max_retrieved is not None and max_retrieved < 0:
        raise ValueError(f"max_retrieved must be >= 0, got {max_retrieved}")
    if native.speedups_active():
        ordered = _c_ordered(data, path, score_precision, max_retrieved)
        if ordered is not None:
            return ordered
    return _python_run(data, path, score_precision, max_retrieved)


def _c_ordered(
    data: bytes, path: str, score_precision: ScorePrecision, max_retrieved: int | None
) -> Run | None:
    depth = -1 if max_retrieved is None else max_retrieved
    ordered = native.speedups.order_run(data, score_precision == "float32", depth)
    return None if ordered is None else Run(path=path, tag=ordered[0], rankings=ordered[1])


def _c_coded(
    path: str | Path,
    index: JudgmentIndex,
    depth: int | None,
    score_precision: ScorePrecision,
    max_retrieved: int | None,
) -> CodedRun | None:
    float32 = score_precision == "float32"
    cut = -1 if max_retrieved is None else max_retrieved
    lookup = -1 if depth is None else depth
    coder = native.speedups.run_coder(index, float32, cut, lookup)
    with Path(path).open("rb", buffering=0) as file:
        # Into the coder's own buffer, in C; a large file in two parts at once when this
        # process has two CPUs.
        coder.read(file.fileno(), _CHUNK_BYTES, _parts())
    coded = coder.finish()
    if coded is None and coder.split:  # a query in two blocks: the same reader, whole
        coded = native.speedups.code_run(index, Path(path).read_bytes(), float32, cut, lookup)
    if coded is None:
        return None
    tag, query_ids, rows, codes, lengths = coded
    return CodedRun(str(path), tag, query_ids, rows, codes, lengths)


def _parts() -> int:
    """How many threads read one run: two when this process may run on two CPUs or more."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    return 2 if cpus > 1 else 1


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


def _python_run(
    data: bytes, path: str, score_precision: ScorePrecision, max_retrieved: int | None
) -> Run:
    """The fallback: any file the C reader leaves (non-ASCII bytes, a short line, an unusual
    score token, a duplicate), read or refused with the line at fault."""
    text = _decode(data, path)
    fields_of = _ascii_fields if _NON_ASCII_SPACE.search(text) else str.split
    scored: dict[str, dict[str, float]] = {}  # qid -> docno -> score, in file order
    tag = ""
    for number, line in enumerate(text.split("\n"), start=1):
        fields = fields_of(line)
        if len(fields) < _FIELDS:
            if not fields:
                continue
            problem = f"expected 'qid Q0 docno rank score tag', found {len(fields)} fields"
            raise InputError(path, problem, number)
        qid, docno, score = fields[0], fields[2], _score(fields[4], path, number)
        scores = scored.get(qid)
        if scores is None:
            tag = tag if scored else fields[5]
            scores = scored[qid] = {}
        elif docno in scores:
            raise _duplicate(text, fields_of, qid=qid, docno=docno, path=path, number=number)
        scores[docno] = score
    rankings = {
        qid: trec_order(list(scores), list(scores.values()), score_precision)[:max_retrieved]
        for qid, scores in scored.items()
    }
    return Run(path=path, tag=tag, rankings=rankings)


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(path, f"not valid UTF-8 ({error.reason})", line) from None


def _ascii_fields(line: str) -> list[str]:
    return [part for part in _ASCII_SPACE.split(line) if part]


def _score(raw: str, path: str, number: int) -> float:
    # float() takes exactly C's decimal forms once "1_0", non-ASCII digits and NaN are refused.
    try:
        score = float(raw)
    except ValueError:
        score = math.nan
    if math.isnan(score) or "_" in raw or not raw.isascii():
        raise InputError(path, f"score {raw!r} is not a number", number)
    return score


def _duplicate(
    text: str,
    fields_of: Callable[[str], list[str]],
    *,
    qid: str,
    docno: str,
    path: str,
    number: int,
) -> InputError:
    # Only this error needs the first line, so it is found again here rather than stored.
    lines = (fields_of(line) for line in text.split("\n"))
    first = next(
        n
        for n, fields in enumerate(lines, start=1)
        if len(fields) >= _FIELDS and fields[0] == qid and fields[2] == docno
    )
    problem = f"query {qid}: duplicate document {docno} (first on line {first})"
    return InputError(path, problem, number)


def _check_precision(score_precision: str) -> None:
    if score_precision not in get_args(ScorePrecision):
        raise ValueError(
            f"score_precision must be one of {get_args(ScorePrecision)}, got {score_precision!r}"
        )
