"""The change of a headline mean between two sets of per-query values, query by query,
split into what the queries both sides served did and what the mix of queries did.

The headline is the mean over queries of each query's value: before B = (1/n_b) sum of b_q
over the n_b queries before, after A = (1/n_a) sum of a_q over the n_a queries after. With
C the n_c queries both sides have, m_a and m_b the means of a and b over C:

    A - B = common + mix
    common = (1/n_c) sum over C of (a_q - b_q)          what the served queries did
    mix    = (A - m_a) - (B - m_b)                      which queries were served

and each query's contribution is its share of one of the two:

    common query          (a_q - b_q) / n_c
    only after (new)      (a_q - m_a) / n_a
    only before (gone)    - (b_q - m_b) / n_b

The contributions add up to A - B exactly (in exact arithmetic; in floats to the last bits:
the test holds them to 1e-12). Live traffic serves different queries in two windows (the
demo about half of its set per window): weighing every query by 1/n of its side instead
made a common query that lost 0.56 look positive and put a whole drop on queries that were
simply not served. A query not served is no evidence about the ranker, so the common rows
come first, the largest losses first, then the mix rows. With no common query (n_c = 0)
common is 0 and m_a = m_b = 0: the contributions are each side's a_q / n_a and -b_q / n_b.
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
    """The headline before and after, its change split into common and mix, and every
    query's contribution."""

    before: float
    after: float
    before_queries: int
    after_queries: int
    rows: tuple[QueryChange, ...]
    common_change: float = 0.0
    common_queries: int = 0

    @property
    def change(self) -> float:
        return self.after - self.before

    @property
    def mix_change(self) -> float:
        """The part of the change due to which queries each side served."""
        return self.change - self.common_change

    def counts(self) -> dict[str, int]:
        """How many queries got worse, better or stayed the same (of those both sides
        served), and how many one side alone served."""
        found = dict.fromkeys(("worse", "better", "unchanged", "only_before", "only_after"), 0)
        for row in self.rows:
            if row.status != "common":
                found[row.status] += 1
            elif row.difference < 0:
                found["worse"] += 1
            elif row.difference > 0:
                found["better"] += 1
            else:
                found["unchanged"] += 1
        return found


def _finite(values: Mapping[str, float]) -> dict[str, float]:
    return {q: v for q, v in values.items() if math.isfinite(v)}


def explain_change(before: Mapping[str, float], after: Mapping[str, float]) -> Change:
    """The change from `before` to `after` (query -> value; NaN values are left out)."""
    b, a = _finite(before), _finite(after)
    n_b, n_a = len(b), len(a)
    common = b.keys() & a.keys()
    n_c = len(common)
    m_b = math.fsum(b[q] for q in common) / n_c if n_c else 0.0
    m_a = math.fsum(a[q] for q in common) / n_c if n_c else 0.0
    rows = []
    for query in sorted(b.keys() | a.keys()):
        b_q, a_q = b.get(query, math.nan), a.get(query, math.nan)
        if query in common:
            contribution = (a_q - b_q) / n_c
        elif query in a:
            contribution = (a_q - m_a) / n_a
        else:
            contribution = -(b_q - m_b) / n_b
        rows.append(QueryChange(query, b_q, a_q, contribution))
    rows.sort(key=lambda row: (row.status != "common", row.contribution, row.query))
    return Change(
        before=math.fsum(b.values()) / n_b if n_b else math.nan,
        after=math.fsum(a.values()) / n_a if n_a else math.nan,
        before_queries=n_b,
        after_queries=n_a,
        rows=tuple(rows),
        common_change=math.fsum(a[q] - b[q] for q in common) / n_c if n_c else 0.0,
        common_queries=n_c,
    )
