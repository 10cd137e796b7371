"""What every alert condition is: the `Condition` base class each kind fills in.

A condition kind is one class in one module of this package, registered in the table of
`monitor.alerting.conditions`. The class is the whole concept: how it is read from the config
(`parse`, `measure`, `segment`) and written back (`render`), what it remembers between windows
(`new_track`, `restore_windows`), how it judges a window (`evaluate`, `hold`), what its alert
says (`summary`, `explain_path`), and its Prometheus form (`promql`, or why it has none:
`left_out`). Everything else (the rule reader, the engine, the annotations, the rendered rules,
the dashboards and the explain page) iterates the table and asks the class.

Its `role` says where the engine judges it:

- `QUALITY`: on each window, after the trust rules, and held (unknown evidence) on a window a
  trust rule found bad, so no alert fires or resolves on numbers that are untrustworthy;
- `TRUST`: on each window, first; a bad verdict holds the quality rules of that window;
- `CLOCK`: on the service's ticks, on the silence since the last finalized window;
- `COMPARISON`: on comparison records (`monitor.comparisons`), not on windows;
- `JUDGE`: on the judging loop's readings of its model judges against the people's audit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Protocol, Self

from monitor.alerting.baseline import BaselineWindow, SeriesHistory
from monitor.alerting.drift import PageHinkley
from monitor.alerting.promql import PromqlContext
from monitor.alerting.state import Evidence
from monitor.comparisons.record import ComparisonRecord
from monitor.errors import MeasureError
from monitor.explain.alert_table import explain_path
from monitor.scoring.catalog import KIND_TABLE, KINDS, MeasureKey
from monitor.sections import ConfigSection, as_number, as_str, describe
from monitor.stats.judges import JudgeReading
from monitor.stats.spread import SpreadMoments, cornish_fisher
from monitor.stats.student_t import t_ppf
from monitor.windows.segment_filter import read_segment_filter
from monitor.windows.summary import Segment, WindowSummary

__all__ = [
    "Condition",
    "Rebase",
    "Role",
    "RuleContext",
    "RuleLike",
    "Verdict",
    "WindowTrack",
    "anything",
    "evaluate_window",
    "fraction",
    "measure_value",
    "query_values",
    "read_measure",
    "refuse_measure",
    "share",
    "threshold_verdict",
    "under_by",
]

RANKED_MEASURES = tuple(
    kind.name for kind in KIND_TABLE if kind.quality and kind.cutoff is not False
)
UNRANKED_MEASURES = tuple(kind.name for kind in KIND_TABLE if kind.quality and kind.cutoff is False)


class Role(Enum):
    """Where the engine judges a condition (the module docstring says what each means)."""

    QUALITY = "quality"
    TRUST = "trust"
    CLOCK = "clock"
    COMPARISON = "comparison"
    JUDGE = "judge"


@dataclass(frozen=True)
class RuleContext:
    """What a rule may refer to: the monitor's cutoffs, gains and segment keys, and the
    configured comparisons (name -> (candidate filter, measures)); and the rules' defaults
    that depend on the rest of the config."""

    cutoffs: tuple[int, ...]
    gains: tuple[str, ...]
    segment_keys: tuple[str, ...]
    runbook_url: str | None
    comparisons: Mapping[str, tuple[Segment, tuple[str, ...]]] = field(default_factory=dict)
    # Whether the judging loop runs (`judging.enabled`): `judge` rules need its audit, and an
    # nDCG drop rule then holds a drop its condensed list lacks by default (`unjudged: hold`:
    # the loop gets its documents judged) instead of paging it.
    judging: bool = False
    # Windows (looks) a segment has in a day: `trend` sets its default threshold from it.
    windows_per_day: float = 288.0
    # The measures `metrics.measures` adds to the stream (canonical names: `rbp@10:p=0.8`).
    measures: tuple[str, ...] = ()

    @property
    def unjudged(self) -> str:
        """The drop rules' default `unjudged`."""
        return "hold" if self.judging else "page"


