"""Alert baselines that survive the judging loop's versions: each baseline window re-scored
under the new judgments.

A drop rule's baseline holds windows of one evaluation-set version and starts afresh on a new
one (an edit of the judgments must not read as a drop). With a judging loop the set changes
every time judgments come back, so that would leave the drop rules blind for
`MIN_BASELINE_WINDOWS` windows after each batch, and a drop the loop held as a discovery
could never page once its documents were judged junk: by then the baseline would be the junk.

So when a window of a version the loop made (from the same file) follows windows of another
such version, `JudgedRescore` re-scores the baseline instead. Only the queries whose grades
changed move: each by how much its sampled ranking in that window (`monitor.windows.samples`,
the one the explanations show) scores differently under the two versions. For a replayed set
that is the window's ranking, and the re-scored value is exact; for live traffic it is the
change of the first ranking of the window, applied to the mean of its events. A changed query
without a sampled ranking there, or a measure the sample cannot score (one without a cutoff:
the sample is cut at the deepest), leaves that window's per-query baseline; the headline value
is then the mean of the queries left. A file reload, or a version the loop did not make here
(before a restart), still starts afresh.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Final

from monitor.alerting.baseline import BaselineWindow
from monitor.judging.set_scores import SetScores
from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.windows.samples import RankingSamples
from monitor.windows.summary import Segment

__all__ = ["JudgedRescore"]

KEPT_VERSIONS: Final = 4  # the newest versions the loop made, kept to re-score from and to


class JudgedRescore:
    """Re-scores baseline windows between the evaluation-set versions the judging loop made
    (an `monitor.alerting.engine.Rescore`)."""

    def __init__(
        self,
        samples: RankingSamples,
        new_scorer: Callable[[EvaluationSet], Scorer],
        window_ms: int,
    ) -> None:
        self._samples = samples
        self._window_ms = window_ms
        self._scores = SetScores(new_scorer)
        # version -> (the set, the file version it was made from)
        self._sets: OrderedDict[str, tuple[EvaluationSet, str]] = OrderedDict()
        self._changed: dict[tuple[str, str], frozenset[str]] = {}

    def made(self, evaluation_set: EvaluationSet, base: EvaluationSet) -> None:
        """The loop made `evaluation_set` from the file's `base`."""
        self._sets[evaluation_set.version] = (evaluation_set, base.version)
        self._sets.move_to_end(evaluation_set.version)
        while len(self._sets) > KEPT_VERSIONS:
            gone, _ = self._sets.popitem(last=False)
            self._scores.forget(gone)
            self._changed = {k: v for k, v in self._changed.items() if gone not in k}

    def forget(self, version: str) -> None:
        """Drop a version no window was scored with (the loop replaced it before any)."""
        if self._sets.pop(version, None) is not None:
            self._scores.forget(version)
            self._changed = {k: v for k, v in self._changed.items() if version not in k}

    def __call__(
        self, window: BaselineWindow, segment: Segment, measure: str, old: str, new: str
    ) -> BaselineWindow | None:
        before, after = self._sets.get(old), self._sets.get(new)
        if before is None or after is None or before[1] != after[1]:
            return None
        changed = self._changed_between(before[0], after[0])
        moved = changed & window.query_values.keys()
        if not moved:
            return window
        values = dict(window.query_values)
        key = MeasureKey.parse(measure)
        for query in moved:
            ranking = None
            if key.k is not None and key.k <= self._samples.depth:
                ranking = self._samples.ranking(
                    segment, query, window.start_ms, window.start_ms + self._window_ms
                )
            if ranking is None:
                del values[query]
                continue
            (now,) = self._scores(after[0], measure, [query], [ranking])
            (then,) = self._scores(before[0], measure, [query], [ranking])
            values[query] += now - then
        if not values:
            return None
        return BaselineWindow(window.start_ms, _mean(values), values)

    def lineage(self, old: str, new: str) -> bool:
        """Whether `new` is the loop's next judgments of `old`'s file (both its, from the
        same file): a comparison's sequence carries on across them."""
        before, after = self._sets.get(old), self._sets.get(new)
        return before is not None and after is not None and before[1] == after[1]

    def bridges(self, old: str, new: str, measure: str) -> bool:
        """Whether windows of version `old` can be re-scored to `new` in `measure` (both the
        loop's, from the same file; a measure the sampled rankings score, or no query's
        grades changed): an `monitor.explain.store.VersionBridge`."""
        before, after = self._sets.get(old), self._sets.get(new)
        if before is None or after is None or before[1] != after[1]:
            return False
        k = MeasureKey.parse(measure).k
        scorable = k is not None and k <= self._samples.depth
        return scorable or not self._changed_between(before[0], after[0])

    def rescored(
        self,
        segment: Segment,
        start_ms: int,
        values: Mapping[str, float],
        measure: str,
        *,
        old: str,
        new: str,
    ) -> Mapping[str, float] | None:
        """A kept window's per-query values re-scored from `old` to `new` (the explanations'
        baseline, as the drop rules' is); None if they cannot be."""
        if not values:
            return None
        window = BaselineWindow(start_ms, _mean(values), values)
        rescored = self(window, segment, measure, old, new)
        return None if rescored is None else rescored.query_values

    def _changed_between(self, old: EvaluationSet, new: EvaluationSet) -> frozenset[str]:
        """The queries whose grades differ between two versions."""
        key = (old.version, new.version)
        changed = self._changed.get(key)
        if changed is None:
            changed = frozenset(
                query
                for query in new
                if query not in old or old.grade_dict(query) != new.grade_dict(query)
            )
            self._changed[key] = changed
        return changed


def _mean(values: Mapping[str, float]) -> float:
    return math.fsum(values.values()) / len(values)
