"""`EvaluationSet`: the fixed graded judgments (qrels) every ranking is scored against.

Two file formats, chosen by suffix:

- TREC qrels (any suffix but `.jsonl`/`.json`): `qid iter docno grade` per line, whitespace
  separated; the `iter` column is ignored; blank lines and lines starting with `#` are skipped.
- JSON Lines (`.jsonl`, `.json`): one `{"query_id": str, "doc_id": str, "grade": int}` per
  line, with an optional `"source"` (who graded it); blank lines are skipped.

Every grade has a source: its line's `source`, or the file's (`evaluation_set.source`, by
default `qrels`, which counts as a person's). Loading with `keep` (`evaluation_set.sources`)
keeps only the grades of those sources: the measures are then restricted to them.

With the C accelerators TREC qrels are read in C (`monitor/scoring/qrels_scan.c`) straight
into the judgment index the scorer looks grades up in, with no Python object per
judgment; it leaves every file it does not decide alone to the Python code here: the same
judgments and the same errors.

Grades are integers. A negative grade means "judged, but unjudged" (trec_eval's RELVALUE_UNJUDGED,
docs/metric-conventions.md V1): the document counts as judged for judged@k, but it gains 0, is never
relevant, and is left out of the ideal ranking and of num_rel (V2).

The version is the first 12 hex digits of the sha256 of the canonical content (the sorted
`qid\\tdoc\\tgrade` lines), so it does not change when lines are reordered or reformatted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from functools import cached_property
from itertools import chain
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

import orjson

from monitor import native
from monitor.errors import InputError

if TYPE_CHECKING:
    from monitor._speedups import JudgmentIndex

__all__ = ["FILE_SOURCE", "GRADE_RANGE", "MAX_CODES", "EvaluationSet", "load_evaluation_set"]

_JSON_SUFFIXES = (".jsonl", ".json")
_INTEGER = re.compile(r"[+-]?[0-9]+")
# Grades are C ints in trec_eval; the scorer also keeps a sentinel below this range.
GRADE_RANGE = range(-(2**31), 2**31)
MAX_CODES: Final = 255  # grade codes are one byte (0: not judged)
FILE_SOURCE: Final = "qrels"  # the source of a file's grades unless it names one: a person's
MAX_SOURCE_BYTES: Final = 256


class EvaluationSet:
    """Query id -> document id -> integer grade, with per-query ideal data precomputed.

    Queries without any judgment do not exist here (docs/metric-conventions.md Q4). `len()` is the
    number of queries; `qid in evaluation_set` tells whether a query is known.

    A set read from TREC qrels by the C reader is held in its `JudgmentIndex` alone: the
    per-query dicts of Python strings are made the first time something asks for a query's
    grades (the scorer's coded path never does).
    """

    def __init__(
        self,
        judgments: Mapping[str, Mapping[str, int]],
        path: str | None,
        *,
        own: bool = False,
        source: str = FILE_SOURCE,
        sources: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        self.path = path
        self.source = source  # every grade's, but those `sources` names
        self._sources: dict[tuple[str, str], str] = dict(sources or {})
        # `own`: the loaders' freshly built dicts are taken as they are, not copied.
        grades = {
            qid: docs if own and type(docs) is dict else dict(docs)
            for qid, docs in judgments.items()
            if docs
        }
        self._rows = {qid: row for row, qid in enumerate(grades)}
        self._loaded: dict[str, dict[str, int]] | None = grades
        self._index: JudgmentIndex | None = None

    @classmethod
    def of_index(
        cls, index: JudgmentIndex, path: str | None, source: str = FILE_SOURCE
    ) -> EvaluationSet:
        """The set a qrels `JudgmentIndex` holds (every query of it has a judgment)."""
        evaluation_set = cls.__new__(cls)
        evaluation_set.path = path
        evaluation_set.source = source
        evaluation_set._sources = {}
        evaluation_set._rows = {qid: row for row, qid in enumerate(index.query_ids)}
        evaluation_set._loaded = None
        evaluation_set._index = index
        return evaluation_set

    @property
    def _grades(self) -> dict[str, dict[str, int]]:
        if self._loaded is None:
            assert self._index is not None
            self._loaded = dict(zip(self._index.query_ids, self._index.judgments(), strict=True))
        return self._loaded

    @cached_property
    def _ideal(self) -> dict[str, tuple[int, ...]]:
        # Grades >= 0 sorted descending: the ideal ranking under any gain that does not
        # decrease with the grade (linear, exp); `scorer` and `columns` sort gains themselves.
        return {qid: _ideal_of(docs) for qid, docs in self._grades.items()}

    @cached_property
    def version(self) -> str:
        """The first 12 hex digits of the canonical content's sha256 (made when first asked:
        `rankmon eval` never needs it)."""
        return _content_hash(self._grades)

    @cached_property
    def code_grades(self) -> tuple[int, ...] | None:
        """The distinct grades, ascending: grade `code_grades[c - 1]` has the one-byte code c in
        the scorer and the judgment index. None when there are more than 255."""
        if self._index is not None:
            return self._index.code_grades
        grades = sorted(set(chain.from_iterable(docs.values() for docs in self._grades.values())))
        return tuple(grades) if len(grades) <= MAX_CODES else None

    @cached_property
    def grade_scale(self) -> tuple[int, ...]:
        """Every distinct grade the set gives, ascending, however many: with grade 0, the
        grades an unjudged document may get once judged (`monitor.scoring.bounds`)."""
        grades = self.code_grades
        if grades is None:
            given = chain.from_iterable(docs.values() for docs in self._grades.values())
            grades = tuple(sorted(set(given)))
        return grades

    @cached_property
    def grade_codes(self) -> dict[int, int] | None:
        """Grade -> its one-byte code (1..255), the inverse of `code_grades`; None with more
        than 255 grades."""
        if self.code_grades is None:
            return None
        return {grade: code for code, grade in enumerate(self.code_grades, start=1)}

    def judgment_index(self) -> JudgmentIndex | None:
        """The judgments as the C accelerators' index, graded by `code_grades`; None without
        the accelerators (or with RANKMON_SPEEDUPS=off) or with more than 255 grades.

        Built once, from the qrels file's bytes by the C reader or else from the dicts, and
        shared by every scorer of this set."""
        code_of = self.grade_codes
        if not native.speedups_active() or code_of is None:
            return None
        if self._index is None:
            judgments = [self._grades[qid] for qid in self._rows]
            self._index = native.judgment_index(list(self._rows), judgments, code_of)
        return self._index

    @classmethod
    def from_judgments(
        cls, judgments: Mapping[str, Mapping[str, int]], path: str | None = None
    ) -> EvaluationSet:
        """Build from a mapping (tests, the demo); grades must be integers."""
        for qid, docs in judgments.items():
            for doc, grade in docs.items():
                if (
                    isinstance(grade, bool)
                    or not isinstance(grade, int)
                    or grade not in GRADE_RANGE
                ):
                    raise ValueError(
                        f"query {qid!r} doc {doc!r}: grade {grade!r} is not a 32-bit integer"
                    )
        return cls(judgments, path)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __repr__(self) -> str:
        return f"EvaluationSet(path={self.path!r}, queries={len(self)}, version={self.version!r})"

    @property
    def query_ids(self) -> list[str]:
        """The query ids, in first-seen order."""
        return list(self._rows)

    @property
    def rows(self) -> Mapping[str, int]:
        """Query id -> its row: its position in `query_ids` (callers must not mutate it)."""
        return self._rows

    def grades(self, query_id: str) -> Mapping[str, int]:
        """Doc id -> grade of one query (read-only); `KeyError` for an unknown query."""
        return MappingProxyType(self._grades[query_id])

    def grade_dict(self, query_id: str) -> dict[str, int]:
        """The query's own dict, for hot loops that call `.get` (callers must not mutate it)."""
        return self._grades[query_id]

    def ideal_grades(self, query_id: str) -> tuple[int, ...]:
        """The query's grades >= 0, highest first (relevant docs not retrieved included)."""
        return self._ideal[query_id]

    def num_rel(self, query_id: str, level: int = 1) -> int:
        """Number of the query's judged docs with grade >= `level` (trec_eval num_rel, V3)."""
        return sum(1 for grade in self._ideal[query_id] if grade >= level)

    def source_of(self, query_id: str, doc_id: str) -> str | None:
        """Who graded the document for the query (None: nobody)."""
        if query_id not in self._rows or doc_id not in self._grades[query_id]:
            return None
        return self._sources.get((query_id, doc_id), self.source)

    @property
    def sources(self) -> Mapping[tuple[str, str], str]:
        """The grades whose source is not the set's `source` (read-only by convention)."""
        return self._sources

    @property
    def num_judgments(self) -> int:
        """Total number of (query, doc) judgments."""
        return sum(len(docs) for docs in self._grades.values())