@dataclass(frozen=True)
class Verdict:
    """One rule's reading of one window: the evidence and what the alert will say about it."""

    evidence: Evidence
    value: float
    baseline: float | None = None
    p_value: float | None = None
    worst: tuple[tuple[str, float], ...] = ()
    note: str = ""
    # Held out of the baseline: a drop held as a discovery must not become the normal its
    # documents are judged against once they are (`drop.Drop.judge_unjudged`).
    held: bool = False


# A baseline window re-scored from the first version to the second (None: it cannot be).
Rebase = Callable[[BaselineWindow, str, str], BaselineWindow | None]


@dataclass
class WindowTrack:
    """What a rule remembers about one segment's windows between them: a baseline history
    (`history`) and a drift detector (`detector`), as its condition's `new_track` sets up.

    Baselines and detectors hold windows of one evaluation-set version: new judgments change
    every query's scores, so comparing across versions would report the edit as a drop. On a
    new version they start afresh (the drop rule is unknown until it has history again),
    unless a `rebase` re-scores the baseline's windows under it (the judging loop's versions:
    `monitor.judging.rescore`); a drift detector always starts afresh.
    """

    history: SeriesHistory | None = None
    detector: PageHinkley | None = None
    version: str | None = None
    spread: SpreadMoments | None = None  # `stderr` under the budget: the pooled kurtosis

    @classmethod
    def for_rule(cls, rule: RuleLike) -> WindowTrack:
        """A fresh track for `rule`, as its condition sets it up (`Condition.new_track`)."""
        return rule.condition.new_track()

    def follow_version(self, rule: RuleLike, version: str, rebase: Rebase | None = None) -> None:
        """Start afresh when the windows come from a new evaluation-set version, or keep the
        baseline re-scored under it when `rebase` can."""
        old = self.version
        if old is not None and version != old:
            fresh = rule.condition.new_track()
            history = self.history
            kept = (
                history is not None
                and rebase is not None
                and history.rebase(lambda window: rebase(window, old, version))
            )
            self.history = history if kept else fresh.history
            self.detector = fresh.detector
            self.spread = fresh.spread
        self.version = version

    def pool_spread(self, summary: WindowSummary, measure: str) -> tuple[SpreadMoments, int]:
        """Add the window's query values of `measure` to the segment's pooled spread (a fresh
        one on a track without): the pool, and how many values the window had."""
        values = [v for v in query_values(summary, measure).values() if math.isfinite(v)]
        spread = self.spread if self.spread is not None else SpreadMoments()
        spread.add(values)
        return spread, len(values)

    def remember(self, rule: RuleLike, summary: WindowSummary) -> None:
        """Offer a trusted window to the baseline history, once `rule` has judged it (a
        pinned drop rule takes only windows at or above its level: `SeriesHistory.admit`)."""
        if self.history is None:
            return
        value = measure_value(summary, rule.measure)
        if not math.isnan(value):
            window = BaselineWindow(summary.start_ms, value, query_values(summary, rule.measure))
            self.history.admit(window)


class RuleLike(Protocol):
    """What judging needs of a rule (`monitor.alerting.rules.AlertRule`): its measure key
    and its condition."""

    @property
    def measure(self) -> str: ...

    @property
    def condition(self) -> Condition: ...


def evaluate_window(
    rule: RuleLike,
    summary: WindowSummary,
    track: WindowTrack,
    *,
    quick: bool = False,
    level: float | None = None,
) -> Verdict:
    """`rule`'s verdict on one finalized window (`Condition.evaluate`)."""
    return rule.condition.evaluate(rule.measure, summary, track, quick=quick, level=level)


