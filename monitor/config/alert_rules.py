"""Reading one rule of `alerts.rules`, with errors that name the rule and its key.

Read like every other section (`monitor.sections.ConfigSection`): a null or missing key
takes its default, an unknown key is refused with the closest valid one suggested, durations
take a unit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.alerting.rules import (
    AlertRule,
    Below,
    Comparison,
    Condition,
    Coverage,
    Drop,
    Judged,
    Stale,
    Trend,
)
from monitor.comparisons.record import SCOPES
from monitor.scoring.catalog import KIND_TABLE
from monitor.sections import (
    REQUIRED,
    ConfigSection,
    as_choice,
    as_duration,
    as_int,
    as_number,
    as_str,
    describe,
)
from monitor.values import duration_of_ms
from monitor.windows.summary import Segment

__all__ = [
    "CONDITION_PARSERS",
    "RULE_KEYS",
    "SEVERITIES",
    "RuleContext",
    "read_rule",
    "read_segment_filter",
    "render_rule",
]

RULE_KEYS: tuple[str, ...] = ("name", "measure", "gain", "segment", "severity", "for")
RULE_KEYS += ("keep_firing_for", "runbook_url")
SEVERITIES = ("critical", "warning", "info", "page", "ticket")
RANKED_MEASURES = tuple(
    kind.name for kind in KIND_TABLE if kind.quality and kind.cutoff is not False
)
UNRANKED_MEASURES = tuple(kind.name for kind in KIND_TABLE if kind.quality and kind.cutoff is False)


@dataclass(frozen=True)
class RuleContext:
    """What a rule may refer to: the monitor's cutoffs, gains and segment keys, and the
    configured comparisons (name -> (candidate filter, measures))."""

    cutoffs: tuple[int, ...]
    gains: tuple[str, ...]
    segment_keys: tuple[str, ...]
    runbook_url: str | None
    comparisons: Mapping[str, tuple[Segment, tuple[str, ...]]] = field(default_factory=dict)


def read_rule(section: ConfigSection, index: int, context: RuleContext) -> AlertRule:
    """One rule; its problems read `config key 'alerts.rules[i].key': rule 'name': ...`."""
    name = section.get("name", as_str, None)
    if name is None:
        raise section.error("name", "every rule needs a name (it becomes the alertname)")
    rule = section.labelled(f"rule '{name}': ")
    conditions = [key for key in CONDITION_PARSERS if rule.present(key)]
    if len(conditions) != 1:
        unknown = [n for n in rule.names() if n not in RULE_KEYS and n not in CONDITION_PARSERS]
        if unknown:  # a misspelt condition: say which key, with a suggestion
            for key in (*RULE_KEYS, *CONDITION_PARSERS):
                rule.get(key, _anything, None)
            rule.finish()
        raise rule.error("", f"needs exactly one condition of {_CONDITIONS}, got {conditions}")
    condition = CONDITION_PARSERS[conditions[0]](rule, conditions[0], context)
    severity = rule.get("severity", as_choice(*SEVERITIES), "warning")
    stale = isinstance(condition, Stale)
    if stale and (rule.has("for") or rule.has("keep_firing_for")):
        raise rule.error("for", "stale rules take no for/keep_firing_for: `after` is the delay")
    for_windows = rule.get("for", as_int(1), 1)
    keep_firing_for = rule.get("keep_firing_for", as_int(0), 0)
    measure = _measure_key(rule, condition, context)
    if isinstance(condition, Comparison):
        # the alert's segment labels are the candidate's: "v2 is worse" pages about v2
        if rule.has("segment"):
            raise rule.error("segment", "comparison rules take the comparison's candidate")
        rule.get("segment", _anything, None)
        segment: Segment | None = context.comparisons[condition.comparison][0]
    else:
        segment = _segment_filter(rule, context)
    runbook = rule.get("runbook_url", as_str, context.runbook_url)
    rule.finish()
    return AlertRule(
        name=name,
        index=index,
        severity=severity,
        measure=measure,
        condition=condition,
        segment=segment,
        for_windows=for_windows,
        keep_firing_for=keep_firing_for,
        runbook_url=runbook,
    )


def _anything(value: Any) -> Any:
    return value


def _measure_key(rule: ConfigSection, condition: Condition, context: RuleContext) -> str:
    """The catalog key of the rule's measure: `ndcg@10` + gain `linear` -> `ndcg@10:linear`."""
    if isinstance(condition, Comparison):
        return _comparison_measure(rule, condition, context)
    if isinstance(condition, Coverage | Judged | Stale):
        if rule.has("measure") or rule.has("gain"):
            raise rule.error("measure", "coverage, judged and stale rules take no measure")
        rule.get("measure", _anything, None)
        rule.get("gain", _anything, None)
        if isinstance(condition, Judged):
            return f"judged@{condition.k}"
        return "coverage" if isinstance(condition, Coverage) else "window"
    measure = rule.get("measure", as_str, None)
    if measure is None:
        raise rule.error("measure", "is required: one of ndcg@k, precision@k, recall@k, mrr, map")
    name, _, cutoff = measure.partition("@")
    if name in UNRANKED_MEASURES and not cutoff:
        key = name
    elif name in RANKED_MEASURES and cutoff:
        key = f"{name}@{_cutoff(rule, cutoff, context)}"
    else:
        raise rule.error(
            "measure", f"unknown measure {describe(measure)} (ndcg@k, precision@k, ...)"
        )
    if name != "ndcg":
        if rule.has("gain"):
            raise rule.error("gain", "only nDCG rules take a gain")
        rule.get("gain", _anything, None)
        return key
    gain = rule.get("gain", as_str, context.gains[0] if context.gains else "linear")
    if gain not in context.gains:
        raise rule.error(
            "gain", f"the monitor computes gains {list(context.gains)}, not {describe(gain)}"
        )
    return f"{key}:{gain}"


