"""Judgments from the judgments topic, checked, and the evaluation set they make with the file's.

A judgment record's value is one JSON object:

    {"query_id": "q1", "doc_id": "d7", "grade": 2, "source": "human", "judged_at": 1767225600000}

`source` names who graded: `human` (or `human:<who>`) for a person, anything else for a
model, by convention `llm:<model>@<prompt>`. `judged_at` (epoch milliseconds) is optional: the
record's timestamp stands in. Key it as the to-judge record was (`["q1", "d7"]`), so every
judgment of a pair is on one partition, read in the order it was written.

A judgment is held to the limits of an event (`monitor.limits`): its ids to
`events.max_id_bytes`, its `judged_at` to the clock plus `events.max_future` and to its record
timestamp plus `windows.max_clock_skew`.

`JudgmentBook.add` decides each one, in the order read:

- refused (dead-lettered, reason in `rankmon-reason`): `invalid_judgment` (not such an
  object, or an id too long), `judged_in_future` (its `judged_at` past the limits),
  `source_not_allowed` (`judging.sources_allowed` names patterns, and none matches: a writer
  cannot call itself `human`), `unknown_query` (not a query of the evaluation set's file),
  `unknown_grade` (not one of `judging.grades`), `conflicting_grade` (another source of the
  same kind, or the file, already gave the pair another grade), `superseded` (the same source
  graded the pair later: an old judgment sent again does not undo a newer one),
  `too_many_judgments` (`judging.max_judgments` grades are kept already: the memory of the
  book is bounded whatever the topic holds);
- `accepted`: the pair's grade from now on. The same source grading a pair again (judged no
  earlier) corrects its grade; a person's grade takes the place of a model's;
- `audit`: a model's grade of a pair a person graded (the file or the topic): kept beside the
  person's, never scored. Each such pair joins `pairs`, the audit the judges are held to
  (`monitor.stats.judges.judge_reading`).

The file's grades have its source (`evaluation_set.source`, by default `qrels`, a person's).
`merged()` is the evaluation set the monitor scores with: the file's judgments and the
accepted ones of the sources kept (`evaluation_set.sources`; a new version when they add or
change a grade), each grade with its source.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Final, NamedTuple

import orjson

from monitor.judging.settings import JudgingConfig
from monitor.kafka.consumer import SourceRecord
from monitor.limits import RecordLimits
from monitor.scoring.evalset import FILE_SOURCE, GRADE_RANGE, EvaluationSet

__all__ = [
    "Judgment",
    "JudgmentBook",
    "Refusal",
    "decode_judgment",
    "is_person",
]

MAX_SOURCE_BYTES: Final = 256

ACCEPTED: Final = "accepted"
AUDIT: Final = "audit"


@dataclass(frozen=True, slots=True)
class Judgment:
    """One grade of one (query, document), by one source, and where it was read."""

    query_id: str
    doc_id: str
    grade: int
    source: str
    judged_at_ms: int
    partition: int = -1
    offset: int = -1

    def provenance(self) -> dict[str, object]:
        """Its line in the provenance file (`rankmon judgments export`)."""
        return {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "grade": self.grade,
            "source": self.source,
            "judged_at": self.judged_at_ms,
            "partition": self.partition,
            "offset": self.offset,
        }


class Refusal(NamedTuple):
    """Why a judgment record was refused: its dead-letter reason and a line of detail."""

    reason: str
    detail: str


def is_person(source: str) -> bool:
    """Whether a source is a person's (`human`, `human:<who>`, the file's)."""
    return source in ("human", FILE_SOURCE) or source.startswith("human:")


def decode_judgment(record: SourceRecord, limits: RecordLimits, now_ms: int) -> Judgment | Refusal:
    """A judgment record's value as a `Judgment`, or why it is not one (read at `now_ms`)."""
    max_id_bytes = limits.max_id_bytes
    try:
        value = orjson.loads(record.value)
    except orjson.JSONDecodeError as error:
        return Refusal("invalid_judgment", f"invalid JSON: {error}")
    if not isinstance(value, dict):
        return Refusal("invalid_judgment", "expected a JSON object")
    missing = [name for name in ("query_id", "doc_id", "grade", "source") if name not in value]
    if missing:
        return Refusal("invalid_judgment", f"missing field {missing[0]!r}")
    query, doc, grade, source = value["query_id"], value["doc_id"], value["grade"], value["source"]
    for name, text, limit in (
        ("query_id", query, max_id_bytes),
        ("doc_id", doc, max_id_bytes),
        ("source", source, MAX_SOURCE_BYTES),
    ):
        if not isinstance(text, str) or not text:
            return Refusal("invalid_judgment", f"{name} must be a non-empty string")
        if len(text.encode()) > limit:
            return Refusal("invalid_judgment", f"{name} is longer than {limit} bytes")
    if type(grade) is not int or grade not in GRADE_RANGE:
        return Refusal("invalid_judgment", f"grade {grade!r} is not a 32-bit integer")
    judged_at = value.get("judged_at", record.timestamp_ms)
    if type(judged_at) is not int:
        return Refusal("invalid_judgment", "judged_at must be epoch milliseconds")
    ahead = limits.time_refusal(judged_at, record.timestamp_ms, now_ms)
    if ahead is not None:
        return Refusal("judged_in_future", f"judged_at is {ahead}")
    # One string per source, however many judgments name it.
    source = sys.intern(source)
    return Judgment(query, doc, grade, source, judged_at, record.partition, record.offset)