class Condition:
    """One kind of alert condition; subclasses are frozen dataclasses of their settings.

    Class attributes: `key`, the config key that names it in a rule (`below:`); `role`;
    `has_measure`, whether a rule names a measure (`measure:` and `gain:`); `takes_streaks`,
    whether `for` and `keep_firing_for` apply; `reads_segment`, whether the rule's `segment`
    is its own (not derived by `segment`); `holds_small_windows`, whether
    `alerts.min_queries` holds it on a window with too few queries (every rule on a mean
    over the window's queries); `budgeted`, whether `alerts.false_pages_per_day` sets its
    level (`in_budget`); `default_severity`, a rule's severity when it sets none;
    `explains_a_window`, whether its alerts link to the explanation of their window's measure
    (else to the page's top).
    """

    key: ClassVar[str]
    role: ClassVar[Role]
    has_measure: ClassVar[bool] = True
    explains_a_window: ClassVar[bool] = True
    takes_streaks: ClassVar[bool] = True
    default_severity: ClassVar[str] = "warning"  # a rule's severity when it names none
    reads_segment: ClassVar[bool] = True
    holds_small_windows: ClassVar[bool] = True
    budgeted: ClassVar[bool] = False

    # -- the config ------------------------------------------------------------------------

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        """The condition from the rule's `key` entry; problems name the rule and key."""
        raise NotImplementedError

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        """The catalog key of the rule's measure (`ndcg@10` + gain `linear` ->
        `ndcg@10:linear`), read from the rule's `measure` and `gain`."""
        return read_measure(rule, context)

    def segment(self, rule: ConfigSection, context: RuleContext) -> Segment | None:
        """The segment filter the rule applies to (its `segment`, none by default)."""
        return read_segment_filter(rule, "segment", context.segment_keys)

    def render(self) -> Any:
        """The condition's entry as config data, every default filled in."""
        raise NotImplementedError

    # -- judging ---------------------------------------------------------------------------

    def new_track(self) -> WindowTrack:
        """What the rule keeps between one segment's windows (nothing by default)."""
        return WindowTrack()

    def restore_windows(self, streaks: int) -> int:
        """How many of a segment's newest windows a restart replays into the rule: enough to
        rebuild its track and its pending and firing streaks (`streaks` windows)."""
        return streaks

    def in_budget(self) -> bool:
        """Whether `alerts.false_pages_per_day` sets the rule's level (its evaluation gets
        `level`); the rules outside it are named at start (`out_of_budget`)."""
        return self.budgeted

    def out_of_budget(self) -> str:
        """Why a rule that may page is outside `alerts.false_pages_per_day`."""
        return "its condition has no false-alarm rate to budget"

    def release_floor(self, verdict: Verdict) -> float | None:
        """The level under which the window that would release a held drop (`verdict`)
        still shows it: what the audit-corrected value is held to (None: no hold)."""
        return None

    def hold_limit(self) -> int | None:
        """Windows in a row a window may be held before the rule pages on the measure
        (`drop`'s `max_hold`); None: no limit."""
        return None

    def hold(
        self,
        measure: str,
        summary: WindowSummary,
        *,
        small: bool,
        before_start: bool,
        min_queries: int,
    ) -> Verdict | None:
        """Unknown evidence, saying why, for a window the rule does not judge whatever its
        values (None: it is judged). `small`: too few queries under `alerts.min_queries`;
        `before_start`: the window ended before rankmon started."""
        if self.holds_small_windows and small:
            note = (
                f"held: only {summary.queries} of {summary.evaluation_set_queries} "
                f"evaluation-set queries in this window (alerts.min_queries: {min_queries})"
            )
            return Verdict(Evidence.UNKNOWN, measure_value(summary, measure), note=note)
        return None

    def evaluate(
        self,
        measure: str,
        summary: WindowSummary,
        track: WindowTrack,
        *,
        quick: bool = False,
        level: float | None = None,
    ) -> Verdict:
        """The verdict on one finalized window. `quick`: a restore replays the window, so
        a costly test may be skipped where the value alone decides; `level`: the rule's
        per-window level under the false-page budget (`in_budget` rules only): its share of
        `alerts.false_pages_per_day` over the windows of a day."""
        raise NotImplementedError

    def on_tick(self, silent_ms: int) -> Verdict:
        """The verdict of a `CLOCK` condition after `silent_ms` without a finalized window."""
        raise NotImplementedError(f"{self.key} is not judged on ticks")

    def on_comparison(
        self, measure: str, record: ComparisonRecord, *, level: float | None = None
    ) -> Verdict | None:
        """The verdict of a `COMPARISON` condition on a comparison record (None: the record
        is not about this rule); `level`: the rule's share of the false-page budget, the
        most its decision may spend."""
        raise NotImplementedError(f"{self.key} is not judged on comparisons")

    def on_judges(self, readings: Sequence[JudgeReading], *, level: float | None = None) -> Verdict:
        """The verdict of a `JUDGE` condition on the model judges' readings; `level`: this
        look's part of the rule's share of the false-page budget."""
        raise NotImplementedError(f"{self.key} is not judged on judges")

    def alert_segment(self, rule_segment: Segment | None, segment: Segment) -> Segment:
        """The segment an alert is kept and labelled for: the window's by default."""
        return segment

    # -- words -----------------------------------------------------------------------------

    def summary(self, measure: str) -> str:
        """One line saying what the rule watches for."""
        raise NotImplementedError

    def explain_path(
        self, segment: Segment, measure: str, start_ms: int, baselines: Mapping[str, Segment]
    ) -> str:
        """The explain page's path for an alert on the window starting at `start_ms` (the
        page's top for a condition on no measure of a window: `explains_a_window`)."""
        if not self.explains_a_window:
            return "/"
        return explain_path(segment, measure, start_ms)

    def floor(self) -> float | None:
        """A fixed level under which the rule's measure is bad, as pages and dashboards draw
        it (None: the condition has none)."""
        return None

    def baseline_span(self) -> int | None:
        """How many windows the rule's baseline spans, for the explain page (None: none)."""
        return None

    # -- Prometheus ------------------------------------------------------------------------

    def left_out(self, *, ungated: bool) -> str | None:
        """Why the rule has no Prometheus form, or None when `promql` gives one (`ungated`:
        `rankmon rules render --ungated-drop`)."""
        return None

    def promql(self, measure: str, segment: Segment | None, context: PromqlContext) -> str:
        """The alerting rule's expression (only when `left_out` is None)."""
        raise NotImplementedError(f"no PromQL form for {self.key}")

    def promql_summary(self, measure: str) -> str:
        """The rendered alert's summary: `summary` unless the PromQL form differs."""
        return self.summary(measure)

    def promql_description(self, measure: str, source: str) -> str:
        """The rendered alert's description; `source` names the rule in the config."""
        return f'{measure} is {{{{ $value | printf "%.4f" }}}}; {source}'


