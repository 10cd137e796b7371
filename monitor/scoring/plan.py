"""The measure keys of a `Scorer` as a plan for the C measure kernel.

`monitor/scoring/measure_kernel.c` computes, for rankings given as one-byte grade codes,
exactly what the numpy engine (`monitor.scoring.engines.measure_matrix`) computes: the same
operations in the same order, with the same discount table, so the values agree bit for bit
(tests/property/test_native_scoring.py). The plan is the keys turned into small arrays (kind, gain,
cutoff, ideal column per key) plus the code tables and the per-query ideals, made once per
scorer; `measure` then fills a (rankings x keys) matrix with no Python work per ranking. Keys
of a kind the kernel has no case for (`engines.in_c`) are computed by their numpy function
from the same codes.

`query_ideals` computes the per-query ideals themselves in C, from each query's ideal grade
codes (`JudgmentIndex.ideal_codes`), bit for bit what `QueryIdeals.of` gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from monitor.native import speedups
from monitor.scoring.catalog import KINDS, MeasureKey, head_depth
from monitor.scoring.columns import (
    CodeTables,
    GradeCounts,
    IdcgZero,
    IdealSpec,
    QueryIdeals,
    RankedCodes,
    discounts,
    pad_codes,
    scale_levels,
)
from monitor.scoring.engines import in_c, measure_matrix
from monitor.scoring.gain import LINEAR, Gain

__all__ = ["KernelTables", "MeasurePlan", "query_ideals"]

Floats = npt.NDArray[np.float64]
Int64s = npt.NDArray[np.int64]

_CODES: Final = 256


@dataclass(frozen=True)
class KernelTables:
    """The code tables and the IDCG columns (specs) as the C kernel reads them."""

    gain_list: tuple[Gain, ...]  # the gain rules, by row of `gains`
    gains: Floats  # (gains, 256)
    relevant: npt.NDArray[np.uint8]
    judged: npt.NDArray[np.uint8]
    specs: tuple[IdealSpec, ...]  # the IDCG columns, (gain, cutoff) each
    spec_gain: npt.NDArray[np.int32]  # per IDCG column: its row of `gains`
    spec_cutoff: Int64s  # per IDCG column: k, or -1 for the whole ideal ranking
    gain_order: npt.NDArray[np.uint8]  # (gains, 256): per gain, the codes by gain, highest first
    codes: int  # codes in use (the rest of each gain_order row is padding)
    levels: Floats  # (gains, 256): per gain, the scale's gains, highest first (bounds of nDCG)
    n_levels: npt.NDArray[np.int32]  # per gain: entries of its `levels` row

    @classmethod
    def of(cls, tables: CodeTables, specs: tuple[IdealSpec, ...]) -> KernelTables:
        gain_list = tuple(tables.gains)
        codes = len(tables.grades)
        if codes > _CODES:
            raise ValueError(f"{codes} grade codes do not fit in one byte")
        gains = np.zeros((len(gain_list), _CODES), dtype=np.float64)
        for row, gain in enumerate(gain_list):
            gains[row, :codes] = tables.gains[gain]
        relevant = np.zeros(_CODES, dtype=np.uint8)
        relevant[:codes] = tables.relevant
        judged = np.zeros(_CODES, dtype=np.uint8)
        judged[:codes] = tables.judged
        levels = np.zeros((len(gain_list), _CODES), dtype=np.float64)
        n_levels = np.zeros(len(gain_list), dtype=np.int32)
        for row, gain in enumerate(gain_list):
            scale = scale_levels(tables, gain)
            levels[row, : len(scale)] = scale
            n_levels[row] = len(scale)
        return cls(
            gain_list=gain_list,
            gains=gains,
            relevant=relevant,
            judged=judged,
            specs=specs,
            spec_gain=np.array([gain_list.index(gain) for gain, _ in specs], dtype=np.int32),
            spec_cutoff=np.array([-1 if k is None else k for _, k in specs], dtype=np.int64),
            gain_order=_gain_order(gains, codes),
            codes=codes,
            levels=levels,
            n_levels=n_levels,
        )

    def ideal_rows(
        self,
        offsets: Int64s,
        ideal_codes: npt.NDArray[np.uint8],
        rows: Int64s,
        added: bytes,
        added_counts: Int64s,
        *,
        longest: int,
        base: QueryIdeals | None,
    ) -> QueryIdeals:
        """`speedups.ideal_rows`: ranking i's ideals are its query's in `base` when it adds no
        code, else made from its query's ideal codes and its added ones; with no `base`, every
        ranking's are made from its codes."""
        ideal = np.empty((len(rows), len(self.specs)), dtype=np.float64)
        num_rel = np.empty(len(rows), dtype=np.int64)
        empty = np.empty(0, dtype=np.float64)
        speedups.ideal_rows(
            offsets,
            ideal_codes,
            rows,
            added,
            added_counts,
            spec_gain=self.spec_gain,
            spec_cutoff=self.spec_cutoff,
            gains=self.gains,
            order=self.gain_order,
            n_codes=self.codes,
            relevant=self.relevant,
            discounts=discounts(longest),
            base_ideal=empty if base is None else np.ascontiguousarray(base.ideal),
            base_num_rel=empty if base is None else np.ascontiguousarray(base.num_rel),
            out_ideal=ideal,
            out_num_rel=num_rel,
        )
        return QueryIdeals(self.specs, ideal, num_rel)