def _ideal_of(docs: Mapping[str, int]) -> tuple[int, ...]:
    grades = sorted(docs.values(), reverse=True)
    while grades and grades[-1] < 0:  # negative grades sort last: judged, never ideal
        grades.pop()
    return tuple(grades)


def _content_hash(grades: Mapping[str, Mapping[str, int]]) -> str:
    # One update of the whole canonical text: the same digest as a line at a time, faster.
    lines = [
        f"{qid}\t{doc}\t{docs[doc]}\n"
        for qid, docs in sorted(grades.items())
        for doc in sorted(docs)
    ]
    return hashlib.sha256("".join(lines).encode()).hexdigest()[:12]


def load_evaluation_set(
    path: str | Path, *, source: str = FILE_SOURCE, keep: Collection[str] = ()
) -> EvaluationSet:
    """Read TREC qrels or JSON Lines; any bad line raises `InputError` naming file and line.

    `source`: the file's grades' source where a line names none; `keep`: only the grades of
    these sources (none: all)."""
    name = str(path)
    data = _read_bytes(name)
    json_lines = name.endswith(_JSON_SUFFIXES)
    if keep and not json_lines and source not in keep:
        raise InputError(
            name, f"its grades are {source!r}'s, not of the sources kept {sorted(keep)}"
        )
    if not json_lines and native.speedups_active():
        index = native.speedups.JudgmentIndex.from_qrels(data)
        if index is not None:
            return EvaluationSet.of_index(index, name, source)
    text = _decode(name, data)
    parse_line = _json_line if json_lines else _trec_line
    grades: dict[str, dict[str, int]] = {}
    sources: dict[tuple[str, str], str] = {}
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or (parse_line is _trec_line and stripped.startswith("#")):
            continue
        try:
            qid, doc, grade, named = parse_line(stripped)
        except ValueError as error:
            raise InputError(name, str(error), number) from None
        graded_by = named or source
        if keep and graded_by not in keep:
            continue
        if named and named != source:
            sources[(qid, doc)] = named
        docs = grades.get(qid)
        if docs is None:
            docs = grades[qid] = {}
        elif doc in docs:
            first = _first_line(lines, parse_line, qid, doc)
            raise InputError(
                name,
                f"duplicate judgment for query {qid!r} doc {doc!r} (first at line {first})",
                number,
            )
        docs[doc] = grade
    if not grades:
        kept = f" of the sources kept {sorted(keep)}" if keep else ""
        raise InputError(name, f"holds no judgments{kept}")
    return EvaluationSet(grades, name, own=True, source=source, sources=sources)