# -- what several conditions share -----------------------------------------------------------


def measure_value(summary: WindowSummary, measure: str) -> float:
    """The window's headline value of `measure` (NaN when it has none)."""
    return float(summary.means.get(measure, math.nan))


def query_values(summary: WindowSummary, measure: str) -> dict[str, float]:
    """Each query's mean of `measure` in the window, queries without a value left out."""
    values = {q: float(means.get(measure, math.nan)) for q, means in summary.query_means.items()}
    return {q: v for q, v in values.items() if not math.isnan(v)}


def threshold_verdict(value: float, minimum: float, what: str) -> Verdict:
    """Bad under `minimum`, unknown without a value."""
    if math.isnan(value):
        return Verdict(Evidence.UNKNOWN, value, note=f"no {what} value in this window")
    evidence = Evidence.BAD if value < minimum else Evidence.GOOD
    return Verdict(evidence, value, baseline=minimum)


def under_by(
    summary: WindowSummary, measure: str, floor: float, level: float, spread: SpreadMoments
) -> Verdict:
    """Bad when the window's mean of `measure` is under `floor` by more than the one-sided
    Student t quantile at `level` times its standard error, from the between-query variance
    `spread` pools over the segment's windows (this one among them), read through their
    skewness (`monitor.stats.spread.cornish_fisher`). Not the window's own variance: a window
    of few queries mostly at 0 has a low mean and a low spread at once, and would pass for a
    breach far past its noise. Unknown before the pool has a variance."""
    value = measure_value(summary, measure)
    queries = summary.defined_queries(measure)
    variance = spread.variance
    if not (queries and math.isfinite(variance) and variance > 0):
        note = "no spread of the queries' values yet: nothing to test the floor on"
        return Verdict(Evidence.UNKNOWN, value, floor, note=note)
    error = math.sqrt(variance / queries)
    critical = t_ppf(1.0 - level, spread.freedom)
    distance = -cornish_fisher((value - floor) / error, spread.skewness, queries)
    bad = distance > critical
    note = (
        f"{measure} {value:.4f} is under {floor:g} by {distance:.1f} standard errors over "
        f"{queries} queries ({'more' if bad else 'not more'} than the {critical:.1f} its share "
        f"of alerts.false_pages_per_day, level {level:.2g} a window, needs)"
    )
    return Verdict(Evidence.BAD if bad else Evidence.GOOD, value, floor, note=note)