class JudgmentBook:
    """The judgments read so far, over the evaluation set's file (module docstring)."""

    def __init__(
        self,
        base: EvaluationSet,
        grades: tuple[int, ...] = (),
        keep: Collection[str] = (),
        *,
        max_judgments: int = 250_000,
        allowed: Collection[str] = (),
    ) -> None:
        """`keep`: the sources whose grades score; `allowed`: the source patterns a judgment
        may name (none: any); `max_judgments`: grades kept at most, accepted and audit."""
        self.base = base
        self.max_judgments = max_judgments
        self.allowed = tuple(allowed)
        self.keep = frozenset(keep)  # the sources whose grades score (none: all)
        self.grades = frozenset(grades) if grades else frozenset(base.code_grades or ())
        self._own_grades = not grades
        self.in_effect: dict[tuple[str, str], Judgment] = {}
        self.audit: dict[tuple[str, str], list[Judgment]] = {}
        # The audit in the order read: (model source, person's grade, model's grade) of each
        # pair a model and a person both graded.
        self.pairs: list[tuple[str, int, int]] = []
        self._merged: EvaluationSet | None = base

    def rebase(self, base: EvaluationSet) -> None:
        """The file was reloaded: merge over the new one. A judgment the file now grades
        otherwise leaves the set (the file wins), kept aside as an audit grade if a model's."""
        self.base = base
        if self._own_grades:
            self.grades = frozenset(base.code_grades or ())
        for key, judgment in list(self.in_effect.items()):
            if key[0] not in base or key[1] in base.grades(key[0]):
                del self.in_effect[key]
                if not is_person(judgment.source) and key[0] in base:
                    self._set_aside(key, judgment, base.grades(key[0])[key[1]])
        self._merged = None

    @classmethod
    def for_config(
        cls, config: JudgingConfig, base: EvaluationSet, keep: Collection[str] = ()
    ) -> JudgmentBook:
        """The book of the `judging` settings: their grades, cap and allowed sources."""
        return cls(
            base,
            config.grades,
            keep,
            max_judgments=config.max_judgments,
            allowed=config.sources_allowed,
        )

    @property
    def kept(self) -> int:
        """The grades kept from the topic: the accepted ones and the audit's."""
        return len(self.in_effect) + len(self.pairs)

    def add(self, judgment: Judgment) -> str | Refusal:
        """Decide one judgment: `accepted`, `audit`, or its `Refusal`."""
        query, doc, grade = judgment.query_id, judgment.doc_id, judgment.grade
        if self.allowed and not any(
            fnmatch.fnmatchcase(judgment.source, pattern) for pattern in self.allowed
        ):
            return Refusal(
                "source_not_allowed",
                f"source {judgment.source[:80]!r} matches no pattern of judging.sources_allowed",
            )
        if query not in self.base:
            return Refusal("unknown_query", f"query {query!r} is not in the evaluation set")
        if grade not in self.grades:
            allowed = ", ".join(str(g) for g in sorted(self.grades))
            return Refusal("unknown_grade", f"grade {grade} is not one of {allowed}")
        key = (query, doc)
        filed = self.base.grades(query).get(doc)
        if filed is not None:
            return self._beside(key, judgment, self.base.source_of(query, doc) or "", filed)
        standing = self.in_effect.get(key)
        if standing is not None and standing.source == judgment.source:
            if judgment.judged_at_ms < standing.judged_at_ms:
                return _superseded(judgment, standing)
            return self._take(key, judgment, standing)
        if standing is None:
            return self._full() or self._take(key, judgment, standing)
        if is_person(judgment.source) and not is_person(standing.source):
            self._set_aside(key, standing, judgment.grade)
            return self._take(key, judgment, standing)
        return self._beside(key, judgment, standing.source, standing.grade)

    def _full(self) -> Refusal | None:
        """`too_many_judgments` when `max_judgments` grades are kept already."""
        if self.kept < self.max_judgments:
            return None
        return Refusal(
            "too_many_judgments",
            f"judging.max_judgments ({self.max_judgments}) grades are kept already",
        )

    def _beside(
        self, key: tuple[str, str], judgment: Judgment, source: str, grade: int
    ) -> str | Refusal:
        """A grade of a pair `source` graded `grade` already, which stays."""
        if not is_person(judgment.source) and is_person(source):
            earlier = next(
                (j for j in self.audit.get(key, ()) if j.source == judgment.source), None
            )
            if earlier is not None:
                if judgment.judged_at_ms < earlier.judged_at_ms:
                    return _superseded(judgment, earlier)
                if earlier.grade == judgment.grade:
                    return AUDIT  # the same grade again: the audit has it
            refusal = self._full()
            if refusal is not None:
                return refusal
            self._set_aside(key, judgment, grade, earlier)
            return AUDIT
        if judgment.grade != grade:
            return Refusal(
                "conflicting_grade",
                f"{source} graded query {key[0]!r} doc {key[1]!r} {grade}, "
                f"{judgment.source} {judgment.grade}",
            )
        return ACCEPTED

    def _set_aside(
        self, key: tuple[str, str], model: Judgment, person: int, earlier: Judgment | None = None
    ) -> None:
        """A model's grade beside a person's `person`: kept for the audit, never scored
        (in place of `earlier`, the same model's older grade of the pair)."""
        kept = self.audit.setdefault(key, [])
        if earlier is not None:
            kept.remove(earlier)
        kept.append(model)
        self.pairs.append((model.source, person, model.grade))

    def _take(self, key: tuple[str, str], judgment: Judgment, standing: Judgment | None) -> str:
        self.in_effect[key] = judgment
        if standing is None or standing.grade != judgment.grade:
            self._merged = None
        return ACCEPTED

    def merged(self) -> EvaluationSet:
        """The file's judgments and the accepted ones, as one evaluation set."""
        if self._merged is None:
            scoring = [
                (key, judgment)
                for key, judgment in self.in_effect.items()
                if not self.keep or judgment.source in self.keep
            ]
            if not scoring:
                self._merged = self.base
            else:
                base = self.base
                grades = {qid: dict(base.grades(qid)) for qid in base}
                sources = dict(base.sources)
                for (query, doc), judgment in scoring:
                    grades[query][doc] = judgment.grade
                    sources[(query, doc)] = judgment.source
                self._merged = EvaluationSet(
                    grades, base.path, own=True, source=base.source, sources=sources
                )
        return self._merged

    def provenance(self) -> Iterator[dict[str, object]]:
        """Where each grade of the merged set came from, then the audit grades set aside:
        one dict per grade (the file's with source `qrels`)."""
        for query in self.base:
            for doc, grade in self.base.grades(query).items():
                source = self.base.source_of(query, doc)
                yield {"query_id": query, "doc_id": doc, "grade": grade, "source": source}
        for judgment in self.in_effect.values():
            yield judgment.provenance()
        for judgments in self.audit.values():
            for judgment in judgments:
                yield {**judgment.provenance(), "audit": True}


def _superseded(judgment: Judgment, standing: Judgment) -> Refusal:
    return Refusal(
        "superseded",
        f"{judgment.source[:80]} graded query {judgment.query_id[:80]!r} doc "
        f"{judgment.doc_id[:80]!r} later (judged_at {standing.judged_at_ms} > "
        f"{judgment.judged_at_ms})",
    )
