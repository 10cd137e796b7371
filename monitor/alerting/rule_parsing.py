"""Reading one rule of `alerts.rules` from the raw config, with errors that name the rule."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from monitor.alerting.durations import parse_duration
from monitor.alerting.rules import AlertRule, Below, Condition, Coverage, Drop, Judged, Stale, Trend
from monitor.errors import ConfigError
from monitor.summary import Segment

__all__ = ["RuleContext", "parse_rule"]

RULE_KEYS = {"name", "measure", "gain", "segment", "severity", "for", "keep_firing_for"}
RULE_KEYS |= {"runbook_url"}
SEVERITIES = ("critical", "warning", "info", "page", "ticket")
RANKED_MEASURES = ("ndcg", "precision", "recall")
UNRANKED_MEASURES = ("mrr", "map")


@dataclass(frozen=True)
class RuleContext:
    """What a rule may refer to: the monitor's cutoffs, gains and segment keys."""

    cutoffs: tuple[int, ...]
    gains: tuple[str, ...]
    segment_keys: tuple[str, ...]
    runbook_url: str | None


class _RuleReader:
    """Reads one rule's fields, raising errors that name the rule and the key."""

    def __init__(self, raw: Mapping[str, Any], index: int) -> None:
        self.raw = raw
        self.index = index
        name = raw.get("name")
        self.name = name if isinstance(name, str) and name else f"#{index}"

    def fail(self, key: str, problem: str) -> ConfigError:
        suffix = f".{key}" if key else ""
        return ConfigError(f"alerts.rules[{self.index}]{suffix}", f"rule '{self.name}': {problem}")

    def number(self, key: str, value: Any, *, minimum: float = 0.0) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be a number, got {value!r}")
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum:g}, got {value!r}")
        return float(value)

    def integer(self, key: str, value: Any, *, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"must be an integer of at least {minimum}, got {value!r}")
        return value

    def mapping(self, key: str, allowed: set[str]) -> Mapping[str, Any]:
        value = self.raw[key]
        if not isinstance(value, Mapping):
            raise self.fail(key, f"must be a mapping, got {value!r}")
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise self.fail(f"{key}.{unknown[0]}", f"unknown key (allowed: {sorted(allowed)})")
        return value


def parse_rule(raw: Any, index: int, context: RuleContext) -> AlertRule:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"alerts.rules[{index}]", "must be a mapping")
    reader = _RuleReader(raw, index)
    if not isinstance(raw.get("name"), str) or not raw["name"]:
        raise reader.fail("name", "every rule needs a name (it becomes the alertname)")
    conditions = [key for key in raw if key in CONDITION_PARSERS]
    unknown = sorted(set(raw) - RULE_KEYS - set(CONDITION_PARSERS))
    if unknown:
        raise reader.fail(unknown[0], f"unknown key or condition (conditions: {_CONDITIONS})")
    if len(conditions) != 1:
        raise reader.fail("", f"needs exactly one condition of {_CONDITIONS}, got {conditions}")
    condition = CONDITION_PARSERS[conditions[0]](reader, conditions[0], context)
    severity = raw.get("severity", "warning")
    if severity not in SEVERITIES:
        raise reader.fail("severity", f"must be one of {list(SEVERITIES)}, got {severity!r}")
    if isinstance(condition, Stale) and ({"for", "keep_firing_for"} & set(raw)):
        raise reader.fail("for", "stale rules take no for/keep_firing_for: `after` is the delay")
    runbook = raw.get("runbook_url", context.runbook_url)
    if runbook is not None and not isinstance(runbook, str):
        raise reader.fail("runbook_url", f"must be a string, got {runbook!r}")
    return AlertRule(
        name=raw["name"],
        index=index,
        severity=severity,
        measure=_measure_key(reader, condition, context),
        condition=condition,
        segment=_segment_filter(reader, context),
        for_windows=reader.integer("for", raw.get("for", 1), minimum=1),
        keep_firing_for=reader.integer("keep_firing_for", raw.get("keep_firing_for", 0), minimum=0),
        runbook_url=runbook,
    )


def _measure_key(reader: _RuleReader, condition: Condition, context: RuleContext) -> str:
    """The catalog key of the rule's measure: `ndcg@10` + gain `linear` -> `ndcg@10:linear`."""
    raw = reader.raw
    if isinstance(condition, Coverage | Judged | Stale):
        if "measure" in raw or "gain" in raw:
            raise reader.fail("measure", "coverage, judged and stale rules take no measure")
        if isinstance(condition, Judged):
            return f"judged@{condition.k}"
        return "coverage" if isinstance(condition, Coverage) else "window"
    measure = raw.get("measure")
    if not isinstance(measure, str):
        raise reader.fail("measure", "is required: one of ndcg@k, precision@k, recall@k, mrr, map")
    name, _, cutoff = measure.partition("@")
    if name in UNRANKED_MEASURES and not cutoff:
        key = name
    elif name in RANKED_MEASURES and cutoff:
        key = f"{name}@{_cutoff(reader, cutoff, context)}"
    else:
        raise reader.fail("measure", f"unknown measure {measure!r} (ndcg@k, precision@k, ...)")
    if name != "ndcg":
        if "gain" in raw:
            raise reader.fail("gain", "only nDCG rules take a gain")
        return key
    gain = raw.get("gain", context.gains[0] if context.gains else "linear")
    if gain not in context.gains:
        raise reader.fail("gain", f"the monitor computes gains {list(context.gains)}, not {gain!r}")
    return f"{key}:{gain}"


