"""`drop`: bad when the measure fell from its baseline by more than an amount, significantly.

The baseline is the trailing median of the last `baseline_windows` windows, or `pinned`. The
window is bad when its value is under baseline * (1 - relative) (or baseline - absolute) AND
the paired sign-flip test on the queries in common with the baseline gives p < significance
(or the level `alerts.false_pages_per_day` sets); unknown with fewer than `min_queries`
common queries or fewer than `MIN_BASELINE_WINDOWS` windows of history.

On nDCG@k, a drop that the condensed list does not show (`ndcg_condensed@k`: the ranking's
judged documents alone, docs/metrics.md "Bounds") comes from documents nobody judged yet
entering the top k, not from the judged ones ranking worse. With `unjudged: hold` such a
window is held (unknown: it neither fires nor resolves the rule) and a `discovery` rule
(`discovery.py`) notifies it; with `unjudged: page` the rule pages on the measure alone, as
before. The default is `hold` while the judging loop runs (`judging.enabled`: the documents a
discovery names are asked for and judged, and the window after their judgments says which it
was) and `page` without it: until those documents are judged, junk that pushed the good ones
down and good new documents look alike. A ranker that returns only documents nobody judged
has an empty condensed list, which drops too: that pages either way.

A drop held `max_hold` windows in a row (12) pages on the next held one: documents that stay
unjudged cannot hold a regression back for ever. And while a `judge` rule fires (a model
judge's grades moved from the people's), a held drop is not released by a window that no
longer shows it: that window is held too, since it may be the model's grades that lifted
it (the engine, `AlertEngine`), so max_hold then pages it.

```yaml
- name: ndcg10-drop
  measure: ndcg@10
  drop: {relative: 0.05, baseline_windows: 12, significance: 0.01, min_queries: 30}
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Self

from monitor.alerting.baseline import SeriesHistory
from monitor.alerting.conditions.base import (
    Condition,
    Role,
    RuleContext,
    Verdict,
    WindowTrack,
    fraction,
    measure_value,
    query_values,
)
from monitor.alerting.paired_test import paired_drop_test
from monitor.alerting.promql import (
    IGNORING_MEASURE,
    PromqlContext,
    measure_series,
    window_queries,
)
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection, as_choice, as_int, as_number
from monitor.values import format_duration
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["DEFAULT_MAX_HOLD", "MIN_BASELINE_WINDOWS", "Drop", "discovery_words", "judged_part"]

MIN_BASELINE_WINDOWS = 3
_SHOWN_QUERIES = 5  # queries a discovery's note names
# Held windows in a row before a drop pages anyway: a discovery whose documents stay unjudged
# (or are judged only by a model whose grades moved) for an hour of 5-minute windows.
DEFAULT_MAX_HOLD = 12


def judged_part(summary: WindowSummary, measure: str, bound: str = "condensed") -> float:
    """The window's `ndcg_<bound>@k:G` for an `ndcg@k:G` measure (the condensed list, or the
    upper bound for unjudged documents); NaN for any other measure or a window without it."""
    kind, at, rest = measure.partition("@")
    if kind != "ndcg" or not at:
        return math.nan
    return measure_value(summary, f"ndcg_{bound}@{rest}")


def discovery_words(summary: WindowSummary, measure: str, condensed: float, floor: float) -> str:
    """Why a drop of `measure` is a discovery: its condensed list is not under the floor;
    and where the unjudged documents are (the queries with the least judged top k)."""
    k = measure.partition("@")[2].partition(":")[0]
    judged = {q: v for q, v in query_values(summary, f"judged@{k}").items() if v < 1.0}
    named = sorted(judged, key=lambda q: (judged[q], q))[:_SHOWN_QUERIES]
    shown = ", ".join(named) + (", ..." if len(judged) > len(named) else "")
    documents = round(math.fsum((1.0 - v) * int(k) for v in judged.values()))
    upper = judged_part(summary, measure, "upper")
    return (
        f"a discovery, not a regression: {measure} fell under {floor:.4f} but its judged "
        f"documents alone (condensed list {condensed:.4f}) did not; at most {upper:.4f} "
        f"whatever grades the unjudged ones get; about {documents} documents nobody judged "
        f"are in the top {k} of {len(judged)} queries ({shown})"
    )


@dataclass(frozen=True)
class Drop(Condition):
    """Bad when the value fell by `relative` (or `absolute`) from the baseline, significantly.

    The baseline is the trailing median of the last `baseline_windows` windows, or `pinned`.
    """

    key = "drop"
    role = Role.QUALITY
    budgeted = True
    draws_floor: ClassVar[bool] = True  # the dashboards draw its moving floor

    relative: float | None
    absolute: float | None
    baseline_windows: int
    significance: float
    min_queries: int
    pinned: float | None
    unjudged: str = "page"  # page: pages on the measure; hold: a drop the judged part lacks is held
    max_hold: int = DEFAULT_MAX_HOLD  # held windows in a row, then it pages (`unjudged: hold`)

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        section = rule.section(cls.key)
        amounts = [name for name in ("relative", "absolute") if section.has(name)]
        if len(amounts) != 1:
            raise rule.error(cls.key, "needs exactly one of relative or absolute")
        condition = cls(
            relative=section.get("relative", as_number(0.0), None),
            absolute=section.get("absolute", as_number(0.0), None),
            baseline_windows=section.get("baseline_windows", as_int(2), 12),
            significance=section.get("significance", fraction, 0.01),
            min_queries=section.get("min_queries", as_int(2), 30),
            pinned=section.get("pinned", as_number(0.0), None),
            **cls.own_settings(section, context),
        )
        section.finish()
        return condition

    @classmethod
    def own_settings(cls, section: ConfigSection, context: RuleContext) -> dict[str, Any]:
        """The keys of its entry beyond what a drop and a discovery share."""
        return {
            "unjudged": section.get("unjudged", as_choice("page", "hold"), context.unjudged),
            "max_hold": section.get("max_hold", as_int(1), DEFAULT_MAX_HOLD),
        }

    def render(self) -> dict[str, Any]:
        amount = "relative" if self.relative is not None else "absolute"
        return {
            amount: self.relative if self.relative is not None else self.absolute,
            "baseline_windows": self.baseline_windows,
            "significance": self.significance,
            "min_queries": self.min_queries,
            "pinned": self.pinned,
            **self.render_own(),
        }

    def render_own(self) -> dict[str, Any]:
        return {"unjudged": self.unjudged, "max_hold": self.max_hold}

    def hold_limit(self) -> int | None:
        return self.max_hold

    def release_floor(self, verdict: Verdict) -> float | None:
        if verdict.baseline is None or math.isnan(verdict.baseline):
            return None
        return self.floor_under(verdict.baseline)

    def new_track(self) -> WindowTrack:
        return WindowTrack(history=SeriesHistory(self.baseline_windows, minimum=self.pinned))

    def restore_windows(self, streaks: int) -> int:
        # pinned: twice its baseline, to see where a drop keeping its windows out began
        spans = 2 if self.pinned is not None else 1
        return spans * self.baseline_windows + streaks

    def baseline_span(self) -> int:
        return self.baseline_windows

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        value = measure_value(summary, measure)
        history = track.history
        if (
            history is None
            or math.isnan(value)
            or len(history) < min(MIN_BASELINE_WINDOWS, history.size)
        ):
            note = "not enough baseline windows yet"
            if self.pinned is not None:
                note = f"not enough windows at or above the pinned level {self.pinned:g} yet"
            return Verdict(Evidence.UNKNOWN, value, note=note)
        baseline = self.pinned if self.pinned is not None else history.median()
        floor = self.floor_under(baseline)
        current = query_values(summary, measure)
        if quick and value >= floor:
            # Good whatever the test says: without it (a restore replaying many windows),
            # only whether enough queries are in common decides between good and unknown.
            common = len(current.keys() & history.queries())
            if common < self.min_queries:
                note = f"only {common} queries in common with the baseline"
                return Verdict(Evidence.UNKNOWN, value, baseline, note=note)
            return Verdict(Evidence.GOOD, value, baseline, note=f"{common} common queries")
        significance = self.significance if level is None else level
        test = paired_drop_test(current, self._reference(history), level=significance)
        if test.queries < self.min_queries:
            note = f"only {test.queries} queries in common with the baseline"
            return Verdict(Evidence.UNKNOWN, value, baseline, test.p_value, note=note)
        bad = value < floor and test.p_value < significance
        note = f"{test.queries} common queries, mean per-query change {test.mean_difference:+.4f}"
        verdict = Verdict(
            Evidence.BAD if bad else Evidence.GOOD,
            value,
            baseline,
            test.p_value,
            test.worst,
            note=note,
        )
        return self.judge_unjudged(measure, summary, verdict, floor)

    def judge_unjudged(
        self, measure: str, summary: WindowSummary, verdict: Verdict, floor: float
    ) -> Verdict:
        """A drop its condensed list does not show is held (`unjudged: hold`): documents
        nobody judged yet entered the top k."""
        if verdict.evidence is not Evidence.BAD or self.unjudged == "page":
            return verdict
        condensed = judged_part(summary, measure)
        if math.isnan(condensed) or condensed < floor:
            return verdict
        note = f"held: {discovery_words(summary, measure, condensed, floor)}"
        return replace(verdict, evidence=Evidence.UNKNOWN, note=note, held=True)

    def floor_under(self, baseline: float) -> float:
        """The level under which a window is a drop from `baseline`."""
        if self.relative is not None:
            return baseline * (1.0 - self.relative)
        return baseline - (self.absolute or 0.0)

    def _reference(self, history: SeriesHistory) -> dict[str, float]:
        """Each query's baseline value: its mean over the history; for a pinned rule moved
        by how far the history's windows are above the pinned level (it holds only windows
        at or above it, its upper windows on a stable stream: moved down, the reference does
        not lean up). The move is the windows' mean headline against the pin, not their
        queries' mean: where each window draws other queries (live traffic), the windows
        at or above the pin lean up by the queries they drew, which the queries' own means
        do not show, and a reference moved by those would put every paired difference of a
        deterministic ranker on one side of 0, a "significant" drop on any window under the
        floor (bench/validity.py scenario 9)."""
        means = history.query_means()
        if self.pinned is None or not means:
            return means
        shift = self.pinned - history.mean_value()
        return {query: value + shift for query, value in means.items()}

    def summary(self, measure: str) -> str:
        return f"{self.what(measure)}, paired sign-flip test p < {self.significance:g}"

    def what(self, measure: str) -> str:
        """What the rule watches for, before its significance gate."""
        size = (
            f"{self.relative:.0%}" if self.relative is not None else f"{self.absolute:g} absolute"
        )
        source = "pinned" if self.pinned is not None else "trailing median"
        return f"{measure} dropped by more than {size} from its baseline ({source})"

    def left_out(self, *, ungated: bool) -> str | None:
        if ungated:
            return None
        return "drop, gated by a paired test on per-query values Prometheus lacks"

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        """The ungated approximation: the global mean under the floor of the median of the
        recorded mean over the baseline span (ending one window back), with at least
        `min_queries` queries; Prometheus has no per-query values for the paired test."""
        value = measure_series(measure, segment)
        if self.pinned is not None:
            baseline = f"{self.pinned:g}"
        else:
            span = format_duration(self.baseline_windows * context.window_ms)
            back = format_duration(context.window_ms)
            baseline = f"quantile_over_time(0.5, {value}[{span}] offset {back})"
        if self.relative is not None:
            floor = f"{1 - self.relative:g} * {baseline}"
        else:
            floor = f"{baseline} - {self.absolute:g}"
        queries = window_queries(segment)
        return f"({value} < {floor}) and {IGNORING_MEASURE} ({queries} >= {self.min_queries})"

    def promql_summary(self, measure: str) -> str:
        return f"{self.what(measure)}; ungated approximation, no paired test"

    def promql_description(self, measure: str, source: str) -> str:
        # Prometheus has no per-query values: say what this alert is missing.
        return (
            super().promql_description(measure, source)
            + " (no paired test: rankmon's own alert is the significance-gated one)"
        )
