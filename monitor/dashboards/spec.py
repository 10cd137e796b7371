"""What the dashboards are built from: segment keys, window size and the alert rules to draw.

Without a config the dashboards carry no thresholds and the segment keys of DESIGN.md's
example (`model`); with `--config FILE` they take the file's `segments.keys`, `windows.size`
and the `below`/`drop` conditions of `alerts.rules`. Only those keys are read here; a wrong
one raises `ConfigError` naming it, like the service's own config loading.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from monitor.config_values import parse_duration
from monitor.errors import ConfigError, InputError

__all__ = ["DEFAULT_SPEC", "DashboardSpec", "DropRule", "FloorRule", "RuleSeries", "load_spec"]

_MEASURE: Final = re.compile(r"^(ndcg|precision|recall|judged)@([1-9][0-9]*)$|^(mrr|map)$")


@dataclass(frozen=True)
class RuleSeries:
    """The series an alert rule watches: `rankmon_<family>{k, gain, segment...}`."""

    family: str  # ndcg, precision, recall, judged, mrr, map
    k: str | None  # None for mrr and map
    gain: str | None  # nDCG only
    segment: tuple[tuple[str, str], ...]  # fixed segment labels; empty: every segment

    @property
    def title(self) -> str:
        names = {"ndcg": "nDCG", "mrr": "MRR", "map": "MAP"}
        name = names.get(self.family, self.family.capitalize())
        at = f"@{self.k}" if self.k else ""
        gain = f" ({self.gain})" if self.gain else ""
        return f"{name}{at}{gain}"


@dataclass(frozen=True)
class FloorRule:
    """`below`: fire when the window's mean falls under `floor`."""

    name: str
    severity: str
    series: RuleSeries
    floor: float


@dataclass(frozen=True)
class DropRule:
    """`drop`: fire when the window's mean falls `amount` below the baseline.

    `relative` says whether `amount` is a share of the baseline (0.05: 5 % lower) or an
    absolute difference. The baseline is the trailing median of the last `baseline_windows`
    windows (as the alerting stage computes it), or the `pinned` value.
    """

    name: str
    severity: str
    series: RuleSeries
    amount: float
    relative: bool
    baseline_windows: int
    pinned: float | None = None


@dataclass(frozen=True)
class DashboardSpec:
    """The inputs of the dashboards; `window` is the configured size as written (`5m`)."""

    segment_keys: tuple[str, ...] = ("model",)
    window: str = "5m"
    floors: tuple[FloorRule, ...] = ()
    drops: tuple[DropRule, ...] = ()


DEFAULT_SPEC: Final = DashboardSpec()


def load_spec(path: Path) -> DashboardSpec:
    """Read the keys the dashboards need from a rankmon YAML config."""
    try:
        raw: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise InputError(str(path), f"cannot read the config: {error}") from error
    config = raw if isinstance(raw, dict) else {}
    keys = _section(config, "segments").get("keys", list(DEFAULT_SPEC.segment_keys))
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ConfigError("segments.keys", "must be a list of label names")
    window = str(_section(config, "windows").get("size", DEFAULT_SPEC.window))
    try:
        parse_duration(window)
    except ValueError as error:
        raise ConfigError("windows.size", str(error)) from error
    gains = _section(config, "metrics").get("gains", ["linear"])
    first_gain = str(gains[0]) if isinstance(gains, list) and gains else "linear"
    rules = _section(config, "alerts").get("rules", []) or []
    if not isinstance(rules, list):
        raise ConfigError("alerts.rules", "must be a list of rules")
    floors: list[FloorRule] = []
    drops: list[DropRule] = []
    for index, rule in enumerate(rules):
        _read_rule(f"alerts.rules[{index}]", rule, first_gain, floors, drops)
    return DashboardSpec(tuple(sorted(keys)), window, tuple(floors), tuple(drops))


def _section(config: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = config.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(key, "must be a mapping")
    return value


def _read_rule(
    key: str, rule: Any, first_gain: str, floors: list[FloorRule], drops: list[DropRule]
) -> None:
    if not isinstance(rule, dict):
        raise ConfigError(key, "must be a mapping")
    name, severity = str(rule.get("name", "")), str(rule.get("severity", "warning"))
    if not name:
        raise ConfigError(f"{key}.name", "is required")
    series = _rule_series(key, rule, first_gain)
    if "below" in rule:
        floors.append(FloorRule(name, severity, series, _number(f"{key}.below", rule["below"])))
    if "drop" in rule:
        drop = rule["drop"]
        if not isinstance(drop, dict):
            raise ConfigError(f"{key}.drop", "must be a mapping")
        drops.append(_drop_rule(f"{key}.drop", name, severity, series, drop))


def _drop_rule(
    key: str, name: str, severity: str, series: RuleSeries, drop: Mapping[str, Any]
) -> DropRule:
    relative = "relative" in drop
    if relative == ("absolute" in drop):
        raise ConfigError(key, "needs exactly one of relative or absolute")
    amount = _number(
        f"{key}.{'relative' if relative else 'absolute'}",
        drop.get("relative", drop.get("absolute")),
    )
    windows = drop.get("baseline_windows", 12)
    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ConfigError(f"{key}.baseline_windows", "must be a positive integer")
    pinned = drop.get("pinned")
    pinned_value = None if pinned is None else _number(f"{key}.pinned", pinned)
    return DropRule(name, severity, series, amount, relative, windows, pinned_value)


def _rule_series(key: str, rule: Mapping[str, Any], first_gain: str) -> RuleSeries:
    measure = str(rule.get("measure", ""))
    match = _MEASURE.match(measure)
    if match is None:
        raise ConfigError(f"{key}.measure", f"unknown measure {measure!r}")
    family = match.group(1) or match.group(3)
    gain = str(rule.get("gain", first_gain)) if family == "ndcg" else None
    segment = rule.get("segment") or {}
    if not isinstance(segment, dict):
        raise ConfigError(f"{key}.segment", "must be a mapping of label to value")
    labels = tuple(sorted((str(k), str(v)) for k, v in segment.items()))
    return RuleSeries(family, match.group(2), gain, labels)


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(key, "must be a number")
    return float(value)
