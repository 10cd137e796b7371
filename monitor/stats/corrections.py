"""Multiple-testing corrections of a family of p-values (several runs x measures).

- `bonferroni`: p * m, capped at 1;
- `holm`: Holm's step-down: sorted ascending, p_(i) * (m - i + 1), made non-decreasing,
  capped at 1 (scipy's / statsmodels' `multipletests(method="holm")`);
- `none`: unchanged.
NaN p-values (no verdict) stay NaN and do not count in m.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["CORRECTIONS", "adjust_p_values"]

CORRECTIONS = ("holm", "bonferroni", "none")


def adjust_p_values(p_values: Sequence[float], method: str) -> list[float]:
    """The family's p-values corrected by `method`, in their order."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}: one of {', '.join(CORRECTIONS)}")
    defined = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    adjusted = [math.nan] * len(p_values)
    m = len(defined)
    if method == "none":
        return list(p_values)
    if method == "bonferroni":
        for i in defined:
            adjusted[i] = min(1.0, p_values[i] * m)
        return adjusted
    running = 0.0
    for rank, i in enumerate(sorted(defined, key=lambda i: p_values[i])):
        running = max(running, min(1.0, p_values[i] * (m - rank)))
        adjusted[i] = running
    return adjusted
