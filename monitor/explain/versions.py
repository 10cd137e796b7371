"""Where the evaluation set changed between two kept windows, and how much of the measures'
move the new judgments alone make.

A window is scored with the evaluation set of its time (`WindowSummary.
evaluation_set_version`). When the judging loop adds judgments, the next window is scored with
a new version: its measures move because the ranker changed *and* because the judgments did.
Each kept window whose version differs from the one before gets a `VersionChange`: the two
versions and, per measure, the judgments' part of the move: the window before re-scored with
the new version (`VersionBridge`: its sampled rankings against the new judgments) minus as
it was scored, over the same queries. What is left of the move is the ranker's. A version
the bridge cannot reach (a person reloaded the set with other queries or grades, or the
window's rankings were not sampled) has None for it: its move cannot be split.

    v2's windows   w1 (set a1b2)  w2 (set c3d4)      w2 - w1 = -0.021 in ndcg@10
    w1 re-scored with c3d4: -0.019 from w1 as scored: the judgments' part; -0.002 the ranker's

The API's windows carry it (`version_change`) and the page marks the charts there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from monitor.explain.store import KeptWindow, VersionBridge
from monitor.windows.summary import Segment

__all__ = ["VersionChange", "version_changes"]


@dataclass(frozen=True)
class VersionChange:
    """The evaluation set changed at this window: from `before` to `after`; `judged`: per
    measure, the move the new judgments alone make (None: the versions cannot be bridged)."""

    before: str
    after: str
    judged: Mapping[str, float | None]

    def to_json(self) -> dict[str, object]:
        return {
            "from": self.before,
            "to": self.after,
            "moved_by_judgments": {
                m: None if v is None or not math.isfinite(v) else v for m, v in self.judged.items()
            },
        }


def version_changes(
    segment: Segment,
    windows: Sequence[KeptWindow],
    measures: Sequence[str],
    bridge: VersionBridge | None,
) -> dict[int, VersionChange]:
    """The windows (oldest first) whose version differs from the window before, by start."""
    changes = {}
    for before, after in pairwise(windows):
        old = before.summary.evaluation_set_version
        new = after.summary.evaluation_set_version
        if old == new:
            continue
        judged = {m: _moved(segment, before, m, (old, new), bridge) for m in measures}
        changes[after.summary.start_ms] = VersionChange(old, new, judged)
    return changes


def _moved(
    segment: Segment,
    window: KeptWindow,
    measure: str,
    versions: tuple[str, str],
    bridge: VersionBridge | None,
) -> float | None:
    """`window` re-scored from the old version to the new (`versions`) minus as scored, in
    `measure`, over the queries both have (None: it cannot be re-scored)."""
    old, new = versions
    if bridge is None or not bridge.bridges(old, new, measure):
        return None
    values = window.query_values(measure)
    rescored = bridge.rescored(segment, window.summary.start_ms, values, measure, old=old, new=new)
    if not rescored:
        return None
    common = [q for q in rescored if q in values and math.isfinite(rescored[q])]
    if not common:
        return None
    return math.fsum(rescored[q] - values[q] for q in common) / len(common)