def anything(value: Any) -> Any:
    """A getter that takes any value: for keys read only to be refused or set aside."""
    return value


def fraction(value: Any) -> float:
    """A number strictly between 0 and 1 (a significance level)."""
    number = as_number()(value)
    if not 0.0 < number < 1.0:
        raise ValueError(f"must be in (0, 1), got {describe(value)}")
    return number


def share(what: str) -> Callable[[Any], float]:
    """A share between 0 and 1 of `what`."""

    def parse(value: Any) -> float:
        number = as_number(0.0)(value)
        if number > 1:
            raise ValueError(f"is {what}, at most 1: {describe(value)}")
        return number

    return parse


def _added_measure(measure: str, rule: ConfigSection, context: RuleContext) -> str | None:
    """The key of a measure `metrics.measures` adds (`rbp@10`, `rbp@10:p=0.8`), if it names
    one an alert rule may watch; None when it names none."""
    try:
        key = MeasureKey.parse(measure)
    except MeasureError:
        return None
    if str(key) not in context.measures:
        return None
    if not KINDS[key.kind].quality:
        raise rule.error("measure", f"{key} is streamed, but no rule watches a {key.kind}")
    if rule.has("gain"):
        raise rule.error("gain", f"write the gain in the measure's name ({key})")
    rule.get("gain", anything, None)
    return str(key)


def refuse_measure(rule: ConfigSection, kinds: str) -> None:
    """For conditions on no measure: a `measure` or `gain` is an error naming `kinds`."""
    if rule.has("measure") or rule.has("gain"):
        raise rule.error("measure", f"{kinds} rules take no measure")
    rule.get("measure", anything, None)
    rule.get("gain", anything, None)


def read_measure(rule: ConfigSection, context: RuleContext) -> str:
    """The catalog key of a rule's `measure` (and `gain`, for nDCG)."""
    measure = rule.get("measure", as_str, None)
    if measure is None:
        raise rule.error("measure", "is required: one of ndcg@k, precision@k, recall@k, mrr, map")
    name, _, cutoff = measure.partition("@")
    if name in KINDS and not KINDS[name].stream:  # streamed only when metrics.measures says
        added = _added_measure(measure, rule, context)
        if added is None:
            raise rule.error(
                "measure",
                f"{describe(measure)} is not streamed: name it in metrics.measures first",
            )
        return added
    if name in UNRANKED_MEASURES and not cutoff:
        key = name
    elif name in RANKED_MEASURES and cutoff:
        if not cutoff.isdigit() or int(cutoff) not in context.cutoffs:
            raise rule.error(
                "measure",
                f"cutoff {describe(cutoff)} is not one the monitor computes "
                f"{list(context.cutoffs)}",
            )
        key = f"{name}@{int(cutoff)}"
    else:
        added = _added_measure(measure, rule, context)
        if added is not None:
            return added
        raise rule.error(
            "measure", f"unknown measure {describe(measure)} (ndcg@k, precision@k, ...)"
        )
    if not KINDS[name].gain:
        if rule.has("gain"):
            raise rule.error("gain", "only the nDCG measures take a gain")
        rule.get("gain", anything, None)
        return key
    gain = rule.get("gain", as_str, context.gains[0] if context.gains else "linear")
    if gain not in context.gains:
        raise rule.error(
            "gain", f"the monitor computes gains {list(context.gains)}, not {describe(gain)}"
        )
    return f"{key}:{gain}"