def _cutoff(reader: _RuleReader, text: str, context: RuleContext) -> int:
    if not text.isdigit() or int(text) not in context.cutoffs:
        raise reader.fail(
            "measure", f"cutoff {text!r} is not one the monitor computes {list(context.cutoffs)}"
        )
    return int(text)


def _segment_filter(reader: _RuleReader, context: RuleContext) -> Segment | None:
    raw = reader.raw.get("segment")
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not raw:
        raise reader.fail("segment", "must be a mapping of segment key to value")
    for key, value in raw.items():
        if key not in context.segment_keys:
            raise reader.fail(
                f"segment.{key}", f"is not a configured segment key {list(context.segment_keys)}"
            )
        if not isinstance(value, str):
            raise reader.fail(f"segment.{key}", f"must be a string, got {value!r}")
    # A filter names a subset of the keys; windows carry all of them, so matching is by subset.
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def _below(reader: _RuleReader, key: str, context: RuleContext) -> Below:
    return Below(threshold=reader.number(key, reader.raw[key]))


def _drop(reader: _RuleReader, key: str, context: RuleContext) -> Drop:
    allowed = {"relative", "absolute", "baseline_windows", "significance", "min_queries"}
    raw = reader.mapping(key, allowed | {"pinned"})
    amounts = [name for name in ("relative", "absolute") if name in raw]
    if len(amounts) != 1:
        raise reader.fail(key, "needs exactly one of relative or absolute")
    amount = reader.number(f"{key}.{amounts[0]}", raw[amounts[0]])
    significance = reader.number(f"{key}.significance", raw.get("significance", 0.01))
    if not 0.0 < significance < 1.0:
        raise reader.fail(f"{key}.significance", f"must be in (0, 1), got {significance!r}")
    pinned = raw.get("pinned")
    return Drop(
        relative=amount if amounts[0] == "relative" else None,
        absolute=amount if amounts[0] == "absolute" else None,
        baseline_windows=reader.integer(
            f"{key}.baseline_windows", raw.get("baseline_windows", 12), minimum=2
        ),
        significance=significance,
        min_queries=reader.integer(f"{key}.min_queries", raw.get("min_queries", 30), minimum=2),
        pinned=None if pinned is None else reader.number(f"{key}.pinned", pinned),
    )


def _trend(reader: _RuleReader, key: str, context: RuleContext) -> Trend:
    raw = reader.mapping(key, {"delta", "threshold", "min_windows"})
    threshold = reader.number(f"{key}.threshold", raw.get("threshold", 0.05))
    if threshold <= 0:
        raise reader.fail(f"{key}.threshold", "must be positive")
    return Trend(
        delta=reader.number(f"{key}.delta", raw.get("delta", 0.005)),
        threshold=threshold,
        min_windows=reader.integer(f"{key}.min_windows", raw.get("min_windows", 6), minimum=1),
    )


def _coverage(reader: _RuleReader, key: str, context: RuleContext) -> Coverage:
    raw = reader.mapping(key, {"min"})
    minimum = reader.number(f"{key}.min", raw.get("min"))
    if minimum > 1:
        raise reader.fail(f"{key}.min", f"is a share of the evaluation set, at most 1: {minimum}")
    return Coverage(minimum=minimum)


def _judged(reader: _RuleReader, key: str, context: RuleContext) -> Judged:
    raw = reader.mapping(key, {"k", "min"})
    k = reader.integer(f"{key}.k", raw.get("k"), minimum=1)
    if k not in context.cutoffs:
        raise reader.fail(f"{key}.k", f"cutoff {k} is not one the monitor computes")
    minimum = reader.number(f"{key}.min", raw.get("min"))
    if minimum > 1:
        raise reader.fail(f"{key}.min", f"is a share of the top k, at most 1: {minimum}")
    return Judged(k=k, minimum=minimum)


def _stale(reader: _RuleReader, key: str, context: RuleContext) -> Stale:
    raw = reader.mapping(key, {"after"})
    try:
        after = parse_duration(raw.get("after"), f"alerts.rules[{reader.index}].{key}.after")
    except ConfigError as error:
        raise reader.fail(f"{key}.after", error.problem) from error
    return Stale(after_ms=after)


CONDITION_PARSERS: dict[str, Callable[[_RuleReader, str, RuleContext], Condition]] = {
    "below": _below,
    "drop": _drop,
    "trend": _trend,
    "coverage": _coverage,
    "judged": _judged,
    "stale": _stale,
}
_CONDITIONS = sorted(CONDITION_PARSERS)