def _cutoff(rule: ConfigSection, text: str, context: RuleContext) -> int:
    if not text.isdigit() or int(text) not in context.cutoffs:
        raise rule.error(
            "measure",
            f"cutoff {describe(text)} is not one the monitor computes {list(context.cutoffs)}",
        )
    return int(text)


def _segment_filter(rule: ConfigSection, context: RuleContext) -> Segment | None:
    return read_segment_filter(rule, "segment", context.segment_keys)


def read_segment_filter(
    section: ConfigSection, name: str, segment_keys: Sequence[str], *, required: bool = False
) -> Segment | None:
    """A segment filter `{key: value}` of configured segment keys (a rule's `segment`, a
    comparison's `baseline` and `candidate`); None when absent and not `required`."""
    raw = section.get(name, _segment_mapping, REQUIRED if required else None)
    if raw is None:
        return None
    for key, value in raw.items():
        if key not in segment_keys:
            raise section.error(
                f"{name}.{key}", f"is not a configured segment key {list(segment_keys)}"
            )
        if not isinstance(value, str):
            raise section.error(f"{name}.{key}", f"must be a string, got {describe(value)}")
    # A filter names a subset of the keys; windows carry all of them, so matching is by subset.
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def _segment_mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise ValueError("must be a mapping of segment key to value")
    return value


def _below(rule: ConfigSection, key: str, context: RuleContext) -> Below:
    return Below(threshold=rule.get(key, as_number(0.0)))


def _drop(rule: ConfigSection, key: str, context: RuleContext) -> Drop:
    drop = rule.section(key)
    amounts = [name for name in ("relative", "absolute") if drop.has(name)]
    if len(amounts) != 1:
        raise rule.error(key, "needs exactly one of relative or absolute")
    relative = drop.get("relative", as_number(0.0), None)
    absolute = drop.get("absolute", as_number(0.0), None)
    significance = drop.get("significance", _fraction, 0.01)
    config = Drop(
        relative=relative,
        absolute=absolute,
        baseline_windows=drop.get("baseline_windows", as_int(2), 12),
        significance=significance,
        min_queries=drop.get("min_queries", as_int(2), 30),
        pinned=drop.get("pinned", as_number(0.0), None),
    )
    drop.finish()
    return config


def _fraction(value: Any) -> float:
    number = as_number()(value)
    if not 0.0 < number < 1.0:
        raise ValueError(f"must be in (0, 1), got {describe(value)}")
    return number


def _trend(rule: ConfigSection, key: str, context: RuleContext) -> Trend:
    trend = rule.section(key)
    threshold = trend.get("threshold", as_number(0.0), 0.05)
    if threshold <= 0:
        raise trend.error("threshold", "must be positive")
    config = Trend(
        delta=trend.get("delta", as_number(0.0), 0.005),
        threshold=threshold,
        min_windows=trend.get("min_windows", as_int(1), 6),
    )
    trend.finish()
    return config


def _coverage(rule: ConfigSection, key: str, context: RuleContext) -> Coverage:
    coverage = rule.section(key)
    minimum = coverage.get("min", _share("a share of the evaluation set"))
    coverage.finish()
    return Coverage(minimum=minimum)


