"""`AlertEngine`: the one object the service calls, once per tick, with the finalized windows.

```python
engine = AlertEngine(config, start_ms=clock.now_ms(), delivery=delivery, metrics=exporter)
engine.restore(summaries_read_back_from_the_windows_topic)  # baselines survive a restart
delivery.start()
# each tick:
transitions = engine.observe(finalized_summaries, clock.now_ms(), elapsed_ms=...)
transitions += engine.tick(clock.now_ms(), elapsed_ms=...)  # stale rules
```

`now_ms` is the wall clock; `elapsed_ms` (default: `now_ms`) a monotonic reading in
milliseconds, on which `stale` rules measure their silence (`start_ms` is on the same scale),
so a wall clock stepped back does not hide a stalled pipeline.

An alert fires and resolves at its window: its firing carries `startsAt` at the end (event
time) of the window that fired it, its resolution `endsAt` at the end of the window that
resolved it. Each transition's message is made when it happens, so a tick that finalizes a
backlog of windows hands delivery every firing and every resolution in order, each with the
window and values that caused it (`rankmon_alert_firings_total` counts each firing).

Per window and segment, the trust rules (`Role.TRUST`: `coverage`, `judged`) go first. If one
finds the window bad, the quality rules (`Role.QUALITY`: `below`, `drop`, `trend`, ...)
get unknown evidence: their alerts neither fire nor resolve on numbers that are untrustworthy,
and the window stays out of the baselines and drift detectors. The trust alert itself says
why. A window whose every replay a stop (SIGTERM, SIGINT) ended early is held the same way
(`WindowSummary.stopped`): it measured the part of the set asked before the stop. A drop
rule with a `pinned` baseline takes only windows at or above its level into its own baseline
(`SeriesHistory.admit`), so a lasting drop or a slow slide keeps it firing until quality is
back.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from monitor.alerting.active import ActiveAlert
from monitor.alerting.annotations import alert_message
from monitor.alerting.baseline import BaselineWindow
from monitor.alerting.conditions import Role, Verdict, WindowTrack, evaluate_window, measure_value
from monitor.alerting.conditions.base import Rebase
from monitor.alerting.delivery import AlertDelivery
from monitor.alerting.messages import AlertMessage
from monitor.alerting.metrics import AlertSignals
from monitor.alerting.rules import AlertRule
from monitor.alerting.settings import AlertingConfig
from monitor.alerting.state import AlertState, Evidence, Status, StatusChange
from monitor.comparisons.record import ComparisonRecord
from monitor.logs import fields
from monitor.stats.judges import JudgeReading
from monitor.windows.merge import merge_window_shares
from monitor.windows.summary import Segment, WindowSummary

_log = logging.getLogger(__name__)

__all__ = ["STOPPED_NOTE", "ActiveAlert", "AlertEngine", "AlertTransition", "Rescore"]

# Why the quality rules hold on a window whose replays were stopped before they ended.
STOPPED_NOTE = "its replay was stopped before every query was asked: a part of the set"


# A baseline window of a segment and measure re-scored from one evaluation-set version to
# another (None: it cannot be).
Rescore = Callable[[BaselineWindow, Segment, str, str, str], BaselineWindow | None]

# A window's headline corrected by the people's audit, by segment and window start (None: no
# model judge graded a pair of it).
Corrected = Callable[[Segment, int], Mapping[str, float | str] | None]


@dataclass(frozen=True)
class AlertTransition:
    """A rule's status moved in a segment, at `at_ms`, on the evidence of `verdict`;
    `message`: what delivery gets for it (firings and resolutions only)."""

    rule: AlertRule
    segment: Segment
    change: StatusChange
    at_ms: int
    verdict: Verdict
    window: tuple[int, int] | None
    message: AlertMessage | None = None


def _applies(rule: AlertRule, segment: Segment) -> bool:
    if rule.condition.role in (Role.COMPARISON, Role.JUDGE):
        return False  # judged on comparison records or the judges' readings, not windows
    return rule.segment is None or set(rule.segment) <= set(segment)


def _alert_segment(rule: AlertRule, segment: Segment) -> Segment:
    return rule.condition.alert_segment(rule.segment, segment)


class AlertEngine:
    """Evaluates every rule on every finalized window and hands alert states to delivery."""

    def __init__(
        self,
        config: AlertingConfig,
        *,
        start_ms: int,
        delivery: AlertDelivery | None = None,
        metrics: AlertSignals | None = None,
        query_texts: Mapping[str, str] | None = None,
    ) -> None:
        """`query_texts`: each query's text (`evaluation_set.topics`), which the alerts'
        worst queries show beside their ids."""
        self.config = config
        self.query_texts = query_texts or {}
        self.delivery = delivery
        self.metrics = metrics
        self._alerts: dict[tuple[int, Segment], ActiveAlert] = {}
        self._latest_start: dict[Segment, int] = {}
        # (budgeted rule, segment) pairs sharing the false-page budget; None: count again
        self._budget_pairs: int | None = None
        # per judge rule: (the UTC day, looks judged in it), for the budget's spending
        self._judge_looks: dict[int, tuple[int, int]] = {}
        self._arrivals: dict[Segment, int] = {}
        self._start_ms = start_ms
        # Re-scores a baseline window under a new evaluation-set version (the judging loop's:
        # `monitor.judging.rescore`); None: every new version starts the baselines afresh.
        self.rescore: Rescore | None = None
        # A window's headline corrected by the judging loop's audit of its model judges
        # (`monitor.judging.correction`), by segment and window start: "measure", "estimate",
        # "lower", "upper", "audited"; None (or no callable): no model graded a pair. A held
        # drop is released on it, not on the model's grades (`_release`).
        self.corrected: Corrected | None = None
        outside = config.outside_budget()
        if outside:
            _log.warning(
                "alerts.false_pages_per_day cannot hold these rules: they may page outside "
                "it, each at its own level",
                extra=fields(rules=outside, budget=config.false_pages_per_day),
            )

    def observe(
        self, summaries: Iterable[WindowSummary], now_ms: int, *, elapsed_ms: int | None = None
    ) -> list[AlertTransition]:
        """Evaluate newly finalized windows (oldest first); replays of seen windows are skipped."""
        transitions: list[AlertTransition] = []
        touched: list[ActiveAlert] = []
        for summary in sorted(summaries, key=lambda s: (s.end_ms, s.segment)):
            self._arrivals[summary.segment] = now_ms if elapsed_ms is None else elapsed_ms
            touched += self._evaluate(summary, now_ms, transitions)
        self._publish(transitions, touched)
        return transitions

    def observe_comparisons(
        self, records: Iterable[ComparisonRecord], now_ms: int, *, restoring: bool = False
    ) -> list[AlertTransition]:
        """Judge the `comparison` rules on newly computed comparison records (oldest first);
        `restoring`: the records read back on a restart, silently (no transitions)."""
        transitions: list[AlertTransition] = []
        touched: list[ActiveAlert] = []
        rules = [r for r in self.config.rules if r.condition.role is Role.COMPARISON]
        for record in sorted(records, key=lambda r: (r.end_ms, r.name)):
            for rule in rules:
                level = self._share() if rule.in_budget else None
                verdict = rule.condition.on_comparison(rule.measure, record, level=level)
                if verdict is None:
                    continue
                alert = self._alert(rule, rule.segment or ())
                touched.append(alert)
                window = (record.start_ms, record.end_ms)
                self._apply(alert, verdict, record.end_ms if restoring else now_ms, window,
                            [] if restoring else transitions)  # fmt: skip
        if restoring:
            firing = [a for a in touched if a.status is Status.FIRING]
            self._publish([], touched, standing=firing)
        else:
            self._publish(transitions, touched)
        return transitions

    def observe_judges(
        self, readings: Sequence[JudgeReading], now_ms: int
    ) -> list[AlertTransition]:
        """Judge the `judge` rules on the model judges' newest readings (the judging loop's)."""
        transitions: list[AlertTransition] = []
        touched: list[ActiveAlert] = []
        for rule in self.config.rules:
            if rule.condition.role is Role.JUDGE:
                alert = self._alert(rule, ())
                touched.append(alert)
                level = self._judge_level(rule, now_ms) if rule.in_budget else None
                verdict = rule.condition.on_judges(readings, level=level)
                self._apply(alert, verdict, now_ms, None, transitions)
        self._publish(transitions, touched)
        return transitions

    def tick(self, now_ms: int, *, elapsed_ms: int | None = None) -> list[AlertTransition]:
        """Judge the rules on the clock (`stale`): the silence since the last finalized window."""
        transitions: list[AlertTransition] = []
        touched: list[ActiveAlert] = []
        for rule in self.config.rules:
            if rule.condition.role is Role.CLOCK:
                last = self._last_arrival(rule)
                silent_ms = (now_ms if elapsed_ms is None else elapsed_ms) - last
                verdict = rule.condition.on_tick(silent_ms)
                alert = self._alert(rule, _alert_segment(rule, ()))
                touched.append(alert)
                self._apply(alert, verdict, now_ms, None, transitions)
        self._publish(transitions, touched)
        return transitions

    def restore(self, summaries: Iterable[WindowSummary]) -> None:
        """Rebuild baselines, detectors and alert states from published windows, silently.

        Shares of one window and segment (published for different partitions) are merged
        first. Windows replay through the same evaluation as live ones (at their end time),
        except that a drop rule skips its paired test where the value alone makes the window
        good (`evaluate_window(quick=True)`), but no transition is returned or delivered;
        alerts still firing afterwards are handed to delivery so that Alertmanager keeps them.
        A pinned drop rule takes in the replayed windows at or above its level, as it did
        live; when every replayed window is under it (a drop older than the replay), the
        rule has no reference and stays unknown (docs/alerting.md, "Restarts").
        """
        for summary in merge_window_shares(summaries):
            self._evaluate(summary, summary.end_ms, [], quick=True)
        firing = [a for a in self._alerts.values() if a.status is Status.FIRING]
        self._publish([], firing, standing=firing)

    def reset(self, start_ms: int) -> None:
        """Forget every alert, baseline and window seen: another instance of the group
        decides now (`monitor.group`). `start_ms`: the monotonic reading stale rules count
        silence from, should this instance decide again."""
        self._alerts.clear()
        self._latest_start.clear()
        self._budget_pairs = None
        self._arrivals.clear()
        self._start_ms = start_ms

    def forget(self, segment: Segment) -> None:
        """Drop what the rules keep about a retired segment (its firing alerts stay)."""
        for key, alert in list(self._alerts.items()):
            if alert.segment == segment and alert.status is not Status.FIRING:
                del self._alerts[key]
        self._latest_start.pop(segment, None)
        self._budget_pairs = None
        self._arrivals.pop(segment, None)

    def active(self) -> list[ActiveAlert]:
        """Alerts that are pending or firing, in rule order."""
        alerts = [a for a in self._alerts.values() if a.status is not Status.INACTIVE]
        return sorted(alerts, key=lambda a: (a.rule.index, a.segment))

    def find(self, rule_name: str, segment: Segment) -> ActiveAlert | None:
        """The state of the first rule named `rule_name` in `segment`, if it saw a window."""
        for (_, seg), alert in self._alerts.items():
            if alert.rule.name == rule_name and seg == segment:
                return alert
        return None

    def _last_arrival(self, rule: AlertRule) -> int:
        arrivals = [at for seg, at in self._arrivals.items() if _applies(rule, seg)]
        return max(arrivals, default=self._start_ms)

    def _alert(self, rule: AlertRule, segment: Segment) -> ActiveAlert:
        key = (rule.index, segment)
        if key not in self._alerts:
            state = AlertState(rule.for_windows, rule.keep_firing_for)
            self._alerts[key] = ActiveAlert(rule, segment, state, WindowTrack.for_rule(rule))
        return self._alerts[key]

    def _evaluate(
        self,
        summary: WindowSummary,
        now_ms: int,
        transitions: list[AlertTransition],
        *,
        quick: bool = False,
    ) -> list[ActiveAlert]:
        if self._latest_start.get(summary.segment, -1) >= summary.start_ms:
            return []
        if summary.segment not in self._latest_start:
            self._budget_pairs = None  # a new segment shares the false-page budget
        self._latest_start[summary.segment] = summary.start_ms
        rules = [r for r in self.config.rules if _applies(r, summary.segment)]
        window = (summary.start_ms, summary.end_ms)
        # A replay a stop ended early measured a part of the set, not the ranker.
        distrust = [STOPPED_NOTE] if summary.stopped else []
        touched: list[ActiveAlert] = []
        for rule in sorted(rules, key=lambda r: r.is_quality):
            alert = self._alert(rule, _alert_segment(rule, summary.segment))
            touched.append(alert)
            verdict = self._verdict(alert, summary, distrust, quick)
            if rule.condition.role is Role.TRUST and verdict.evidence is Evidence.BAD:
                distrust.append(verdict.note)
            self._apply(alert, verdict, now_ms, window, transitions)
        return touched

    def _verdict(
        self, alert: ActiveAlert, summary: WindowSummary, distrust: list[str], quick: bool
    ) -> Verdict:
        rule = alert.rule
        if rule.is_quality and distrust:
            value = measure_value(summary, rule.measure)
            return Verdict(Evidence.UNKNOWN, value, note="held: " + "; ".join(distrust))
        held = rule.condition.hold(
            rule.measure,
            summary,
            small=self.config.too_few_queries(summary.queries, summary.evaluation_set_queries),
            before_start=summary.end_ms <= self._start_ms,
            min_queries=self.config.min_queries,
        )
        if held is not None:
            return held
        alert.track.follow_version(
            rule, summary.evaluation_set_version, self._rebase(alert, summary.segment)
        )
        level = self._window_level() if rule.in_budget else None
        verdict = self._hold_limit(
            alert, summary, evaluate_window(rule, summary, alert.track, quick=quick, level=level)
        )
        if not verdict.held:
            alert.track.remember(rule, summary)
        return verdict

    def _hold_limit(self, alert: ActiveAlert, summary: WindowSummary, verdict: Verdict) -> Verdict:
        """A drop held past its rule's `max_hold` windows in a row pages; a window that no
        longer shows a held drop releases it only as `_release` allows."""
        limit = alert.rule.condition.hold_limit()
        if limit is None:
            return verdict
        released = not verdict.held and verdict.evidence is Evidence.GOOD
        if released and alert.held_windows:
            verdict = self._release(alert, summary, verdict)
        if not verdict.held:
            alert.held_windows = 0
            return verdict
        alert.held_windows += 1
        if alert.held_windows <= limit:
            return verdict
        note = (
            f"held {alert.held_windows} windows in a row, past max_hold {limit}: paging on "
            f"the measure ({verdict.note})"
        )
        return replace(verdict, evidence=Evidence.BAD, note=note)

    def _release(self, alert: ActiveAlert, summary: WindowSummary, verdict: Verdict) -> Verdict:
        """Whether a window that no longer shows a held drop releases it. A model judge's
        grades may have lifted it (a judge grading junk one grade up halves a real drop), so
        where a model graded pairs of the window the audit-corrected value decides: under
        the drop's floor it pages, with too few audited queries the drop stays held; and
        while a `judge` rule fires (its grades moved from the people's) nothing releases it.
        Without a model judge the grades are the people's: the window releases it."""
        if self._judge_firing():
            note = (
                "held: a judge rule fires (a model judge's grades moved from the people's), "
                f"so a window its grades may have lifted does not release the held drop "
                f"({verdict.note})"
            )
            return replace(verdict, evidence=Evidence.UNKNOWN, note=note, held=True)
        corrected = (
            None if self.corrected is None else self.corrected(summary.segment, summary.start_ms)
        )
        floor = alert.rule.condition.release_floor(verdict)
        if corrected is None or floor is None or corrected.get("measure") != alert.rule.measure:
            return verdict
        estimate = float(corrected.get("estimate", math.nan))
        audited = int(float(corrected.get("audited", 0)))
        if math.isnan(estimate):
            note = (
                f"held: a model judge graded this window's documents and only {audited} "
                "queries are audited by people, too few for the audit-corrected value a held "
                f"drop is released on ({verdict.note})"
            )
            return replace(verdict, evidence=Evidence.UNKNOWN, note=note, held=True)
        interval = (
            f"audit-corrected {alert.rule.measure} {estimate:.4f} (95 % "
            f"{float(corrected.get('lower', math.nan)):.4f} to "
            f"{float(corrected.get('upper', math.nan)):.4f}, {audited} queries audited)"
        )
        if estimate < floor:
            note = (
                f"the {interval} is under the drop's floor {floor:.4f}: the model judge's "
                f"grades lifted the measure, the people's do not ({verdict.note})"
            )
            return replace(verdict, evidence=Evidence.BAD, note=note)
        return replace(verdict, note=f"released on the {interval} ({verdict.note})")

    def _judge_firing(self) -> bool:
        """Whether a `judge` rule fires: a model judge stopped grading as the people do."""
        return any(
            alert.rule.condition.role is Role.JUDGE and alert.status is Status.FIRING
            for alert in self._alerts.values()
        )

    def _rebase(self, alert: ActiveAlert, segment: Segment) -> Rebase | None:
        """How `alert`'s baseline windows (of `segment`) are re-scored under a new version."""
        rescore = self.rescore
        if rescore is None:
            return None
        measure = alert.rule.measure

        def rebase(window: BaselineWindow, old: str, new: str) -> BaselineWindow | None:
            return rescore(window, segment, measure, old, new)

        return rebase

    def _pairs(self) -> int:
        """The (budgeted rule, segment) pairs sharing `alerts.false_pages_per_day`: every
        budgeted window rule on every segment it applies to that has had a window, and each
        budgeted comparison and judge rule once; counted again when a segment comes or goes."""
        if self._budget_pairs is None:
            windows = sum(
                1
                for rule in self.config.rules
                if rule.in_budget and rule.condition.role is Role.QUALITY
                for segment in self._latest_start
                if _applies(rule, segment)
            )
            others = sum(
                1
                for rule in self.config.rules
                if rule.in_budget and rule.condition.role in {Role.COMPARISON, Role.JUDGE}
            )
            self._budget_pairs = windows + others
        return self._budget_pairs

    def _share(self) -> float | None:
        """Each budgeted rule-segment's false pages a day (None: no budget)."""
        return self.config.share(self._pairs())

    def _window_level(self) -> float | None:
        """Each budgeted window rule-segment's level a window (None: no budget)."""
        return self.config.window_level(self._pairs())

    def _judge_level(self, rule: AlertRule, now_ms: int) -> float | None:
        """The level of a judge rule's next look: its share of a day spent over the day's
        looks, share x 6 / (pi^2 j^2) for the j-th (their sum stays under the share however
        often the audit changes)."""
        share = self._share()
        if share is None:
            return None
        day = now_ms // 86_400_000
        seen_day, looks = self._judge_looks.get(rule.index, (day, 0))
        looks = looks + 1 if seen_day == day else 1
        self._judge_looks[rule.index] = (day, looks)
        return share * 6.0 / (math.pi**2 * looks**2)

    def _apply(
        self,
        alert: ActiveAlert,
        verdict: Verdict,
        at_ms: int,
        window: tuple[int, int] | None,
        transitions: list[AlertTransition],
    ) -> None:
        change = alert.state.observe(verdict.evidence, at_ms)
        if verdict.evidence is not Evidence.UNKNOWN or alert.verdict is None:
            alert.verdict, alert.window = verdict, window
        if change is None:
            return
        # At its window (event time), never later than now: in a backlog that is long ago.
        when = at_ms if window is None else min(window[1], at_ms)
        message = None
        if change.after is Status.FIRING:
            alert.fired_at_ms = when
            message = alert_message(alert, self.config, None, self.query_texts)
        elif change.resolved:
            message = alert_message(
                alert, self.config, max(when, alert.fired_at_ms or when), self.query_texts
            )
        transitions.append(
            AlertTransition(alert.rule, alert.segment, change, at_ms, verdict, window, message)
        )

    def _publish(
        self,
        transitions: Sequence[AlertTransition],
        touched: Sequence[ActiveAlert],
        standing: Sequence[ActiveAlert] = (),
    ) -> None:
        """Update the firing gauge; hand new firings, resolutions and `standing` to delivery.

        A firing alert is sent once, with the window that fired it; delivery re-sends it
        while it stands. Later windows do not re-notify: a receiver gets one notification
        per firing and one per resolution, in the order they happened.
        """
        if self.metrics is not None:
            for transition in transitions:
                if transition.change.after is Status.FIRING:
                    rule = transition.rule
                    self.metrics.count_alert_firing(rule.name, rule.severity, transition.segment)
            for alert in {id(a): a for a in touched}.values():
                firing = alert.status is Status.FIRING
                self.metrics.set_alert_firing(
                    alert.rule.name, alert.rule.severity, alert.segment, firing
                )
        if self.delivery is None:
            return
        messages = [alert_message(alert, self.config, None, self.query_texts) for alert in standing]
        messages += [t.message for t in transitions if t.message is not None]
        self.delivery.offer(messages)
