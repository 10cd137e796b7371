"""The measure keys of a `BatchScorer` as a plan for the C measure kernel.

`monitor/scoring/measure_kernel.c` computes, for rankings given as one-byte grade codes,
exactly what `monitor.scoring.columns.measure_matrix` computes with numpy (the reference):
the same operations in the same order, with the same discount table, so the values agree bit
for bit (tests/test_native_scoring.py). The plan is the keys turned into small arrays (kind,
gain, cutoff, ideal column per key) plus the code tables and the per-query ideals, made once
per scorer; `measure` then fills a (rankings x keys) matrix with no Python work per ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from monitor import native
from monitor.scoring.catalog import KINDS, MeasureKey
from monitor.scoring.columns import CodeTables, QueryIdeals, discounts, head_depth
from monitor.scoring.gain import LINEAR
from monitor.scoring.measures import IdcgZero

__all__ = ["MeasurePlan"]

Floats = npt.NDArray[np.float64]
Int64s = npt.NDArray[np.int64]

_CODES: Final = 256


@dataclass(frozen=True)
class MeasurePlan:
    """What the kernel needs to know of the keys, the code tables and the queries."""

    kinds: npt.NDArray[np.int32]
    gain_of: npt.NDArray[np.int32]
    cutoffs: Int64s
    ideal_of: npt.NDArray[np.int32]
    gains: Floats  # (gains, 256)
    relevant: npt.NDArray[np.uint8]
    judged: npt.NDArray[np.uint8]
    ideals: Floats  # (queries, ideal columns), C order
    num_rel: Int64s
    when_zero: float
    head_depth: int | None

    @classmethod
    def of(
        cls,
        keys: Sequence[MeasureKey],
        tables: CodeTables,
        queries: QueryIdeals,
        idcg_zero: IdcgZero,
    ) -> MeasurePlan:
        """The plan of `keys` over codes of `tables` and the queries' ideals."""
        gain_list = list(tables.gains)
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
        specs = queries.specs
        return cls(
            kinds=np.array([KINDS[key.kind].code for key in keys], dtype=np.int32),
            gain_of=np.array(
                [gain_list.index(key.gain or LINEAR) if key.gain else 0 for key in keys],
                dtype=np.int32,
            ),
            cutoffs=np.array([-1 if key.k is None else key.k for key in keys], dtype=np.int64),
            ideal_of=np.array(
                [specs.index((key.gain, key.k)) if key.kind == "ndcg" else 0 for key in keys],
                dtype=np.int32,
            ),
            gains=gains,
            relevant=relevant,
            judged=judged,
            ideals=np.ascontiguousarray(queries.ideal, dtype=np.float64),
            num_rel=np.ascontiguousarray(queries.num_rel, dtype=np.int64),
            when_zero=0.0 if idcg_zero == "zero" else float("nan"),
            head_depth=head_depth(keys),
        )

    def measure(self, codes: bytes, taken: Int64s, lengths: Int64s, rows: Int64s) -> Floats:
        """One row per ranking: `codes` holds the first `taken[i]` codes of each, in order."""
        width = int(taken.max(initial=0))
        head = width if self.head_depth is None else min(self.head_depth, width)
        out = np.empty((len(rows), len(self.kinds)), dtype=np.float64)
        native.measure_codes(
            codes,
            taken=np.ascontiguousarray(taken, dtype=np.int64),
            lengths=np.ascontiguousarray(lengths, dtype=np.int64),
            rows=np.ascontiguousarray(rows, dtype=np.int64),
            kinds=self.kinds,
            gain_of=self.gain_of,
            cutoffs=self.cutoffs,
            ideal_of=self.ideal_of,
            gains=self.gains,
            relevant=self.relevant,
            judged=self.judged,
            discounts=discounts(head),
            ideals=self.ideals,
            n_ideals=self.ideals.shape[1],
            num_rel=self.num_rel,
            when_zero=self.when_zero,
            out=out,
        )
        return out