def _share(what: str) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        share = as_number(0.0)(value)
        if share > 1:
            raise ValueError(f"is {what}, at most 1: {describe(value)}")
        return share

    return parse


def _judged(rule: ConfigSection, key: str, context: RuleContext) -> Judged:
    judged = rule.section(key)
    k = judged.get("k", as_int(1))
    if k not in context.cutoffs:
        raise judged.error("k", f"cutoff {k} is not one the monitor computes")
    minimum = judged.get("min", _share("a share of the top k"))
    judged.finish()
    return Judged(k=k, minimum=minimum)


def _stale(rule: ConfigSection, key: str, context: RuleContext) -> Stale:
    stale = rule.section(key)
    after = stale.get("after", as_duration)
    stale.finish()
    if after.ms <= 0:
        raise stale.error("after", f"must be longer than zero, got {after}")
    return Stale(after_ms=after.ms)


def _comparison(rule: ConfigSection, key: str, context: RuleContext) -> Comparison:
    section = rule.section(key)
    name = section.get("name", as_str)
    if name not in context.comparisons:
        known = sorted(context.comparisons)
        raise section.error("name", f"no comparison {describe(name)} is configured {known}")
    direction = section.get("direction", as_choice("worse", "better"), "worse")
    margin = section.get("margin", as_number(0.0), 0.0)
    scope = section.get("scope", as_choice(*SCOPES), "population")
    section.finish()
    return Comparison(comparison=name, direction=direction, margin=margin, scope=scope)


def _comparison_measure(rule: ConfigSection, condition: Comparison, context: RuleContext) -> str:
    measures = context.comparisons[condition.comparison][1]
    measure = rule.get("measure", as_str, None)
    gain = rule.get("gain", as_str, None)
    if measure is None:
        if gain is not None:
            raise rule.error("gain", "needs a measure")
        return measures[0]
    name = measure.partition("@")[0]
    key = measure if name != "ndcg" else f"{measure}:{gain or (context.gains or ('linear',))[0]}"
    if key not in measures:
        raise rule.error(
            "measure", f"comparison {condition.comparison!r} compares {list(measures)}, not {key}"
        )
    return key


CONDITION_PARSERS: dict[str, Callable[[ConfigSection, str, RuleContext], Condition]] = {
    "below": _below,
    "drop": _drop,
    "trend": _trend,
    "coverage": _coverage,
    "judged": _judged,
    "stale": _stale,
    "comparison": _comparison,
}
_CONDITIONS = sorted(CONDITION_PARSERS)


def render_rule(rule: AlertRule) -> dict[str, Any]:
    """The rule as config data, every default filled in (`read_rule` reads it back)."""
    condition = rule.condition
    out: dict[str, Any] = {"name": rule.name}
    if not isinstance(condition, Coverage | Judged | Stale):
        measure, _, gain = rule.measure.partition(":")
        out["measure"] = measure
        if gain:
            out["gain"] = gain
    if rule.segment is not None:
        out["segment"] = dict(rule.segment)
    out["severity"] = rule.severity
    if isinstance(condition, Below):
        out["below"] = condition.threshold
    elif isinstance(condition, Drop):
        amount = "relative" if condition.relative is not None else "absolute"
        out["drop"] = {
            amount: condition.relative if condition.relative is not None else condition.absolute,
            "baseline_windows": condition.baseline_windows,
            "significance": condition.significance,
            "min_queries": condition.min_queries,
            "pinned": condition.pinned,
        }
    elif isinstance(condition, Trend):
        out["trend"] = {
            "delta": condition.delta,
            "threshold": condition.threshold,
            "min_windows": condition.min_windows,
        }
    elif isinstance(condition, Coverage):
        out["coverage"] = {"min": condition.minimum}
    elif isinstance(condition, Judged):
        out["judged"] = {"k": condition.k, "min": condition.minimum}
    elif isinstance(condition, Comparison):
        out["comparison"] = {
            "name": condition.comparison,
            "direction": condition.direction,
            "margin": condition.margin,
            "scope": condition.scope,
        }
        out.pop("segment", None)
    else:
        out["stale"] = {"after": _duration_text(condition.after_ms)}
    if not isinstance(condition, Stale):
        out["for"] = rule.for_windows
        out["keep_firing_for"] = rule.keep_firing_for
    out["runbook_url"] = rule.runbook_url
    return out


def _duration_text(ms: int) -> str:
    return duration_of_ms(ms).text