def _first_line(
    lines: list[str], parse_line: Callable[[str], tuple[str, str, int, str]], qid: str, doc: str
) -> int:
    # Only a duplicate needs the first line, so it is found again rather than kept for all.
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and parse_line(stripped)[:2] == (qid, doc):
            return number
    raise AssertionError("a duplicate has a first line")


def _read_bytes(name: str) -> bytes:
    try:
        return Path(name).read_bytes()
    except OSError as error:
        raise InputError.unreadable(name, "judgments", error) from None


def _decode(name: str, data: bytes) -> str:
    try:
        # As read_text does: universal newlines ("\r\n" and "\r" end a line).
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as error:
        raise InputError.unreadable(name, "judgments", error) from None


def _trec_line(line: str) -> tuple[str, str, int, str]:
    fields = line.split()
    if len(fields) != 4:
        raise ValueError(f"expected 4 fields 'qid iter docno grade', got {len(fields)}")
    qid, _, doc, grade = fields
    # int() alone would also take "1_0" and non-ASCII digits.
    if not (grade.isascii() and grade.isdigit()) and not _INTEGER.fullmatch(grade):
        raise ValueError(f"grade {grade!r} is not an integer")
    return qid, doc, _check_range(int(grade)), ""


def _json_line(line: str) -> tuple[str, str, int, str]:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise ValueError(f"invalid JSON: {error}") from None
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object")
    for field in ("query_id", "doc_id", "grade"):
        if field not in record:
            raise ValueError(f"missing field {field!r}")
    qid, doc, grade = record["query_id"], record["doc_id"], record["grade"]
    if not isinstance(qid, str) or not isinstance(doc, str) or not qid or not doc:
        raise ValueError("query_id and doc_id must be non-empty strings")
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise ValueError(f"grade {grade!r} is not an integer")
    source = record.get("source", "")
    if not isinstance(source, str) or len(source.encode()) > MAX_SOURCE_BYTES:
        raise ValueError(f"source must be a string of at most {MAX_SOURCE_BYTES} bytes")
    return qid, doc, _check_range(grade), source


def _check_range(grade: int) -> int:
    if grade not in GRADE_RANGE:
        raise ValueError(f"grade {grade} is out of range (a 32-bit signed integer)")
    return grade
