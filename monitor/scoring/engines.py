"""Which engine computes which measure key, and the numpy engine's dispatch.

Every kind of `monitor.scoring.catalog.KIND_TABLE` has a numpy function (`columns`); a kind
with a C `code` is also computed by the C kernel, bit for bit the same, when the accelerators
are in use (`monitor.scoring.plan`). A kind without one is computed by its numpy function on
that path too, so a new kind needs no C to work everywhere; its C twin is added only where a
bench shows a material win on a user's path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from monitor.scoring.catalog import KINDS, MeasureKey, head_depth
from monitor.scoring.columns import CodeTables, IdcgZero, QueryIdeals, RankedCodes, RankedMatrix
from monitor.scoring.gain import LINEAR, Gain

__all__ = ["in_c", "measure_matrix"]

Floats = npt.NDArray[np.float64]


def in_c(key: MeasureKey) -> bool:
    """Whether the C kernel has a case for the key's kind."""
    return KINDS[key.kind].code is not None


def measure_matrix(
    keys: Sequence[MeasureKey],
    codes: RankedCodes,
    tables: CodeTables,
    queries: QueryIdeals,
    idcg_zero: IdcgZero,
) -> Floats:
    """The numpy engine: one row per ranking of `codes`, one column per key; `queries` has
    the same rows. The keys of one kind, gain and parameters are computed together."""
    ranked = RankedMatrix(codes, tables, queries, head_depth(keys))
    groups: dict[tuple[str, Gain, tuple[tuple[str, float], ...]], list[int]] = {}
    for column, key in enumerate(keys):
        groups.setdefault((key.kind, key.gain or LINEAR, key.params), []).append(column)
    out = np.empty((len(codes.lengths), len(keys)), dtype=np.float64)
    for (kind, gain, params), columns in groups.items():
        cutoffs = [keys[column].k for column in columns]
        compute = KINDS[kind].columns_for(dict(params))
        out[:, columns] = compute(ranked, gain, cutoffs, idcg_zero)
    return out