def query_ideals(
    tables: CodeTables,
    specs: tuple[IdealSpec, ...],
    offsets: Int64s,
    ideal_codes: npt.NDArray[np.uint8],
    *,
    longest: int,
) -> QueryIdeals:
    """Every query's IDCG columns and num_rel from its ideal codes: query q's are
    `ideal_codes[offsets[q]:offsets[q + 1]]`, the codes of its grades >= 0 in any order, at
    most `longest` of them. Bit for bit `QueryIdeals.of` on those grades."""
    queries = len(offsets) - 1
    return KernelTables.of(tables, specs).ideal_rows(
        offsets,
        ideal_codes,
        np.arange(queries, dtype=np.int64),
        b"",
        np.zeros(queries, dtype=np.int64),
        longest=longest,
        base=None,
    )


@dataclass(frozen=True)
class MeasurePlan:
    """What the kernel needs to know of the keys, the code tables and the queries."""

    kinds: npt.NDArray[np.int32]
    gain_of: npt.NDArray[np.int32]
    cutoffs: Int64s
    ideal_of: npt.NDArray[np.int32]
    tables: KernelTables
    ideals: Floats  # (queries, ideal columns), C order
    num_rel: Int64s
    when_zero: float
    head_depth: int | None
    in_c: tuple[int, ...]  # the columns the kernel computes, in key order
    in_numpy: tuple[int, ...]  # the other columns, in key order
    numpy_keys: tuple[MeasureKey, ...]  # their keys
    code_tables: CodeTables
    idcg_zero: IdcgZero
    top: Mapping[Gain, Floats] | None = None  # each query's highest gains (`QueryIdeals.top`)
    tops: Floats | None = None  # the kernel's layout of `top`: queries x gains x depth
    counts: tuple[GradeCounts, ...] | None = None  # each query's `QueryIdeals.counts`

    @classmethod
    def of(
        cls,
        keys: Sequence[MeasureKey],
        tables: CodeTables,
        queries: QueryIdeals,
        idcg_zero: IdcgZero,
    ) -> MeasurePlan:
        """The plan of `keys` over codes of `tables` and the queries' ideals."""
        kernel = KernelTables.of(tables, queries.specs)
        specs = queries.specs
        native_keys = [key for key in keys if in_c(key)]
        return cls(
            kinds=np.array([KINDS[key.kind].code for key in native_keys], dtype=np.int32),
            gain_of=np.array(
                [
                    kernel.gain_list.index(key.gain or LINEAR) if key.gain else 0
                    for key in native_keys
                ],
                dtype=np.int32,
            ),
            cutoffs=np.array(
                [-1 if key.k is None else key.k for key in native_keys], dtype=np.int64
            ),
            ideal_of=np.array(
                [
                    specs.index((key.gain, key.k)) if KINDS[key.kind].ideal else 0
                    for key in native_keys
                ],
                dtype=np.int32,
            ),
            tables=kernel,
            ideals=np.ascontiguousarray(queries.ideal, dtype=np.float64),
            num_rel=np.ascontiguousarray(queries.num_rel, dtype=np.int64),
            when_zero=0.0 if idcg_zero == "zero" else float("nan"),
            head_depth=head_depth(native_keys),
            in_c=tuple(column for column, key in enumerate(keys) if in_c(key)),
            in_numpy=tuple(column for column, key in enumerate(keys) if not in_c(key)),
            numpy_keys=tuple(key for key in keys if not in_c(key)),
            code_tables=tables,
            idcg_zero=idcg_zero,
            top=queries.top,
            tops=_kernel_tops(queries.top, kernel.gain_list, len(queries.num_rel)),
            counts=queries.counts,
        )

    def ideals_with(
        self,
        offsets: Int64s,
        ideal_codes: npt.NDArray[np.uint8],
        rows: Int64s,
        added: bytes,
        added_counts: Int64s,
        *,
        longest: int,
    ) -> QueryIdeals:
        """Per ranking (query `rows[i]`): its IDCG columns and num_rel, with its inline grades.

        A ranking's ideal ranking holds its query's ideal codes (`ideal_codes[offsets[q]:
        offsets[q + 1]]`) and its next `added_counts[i]` codes of `added`; with none added the
        values are its query's. They equal `QueryIdeals.of_matrix` on those grades bit for bit.
        `longest` bounds the length of any ideal ranking.
        """
        base = QueryIdeals(self.tables.specs, self.ideals, self.num_rel)
        return self.tables.ideal_rows(
            offsets, ideal_codes, rows, added, added_counts, longest=longest, base=base
        )

    def measure(
        self,
        codes: bytes,
        taken: Int64s,
        lengths: Int64s,
        rows: Int64s,
        ideals: QueryIdeals | None = None,
    ) -> Floats:
        """One row per ranking: `codes` holds the first `taken[i]` codes of each, in order.

        `rows` index the plan's per-query ideals, or `ideals` when given (a ranking whose
        inline judgments change its query's ideal ranking has a row of its own there).
        """
        ideal, num_rel, top, tops = self.ideals, self.num_rel, self.top, self.tops
        counts = self.counts
        if ideals is not None:
            counts = ideals.counts
            ideal = np.ascontiguousarray(ideals.ideal, dtype=np.float64)
            num_rel = np.ascontiguousarray(ideals.num_rel, dtype=np.int64)
            top = ideals.top
            tops = _kernel_tops(top, self.tables.gain_list, len(num_rel))
        columns = len(self.in_c) + len(self.in_numpy)
        out = np.empty((len(rows), columns), dtype=np.float64)
        kernel_out = out if not self.in_numpy else np.empty((len(rows), len(self.in_c)))
        if self.in_c:
            self._kernel(
                codes,
                taken=taken,
                lengths=lengths,
                rows=rows,
                ideal=ideal,
                num_rel=num_rel,
                tops=tops,
                out=kernel_out,
            )
        if not self.in_numpy:
            return out
        out[:, list(self.in_c)] = kernel_out
        specs = self.tables.specs
        queries = QueryIdeals(specs, ideal, num_rel, top, counts)
        queries = queries.take(np.asarray(rows, dtype=np.int64))
        width = int(taken.max(initial=0))
        flat = np.frombuffer(codes, dtype=np.uint8)
        ranked = RankedCodes(pad_codes(flat, taken, width), np.asarray(lengths, dtype=np.int64))
        out[:, list(self.in_numpy)] = measure_matrix(
            self.numpy_keys, ranked, self.code_tables, queries, self.idcg_zero
        )
        return out

    def _kernel(
        self,
        codes: bytes,
        *,
        taken: Int64s,
        lengths: Int64s,
        rows: Int64s,
        ideal: Floats,
        num_rel: Int64s,
        tops: Floats | None,
        out: Floats,
    ) -> None:
        width = int(taken.max(initial=0))
        head = width if self.head_depth is None else min(self.head_depth, width)
        speedups.measure_codes(
            codes,
            taken=np.ascontiguousarray(taken, dtype=np.int64),
            lengths=np.ascontiguousarray(lengths, dtype=np.int64),
            rows=np.ascontiguousarray(rows, dtype=np.int64),
            kinds=self.kinds,
            gain_of=self.gain_of,
            cutoffs=self.cutoffs,
            ideal_of=self.ideal_of,
            gains=self.tables.gains,
            relevant=self.tables.relevant,
            judged=self.tables.judged,
            discounts=discounts(head),
            ideals=ideal,
            n_ideals=ideal.shape[1],
            num_rel=num_rel,
            when_zero=self.when_zero,
            out=out,
            tops=b"" if tops is None else tops,
            top_depth=0 if tops is None else int(tops.shape[2]),
            levels=self.tables.levels,
            n_levels=self.tables.n_levels,
        )


def _kernel_tops(
    top: Mapping[Gain, Floats] | None, gain_list: Sequence[Gain], queries: int
) -> Floats | None:
    """`QueryIdeals.top` as the kernel reads it: queries x gain rules (in the kernel's order,
    zeros for a rule no upper-bound key uses) x depth, C order; None without it."""
    if not top:
        return None
    depth = int(next(iter(top.values())).shape[1])
    tops = np.zeros((queries, len(gain_list), depth), dtype=np.float64)
    for index, gain in enumerate(gain_list):
        if gain in top:
            tops[:, index, :] = top[gain]
    return tops


def _gain_order(gains: Floats, codes: int) -> npt.NDArray[np.uint8]:
    """Per gain rule (row of `gains`): codes 0..codes-1 by their gain, highest first."""
    order = np.zeros((len(gains), _CODES), dtype=np.uint8)
    order[:, :codes] = np.argsort(-gains[:, :codes], axis=1, kind="stable")
    return order
