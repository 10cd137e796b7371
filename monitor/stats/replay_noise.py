"""A replay's window-to-window noise: how much a window's mean would move if the same
queries were replayed again with nothing changed.

The `_stderr` gauges are between-query uncertainty: the spread of the window's query means,
about the population of queries the window's queries stand for. A fixed evaluation set
replayed every window has that spread in every window, but its mean moves from window to
window only by what the ranker's replay noise does (none for a deterministic ranker). For
the queries both windows scored, e_q = x_q(w) - x_q(w - 1) has variance 2 sigma_q^2 when
only the noise moved them, so

    replay_stderr = sqrt( mean_q(e_q^2) / 2 / n )

with n the window's queries. A real change between the two windows adds to it (an upper
estimate then); NaN under 2 common queries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["replay_stderr"]


def replay_stderr(previous: Mapping[str, float], current: Mapping[str, float]) -> float:
    """The replay noise of `current`'s mean over its queries (module docstring)."""
    changes = [
        current[q] - previous[q]
        for q in current.keys() & previous.keys()
        if math.isfinite(current[q]) and math.isfinite(previous[q])
    ]
    queries = sum(1 for value in current.values() if math.isfinite(value))
    if len(changes) < 2 or not queries:
        return math.nan
    variance = math.fsum(e * e for e in changes) / len(changes) / 2.0
    return math.sqrt(variance / queries)
