"""What the dashboards are built from: segment keys, window size and the alert rules to draw.

Without a config the dashboards carry no thresholds, the segment key of the example config
(`model`) and the default scrape job `rankmon`. With `--config FILE` the file is loaded and
checked exactly as `rankmon run` loads it (`monitor.config.loader.load_config`, `RANKMON_`
overrides included; the config's `alerts` for the rules and the job),
so a dashboard never draws a rule the service would refuse, and a bad key fails with the
same one-line `ConfigError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from monitor.alerting.conditions import Drop
from monitor.alerting.rules import AlertRule
from monitor.config.loader import load_config
from monitor.errors import ConfigError, MeasureError
from monitor.export.series import label_values
from monitor.scoring.catalog import MeasureKey

__all__ = ["DEFAULT_SPEC", "DashboardSpec", "DropRule", "FloorRule", "RuleSeries", "load_spec"]

# Catalog measure keys: `ndcg@10:linear`, `precision@5`, `mrr`, `map`.


@dataclass(frozen=True)
class RuleSeries:
    """The series an alert rule watches: `rankmon_<family>{k, gain, segment...}`."""

    family: str  # the measure's kind: ndcg, precision, mrr, rbp, bpref, set_F, ...
    k: str | None  # None for mrr and map
    gain: str | None  # nDCG only
    segment: tuple[tuple[str, str], ...]  # fixed segment labels; empty: every segment
    params: tuple[tuple[str, str], ...] = ()  # its parameters' labels (`p`: "0.8")

    @property
    def title(self) -> str:
        names = {"ndcg": "nDCG", "mrr": "MRR", "map": "MAP"}
        name = names.get(self.family, self.family.capitalize())
        at = f"@{self.k}" if self.k else ""
        gain = f" ({self.gain})" if self.gain else ""
        params = "".join(f":{name}={value}" for name, value in self.params)
        return f"{name}{at}{params}{gain}"


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
    """The inputs of the dashboards; `window` is the configured size as written (`5m`).

    `job` is the scrape job `rankmon rules render` selects (`alerts.prometheus.job`): every
    alert it renders carries it, which is how the dashboards tell those alerts from others.
    """

    segment_keys: tuple[str, ...] = ("model",)
    window: str = "5m"
    floors: tuple[FloorRule, ...] = ()
    drops: tuple[DropRule, ...] = ()
    job: str = "rankmon"
    # rankmon's page (`export.external_url`): quality panels link each point to the
    # explanation of its window there
    external_url: str | None = None
    # the judging loop runs (`judging.enabled`): the bounds panel draws the corrected headline
    judging: bool = False


DEFAULT_SPEC: Final = DashboardSpec()


def load_spec(path: Path) -> DashboardSpec:
    """Load a rankmon config as the service does and keep what the dashboards draw.

    A rule whose condition has a fixed floor (`Condition.floor`: below) is drawn as that
    floor, a drop rule as its moving floor; the others (trend, coverage, judged, stale,
    comparison) have no threshold on a quality series and are not drawn.
    """
    config = load_config(path)
    alerting = config.alerts
    floors: list[FloorRule] = []
    drops: list[DropRule] = []
    for rule in alerting.rules:
        condition = rule.condition
        floor = condition.floor()
        if floor is not None:
            floors.append(FloorRule(rule.name, rule.severity, _series(rule), floor))
        elif isinstance(condition, Drop) and condition.draws_floor:
            drops.append(_drop_rule(rule, condition))
    keys = tuple(sorted(config.segments.keys))
    window = config.windows.size.text
    external = config.explain.external_url
    return DashboardSpec(
        keys,
        window,
        tuple(floors),
        tuple(drops),
        alerting.prometheus_job,
        external,
        config.judging.enabled,
    )


def _drop_rule(rule: AlertRule, drop: Drop) -> DropRule:
    relative = drop.relative is not None
    amount = drop.relative if drop.relative is not None else drop.absolute
    if amount is None:  # the alerting stage guarantees one of the two
        raise ConfigError(f"alerts.rules[{rule.index}].drop", "needs relative or absolute")
    return DropRule(
        rule.name,
        rule.severity,
        _series(rule),
        amount,
        relative,
        drop.baseline_windows,
        drop.pinned,
    )


def _series(rule: AlertRule) -> RuleSeries:
    """The series of the rule's measure, read off its key (the measure table's row)."""
    try:
        key = MeasureKey.parse(rule.measure)
    except MeasureError:
        raise ConfigError(
            f"alerts.rules[{rule.index}].measure", f"cannot draw {rule.measure!r}"
        ) from None
    labels = label_values(key)
    params = tuple((name, labels[name]) for name, _ in key.params)
    k = None if key.k is None else str(key.k)
    gain = None if key.gain is None else str(key.gain)
    return RuleSeries(key.kind, k, gain, tuple(rule.segment or ()), params)
