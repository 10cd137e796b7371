"""The change of a headline mean between two sets of per-query values, query by query.

The headline is the mean over queries of each query's value: before B = (1/n_b) sum of b_q
over the n_b queries before, after A = (1/n_a) sum of a_q over the n_a queries after, and
the change A - B. Each query's contribution is its share of that change:

    common query          a_q / n_a - b_q / n_b
    only after (new)      a_q / n_a
    only before (gone)    - b_q / n_b

and the contributions add up to A - B exactly (in exact arithmetic; in floats to the last
bits: the test holds them to 1e-12). A common query whose value did not move still
contributes when n_a differs from n_b (it weighs 1/n_a now instead of 1/n_b): that is part
of the change too. Rows are sorted by contribution, the largest losses first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Change", "QueryChange", "explain_change"]


@dataclass(frozen=True)
class QueryChange:
    """One query's part of the change (`before`/`after` NaN where it was not seen)."""

    query: str
    before: float
    after: float
    contribution: float

    @property
    def status(self) -> str:
        """`common`, `only_before` or `only_after`."""
        if math.isnan(self.before):
            return "only_after"
        if math.isnan(self.after):
            return "only_before"
        return "common"

    @property
    def difference(self) -> float:
        """after - before (NaN unless common)."""
        return self.after - self.before


@dataclass(frozen=True)
class Change:
    """The headline before and after, its change, and every query's contribution."""

    before: float
    after: float
    before_queries: int
    after_queries: int
    rows: tuple[QueryChange, ...]

    @property
    def change(self) -> float:
        return self.after - self.before


def _finite(values: Mapping[str, float]) -> dict[str, float]:
    return {q: v for q, v in values.items() if math.isfinite(v)}


def explain_change(before: Mapping[str, float], after: Mapping[str, float]) -> Change:
    """The change from `before` to `after` (query -> value; NaN values are left out)."""
    b, a = _finite(before), _finite(after)
    n_b, n_a = len(b), len(a)
    rows = []
    for query in sorted(b.keys() | a.keys()):
        b_q, a_q = b.get(query, math.nan), a.get(query, math.nan)
        share_after = a_q / n_a if query in a else 0.0
        share_before = b_q / n_b if query in b else 0.0
        rows.append(QueryChange(query, b_q, a_q, share_after - share_before))
    rows.sort(key=lambda row: (row.contribution, row.query))
    return Change(
        before=math.fsum(b.values()) / n_b if n_b else math.nan,
        after=math.fsum(a.values()) / n_a if n_a else math.nan,
        before_queries=n_b,
        after_queries=n_a,
        rows=tuple(rows),
    )
