"""trec_eval's families as providers of the measure table's rows.

A kind of `monitor.scoring.catalog.KIND_TABLE` whose `family` is one of trec_eval's
(`bpref`, `infAP`, `set_F`, `relative_P`, ...) is computed by that family's function in
`monitor.scoring.families`, the very one `rankmon eval` calls: its numpy columns are made
here, from the scorer's code matrix. So one name goes from the config's `metrics.measures`
through the stream, the gauges, the alert rules and the dashboards to `rankmon eval`, and
the value is the same everywhere (tests/property/test_provided_measures.py holds the stream's
values to `rankmon eval`'s, which the conformance tests hold to trec_eval's).

What the scorer has and the families read: each ranking's grade codes over its whole length
(a provided kind reads past its cutoff: `past_cutoff`), the code -> grade table, and each
query's `GradeCounts` (`QueryIdeals.counts`: the judged documents a ranking did not
retrieve). A document the evaluation set does not list is outside trec_eval's pool; one it
lists with a negative grade is in the pool, unjudged. A ranking is never "missing" here: an
empty one is scored as empty (trec_eval's `-c` stand-in is `rankmon eval`'s alone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from monitor.scoring.columns import Columns, IdcgZero, RankedMatrix
from monitor.scoring.families import Params, Settings, compute
from monitor.scoring.gain import Gain
from monitor.scoring.relevance import RankedRelevance

__all__ = ["family_columns"]

Floats = npt.NDArray[np.float64]
# A kind's parameters (its key's values) -> the family's numbers (`set_F`'s beta, utility's
# four coefficients, the recall level of `iprec_at_recall`).
Numbers = Callable[[Mapping[str, float]], tuple[float, ...]]


def family_columns(
    family: str, numbers: Numbers | None = None
) -> Callable[[Mapping[str, float]], Columns]:
    """The `make_columns` of a kind that trec_eval's `family` provides: given the key's
    parameters, its numpy columns. A kind with a cutoff gives the family its cutoffs as its
    numbers (one column each); one without gives it `numbers(params)` (None: no numbers)."""

    def make(params: Mapping[str, float]) -> Columns:
        fixed = () if numbers is None else numbers(params)

        def columns(
            ranked: RankedMatrix, _: Gain, cutoffs: list[int | None], __: IdcgZero
        ) -> Floats:
            if ranked.rows == 0:
                return np.zeros((0, len(cutoffs)), dtype=np.float64)
            given = _numbers(cutoffs, fixed)
            values = compute(family, Params(given), RankedRelevance.of_matrix(ranked), Settings())
            matrix = np.asarray(values, dtype=np.float64).reshape(ranked.rows, -1)
            if matrix.shape[1] != len(cutoffs):  # one value per ranking, asked once per key
                matrix = np.repeat(matrix[:, :1], len(cutoffs), axis=1)
            return matrix

        return columns

    return make


def _numbers(cutoffs: Sequence[int | None], fixed: tuple[float, ...]) -> tuple[float, ...]:
    if all(k is not None for k in cutoffs):
        return tuple(float(k) for k in cutoffs if k is not None)
    return fixed
