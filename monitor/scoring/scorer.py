"""The vectorised engine: many rankings at once, the numbers the test oracle defines.

`Scorer(evaluation_set, keys).score(query_ids, rankings)` returns one row per ranking and
one column per measure key (float64). Conventions are docs/metrics.md's (trec_eval
10.0): rankings are already in rank order, IDCG comes from every judged document of the query,
a document not in the evaluation set gains 0 and is not relevant.

How it is fast. The doc id -> grade lookup is the only per-document Python work: each query's
judgments are kept as a dict doc -> grade code (1..255; 0: not judged), so a ranking becomes
`bytes(map(codes.get, ranking, repeat(0)))`, a loop that runs in C, and a whole poll becomes
one uint8 matrix. Gains, relevance and judged flags are then tiny per-code tables, and every
measure is a cumulative sum along the ranks. Only the first max(k) documents are looked up
unless a key needs the whole ranking (mrr, map, nDCG without cutoff, num_rel_ret). The ideal
DCG at every (gain, cutoff) the keys use is computed once per query at construction.
With the C accelerators (`monitor.native`) the lookup is a per-query hash table in C (the
evaluation set's `JudgmentIndex`), the ideals and the columns come from the C kernel
(`monitor.scoring.plan`), bit for bit the numpy ones; the dicts and numpy columns above are
then what the C path is tested against.

A ranking with inline `extra_judgments` (grades for documents the evaluation set has not
judged) has its ideal DCG and num_rel recomputed from the evaluation set's judgments plus
those grades. With the C accelerators that stays on the coded path: `JudgmentIndex.inline_codes`
lays the inline grades' codes over the unjudged documents and returns the codes of the grades
added to each ideal ranking; `MeasurePlan.ideals_with` recomputes those rankings' ideals in C
(bit for bit what `QueryIdeals.of_matrix` gives) and the C kernel scores every ranking. An
inline grade the code table lacks gets the next free code (the plan is remade); past 255
codes, and without the accelerators, the general path below (codes made per call) decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import islice, repeat
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from monitor.scoring.catalog import MeasureKey, ideal_specs, lookup_depth, reads_counts, top_spec
from monitor.scoring.columns import (
    CHUNK_ROWS,
    NO_GRADE,
    CodeTables,
    GradeCounts,
    IdcgZero,
    QueryIdeals,
    RankedCodes,
    grade_counts,
    padded_grades,
    top_gains,
)
from monitor.scoring.engines import measure_matrix
from monitor.scoring.evalset import MAX_CODES, EvaluationSet
from monitor.scoring.gain import Gain
from monitor.scoring.plan import MeasurePlan, query_ideals

if TYPE_CHECKING:
    from monitor._speedups import JudgmentIndex

__all__ = ["Scorer"]

Floats = npt.NDArray[np.float64]
Int64s = npt.NDArray[np.int64]
CodeLookup = Callable[[str, int], int]
ExtraJudgments = Sequence[Mapping[str, int | None] | None]

# One shared infinite iterator: `map` stops at the ranking's end, so every call can use it.
_NO_CODES: Final = repeat(0)
_MAX_INLINE_GRADE: Final = 65_535  # a larger inline grade takes the general path


class Scorer:
    """Scores many rankings at once, of one evaluation set, for a fixed list of measure keys.

    `relevance_level` applies to the binary measures (precision, recall, mrr, map, num_rel,
    num_rel_ret), never to nDCG/DCG. `idcg_zero="exclude"` gives NaN nDCG for a query whose ideal
    DCG is 0, so that callers can leave it out of means; "zero" (trec_eval) gives 0.
    """

    def __init__(
        self,
        evaluation_set: EvaluationSet,
        keys: Sequence[MeasureKey],
        relevance_level: int = 1,
        idcg_zero: IdcgZero = "zero",
        *,
        speedups: bool = True,
    ) -> None:
        if idcg_zero not in ("zero", "exclude"):
            raise ValueError(f"idcg_zero must be 'zero' or 'exclude', got {idcg_zero!r}")
        if relevance_level < 0:
            raise ValueError(f"relevance_level must be >= 0, got {relevance_level}")
        self.evaluation_set = evaluation_set
        self.keys = tuple(keys)
        self.relevance_level = relevance_level
        self.idcg_zero: IdcgZero = idcg_zero
        self._specs = ideal_specs(self.keys)
        self._top = top_spec(self.keys)  # each query's highest gains the keys read
        self._counts = reads_counts(self.keys)  # each query's judged documents per grade
        self._gains = tuple(dict.fromkeys(k.gain for k in self.keys if k.gain is not None))
        self._depth = lookup_depth(self.keys)
        self._qids = evaluation_set.query_ids
        self._rows = evaluation_set.rows
        self._code_lookups: list[CodeLookup] = []
        self._code_grades: list[int] = [NO_GRADE]  # grade of each code; code 0: not judged
        self._inline_table = b""  # grade -> code for inline grades (0: no code yet)
        self._ideal_codes: tuple[Int64s, npt.NDArray[np.uint8], int] | None = None
        self._tables, self.judgment_index = self._grade_codes(speedups)
        self._queries = self._query_ideals()
        # The C index comes only with code tables, so the C kernel's plan comes with it.
        self._plan: MeasurePlan | None = None
        if self.judgment_index is not None and self._tables is not None:
            self._plan = MeasurePlan.of(self.keys, self._tables, self._queries, idcg_zero)

    @property
    def inline_grade_codes(self) -> bytes:
        """grade -> code (one byte each, 0: none yet) for the C decoder's inline judgments."""
        return self._inline_table

    @property
    def lookup_depth(self) -> int | None:
        """How many leading documents of a ranking the keys read; None: all of them."""
        return self._depth

    def _grade_codes(self, speedups: bool) -> tuple[CodeTables | None, JudgmentIndex | None]:
        """Each query's doc -> grade code (1..255): the evaluation set's C index, or dict
        lookups; and the codes' tables. None, None with more than 255 grades."""
        grades = self.evaluation_set.code_grades
        if grades is None:
            return None, None
        index = self.evaluation_set.judgment_index() if speedups else None
        if index is None:
            code_of = self.evaluation_set.grade_codes
            assert code_of is not None  # as code_grades is not
            judgments = (self.evaluation_set.grade_dict(qid) for qid in self._qids)
            coded = [{doc: code_of[g] for doc, g in docs.items()} for docs in judgments]
            self._code_lookups = [codes.get for codes in coded]
        self._code_grades = [NO_GRADE, *grades]
        self._inline_table = _inline_table(self._code_grades)
        return self._code_tables(), index

    def _query_ideals(self) -> QueryIdeals:
        """Each query's IDCG columns and num_rel: in C from the index's ideal codes, or from
        the evaluation set's ideal grades (numpy, bit for bit the same)."""
        if self.judgment_index is None or self._tables is None:
            ideal_grades = [self.evaluation_set.ideal_grades(qid) for qid in self._qids]
            return QueryIdeals.of(
                ideal_grades, self._specs, self.relevance_level, self._top, counts=self._counts
            )
        offsets, codes, longest = self._ideal_code_lists()
        ideals = query_ideals(self._tables, self._specs, offsets, codes, longest=longest)
        rows = np.arange(len(offsets) - 1, dtype=np.int64)
        none_added = np.zeros(len(rows), np.int64)
        if self._top[1]:
            ideals = replace(ideals, top=self._top_of_codes(rows, b"", none_added))
        if self._counts:
            ideals = replace(ideals, counts=self._counts_of_codes(rows, b"", none_added))
        return ideals

    def _ideal_grades(self, rows: Int64s, added: bytes, added_counts: Int64s) -> Iterator[Int64s]:
        """Per ranking (query `rows[i]`): the grades of its query's ideal codes and its next
        `added_counts[i]` codes of `added` (the C paths' ideal rankings)."""
        offsets, codes, _ = self._ideal_code_lists()
        grade_of = np.array(self._code_grades, dtype=np.int64)
        extra = np.frombuffer(added, dtype=np.uint8)
        ends = np.cumsum(added_counts).tolist()
        for q, n, e in zip(rows.tolist(), added_counts.tolist(), ends, strict=True):
            yield grade_of[np.concatenate((codes[offsets[q] : offsets[q + 1]], extra[e - n : e]))]

    def _counts_of_codes(
        self, rows: Int64s, added: bytes, added_counts: Int64s
    ) -> tuple[GradeCounts, ...]:
        """Per ranking: the `GradeCounts` of its ideal grades (`QueryIdeals.counts`)."""
        grades = self._ideal_grades(rows, added, added_counts)
        return tuple(grade_counts(ranking.tolist()) for ranking in grades)

    def _top_of_codes(self, rows: Int64s, added: bytes, added_counts: Int64s) -> dict[Gain, Floats]:
        """Per ranking: the highest gains (`QueryIdeals.top`) of its ideal grades."""
        gains, depth = self._top
        top = {gain: np.empty((len(rows), depth)) for gain in gains}
        grades = self._ideal_grades(rows, added, added_counts)
        for start in range(0, len(rows), CHUNK_ROWS):
            lists = list(islice(grades, CHUNK_ROWS))
            for gain, values in top_gains(padded_grades(lists), self._top).items():
                top[gain][start : start + len(lists)] = values
        return top

    def _code_tables(self) -> CodeTables:
        table = np.array(self._code_grades, dtype=np.int64)
        scale = self.evaluation_set.grade_scale
        return CodeTables.of(table, self._gains, self.relevance_level, scale)

    def score(
        self,
        query_ids: Sequence[str],
        rankings: Sequence[Sequence[str]],
        extra_judgments: ExtraJudgments | None = None,
    ) -> Floats:
        """One row per ranking, one column per key, in the order of `self.keys`.

        Every query id must be in the evaluation set (`ValueError` otherwise); doc ids within
        a ranking must be unique (not checked here: events and run files check it). An empty
        ranking scores 0 on every measure while num_rel still counts: `rankmon eval -c` can
        score queries missing from the run that way. `extra_judgments[i]` (doc -> grade, or
        None for no grade) adds grades for documents the evaluation set has not judged.
        """
        if len(query_ids) != len(rankings):
            raise ValueError("query_ids and rankings differ in length")
        if extra_judgments is not None and len(extra_judgments) != len(rankings):
            raise ValueError("extra_judgments and rankings differ in length")
        out = np.empty((len(rankings), len(self.keys)), dtype=np.float64)
        for start in range(0, len(rankings), CHUNK_ROWS):
            stop = start + CHUNK_ROWS
            extra = None if extra_judgments is None else extra_judgments[start:stop]
            out[start:stop] = self._score_chunk(query_ids[start:stop], rankings[start:stop], extra)
        return out

    def _score_chunk(
        self,
        query_ids: Sequence[str],
        rankings: Sequence[Sequence[str]],
        extra_judgments: ExtraJudgments | None,
    ) -> Floats:
        rows = self.query_rows(query_ids)
        if extra_judgments is not None and self._plan is not None and any(extra_judgments):
            inline = self._score_inline(rows, rankings, extra_judgments)
            if inline is not None:
                return inline
        extra = self._new_judgments(rows, extra_judgments)
        if not extra:
            return self._score_known(rows, rankings)
        out = np.empty((len(rankings), len(self.keys)), dtype=np.float64)
        known = [i for i in range(len(rankings)) if i not in extra]
        if known:
            out[known] = self._score_known([rows[i] for i in known], [rankings[i] for i in known])
        merged = [{**extra[i], **self._judgments(rows[i])} for i in extra]
        ideals = QueryIdeals.of(
            [[g for g in m.values() if g >= 0] for m in merged],
            self._specs,
            self.relevance_level,
            self._top,
            counts=self._counts,
        )
        out[list(extra)] = self._score_grades(merged, [rankings[i] for i in extra], ideals)
        return out

    def _score_inline(
        self, rows: Sequence[int], rankings: Sequence[Sequence[str]], extra: ExtraJudgments
    ) -> Floats | None:
        """The coded path for rankings with inline grades; None leaves them to the general one."""
        index = self.judgment_index
        assert index is not None
        depth = -1 if self._depth is None else self._depth
        coded = index.inline_codes(rows, rankings, depth, extra, self._inline_table)
        if coded is None:  # a grade without a code yet, or a mapping that is not a dict
            extras = [e if e is None or type(e) is dict else dict(e) for e in extra]
            self._code_inline_grades(extras)
            coded = index.inline_codes(rows, rankings, depth, extras, self._inline_table)
        if coded is None:
            return None
        codes, lengths, added, added_counts = coded
        return self.score_coded(rows, codes, lengths, added, added_counts)

    def _code_inline_grades(self, extras: ExtraJudgments) -> bool:
        """Give every inline grade of `extras` a code; False when that cannot be done."""
        grades = {g for e in extras if e for g in e.values() if g is not None}
        if not all(type(g) is int and 0 <= g <= _MAX_INLINE_GRADE for g in grades):
            return False
        new = sorted(grades.difference(self._code_grades))
        if not new or len(self._code_grades) - 1 + len(new) > MAX_CODES:
            return False
        self._code_grades.extend(new)
        self._inline_table = _inline_table(self._code_grades)
        self._tables = self._code_tables()
        self._plan = MeasurePlan.of(self.keys, self._tables, self._queries, self.idcg_zero)
        return True

    def _ideal_code_lists(self) -> tuple[Int64s, npt.NDArray[np.uint8], int]:
        """Each query's ideal grades (>= 0) as codes, concatenated; where each query's start;
        and the longest query's count (from the C index)."""
        if self._ideal_codes is None:
            assert self.judgment_index is not None
            offset_bytes, code_bytes = self.judgment_index.ideal_codes()
            offsets = np.frombuffer(offset_bytes, dtype=np.int64)
            codes = np.frombuffer(code_bytes, dtype=np.uint8)
            self._ideal_codes = (offsets, codes, int(np.diff(offsets).max(initial=0)))
        return self._ideal_codes

    def query_rows(self, query_ids: Sequence[str]) -> list[int]:
        """The evaluation-set rows of these queries (what `score_coded` takes)."""
        try:
            return [self._rows[qid] for qid in query_ids]
        except KeyError as error:
            raise ValueError(f"query {error.args[0]!r} is not in the evaluation set") from None

    def _judgments(self, row: int) -> dict[str, int]:
        return self.evaluation_set.grade_dict(self._qids[row])

    def _new_judgments(
        self, rows: Sequence[int], extra_judgments: ExtraJudgments | None
    ) -> dict[int, dict[str, int]]:
        """Per ranking index: the inline grades of documents the evaluation set has not judged."""
        found: dict[int, dict[str, int]] = {}
        for i, extra in enumerate(extra_judgments or ()):
            if extra:
                known = self._judgments(rows[i])
                new = {d: g for d, g in extra.items() if g is not None and d not in known}
                if new:
                    found[i] = new
        return found

    def _width(self, rankings: Sequence[Sequence[str]]) -> int:
        longest = max(map(len, rankings), default=0)
        return longest if self._depth is None else min(longest, self._depth)

    def _score_known(self, rows: Sequence[int], rankings: Sequence[Sequence[str]]) -> Floats:
        """Rankings judged by the evaluation set alone: the one-byte-code fast path."""
        ideals = self._queries.take(np.asarray(rows, dtype=np.int64))
        if self._tables is None:
            return self._score_grades([self._judgments(r) for r in rows], rankings, ideals)
        if self.judgment_index is not None:
            depth = -1 if self._depth is None else self._depth
            flat, lengths = self.judgment_index.codes(rows, rankings, depth)
            return self.score_coded(rows, flat, lengths)
        width = self._width(rankings)
        code_of = self._code_lookups
        # bytes(map(dict.get, ...)) runs in C; codes are small ints, 0 for an unjudged doc.
        if self._depth is None:
            parts = [
                bytes(map(code_of[q], r, _NO_CODES)) for q, r in zip(rows, rankings, strict=True)
            ]
        else:
            parts = [
                bytes(map(code_of[q], r[:width], _NO_CODES))
                for q, r in zip(rows, rankings, strict=True)
            ]
        codes = RankedCodes.from_parts(parts, width, rankings)
        return measure_matrix(self.keys, codes, self._tables, ideals, self.idcg_zero)

    def score_coded(
        self,
        rows: Sequence[int],
        codes: bytes,
        lengths: Sequence[int],
        added: bytes = b"",
        added_counts: Sequence[int] | None = None,
    ) -> Floats:
        """Rankings the C decoder already turned into grade codes (`monitor.native`).

        `rows` are evaluation-set rows (`judgment_index.row_of`), `codes` the codes of each
        ranking's first `lookup_depth` documents (all when None) concatenated, `lengths` the
        full ranking lengths. `added` holds the codes of inline grades each ranking adds to its
        query's ideal ranking, `added_counts[i]` how many are ranking i's. Same rows and
        columns as `score`.
        """
        if self._plan is None:
            raise ValueError(
                "coded rankings need the C accelerators and an evaluation set of at most 255 grades"
            )
        full = np.asarray(lengths, dtype=np.int64)
        taken = full if self._depth is None else np.minimum(full, self._depth)
        query_rows = np.asarray(rows, dtype=np.int64)
        if not added:
            return self._plan.measure(codes, taken, full, query_rows)
        counts = np.asarray(added_counts, dtype=np.int64)
        offsets, ideal_codes, longest = self._ideal_code_lists()
        ideals = self._plan.ideals_with(
            offsets, ideal_codes, query_rows, added, counts, longest=longest + int(counts.max())
        )
        if self._top[1]:
            ideals = replace(ideals, top=self._top_of_codes(query_rows, added, counts))
        if self._counts:
            ideals = replace(ideals, counts=self._counts_of_codes(query_rows, added, counts))
        own_rows = np.arange(len(query_rows), dtype=np.int64)  # each ranking its own ideals
        return self._plan.measure(codes, taken, full, own_rows, ideals)

    def _score_grades(
        self,
        grade_dicts: Sequence[Mapping[str, int]],
        rankings: Sequence[Sequence[str]],
        ideals: QueryIdeals,
    ) -> Floats:
        """Any grades (inline judgments, many distinct grades): codes made per call."""
        width = self._width(rankings)
        flat = [
            grade
            for grades, r in zip(grade_dicts, rankings, strict=True)
            for grade in map(grades.get, r[:width], repeat(NO_GRADE))
        ]
        codes, table = RankedCodes.from_grades(flat, width, rankings)
        scale = self.evaluation_set.grade_scale
        tables = CodeTables.of(table, self._gains, self.relevance_level, scale)
        return measure_matrix(self.keys, codes, tables, ideals, self.idcg_zero)


def _inline_table(code_grades: Sequence[int]) -> bytes:
    """grade -> code (one byte each) for the grades 0..max that have a code; 0: none yet."""
    coded = [
        (grade, code) for code, grade in enumerate(code_grades) if 0 <= grade <= _MAX_INLINE_GRADE
    ]
    table = bytearray(max((grade for grade, _ in coded), default=-1) + 1)
    for grade, code in coded:
        table[grade] = code
    return bytes(table)
