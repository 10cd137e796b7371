"""The `alerts:` section: good rules parse to measure keys; bad ones stop start, naming the rule."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.alerting.conditions import CONDITIONS, Below, Drop, Stale, Trend
from monitor.alerting.rules import RULE_KEYS, SEVERITIES
from monitor.comparisons.settings import ComparisonConfig
from monitor.config.alerts import parse_alerting_config, render_alerts
from monitor.config.comparisons import read_comparisons, render_comparisons
from monitor.config.loader import load_config
from monitor.errors import ConfigError
from monitor.scoring.catalog import monitor_keys
from monitor.sections import ConfigSection
from monitor.service import Monitor

DESIGN_EXAMPLE: dict[str, Any] = {
    "rules": [
        {
            "name": "ndcg10-floor",
            "measure": "ndcg@10",
            "gain": "linear",
            "segment": {"model": "v42"},
            "severity": "critical",
            "below": 0.55,
            "for": 2,
            "keep_firing_for": 1,
        },
        {
            "name": "ndcg10-drop",
            "measure": "ndcg@10",
            "severity": "warning",
            "drop": {
                "relative": 0.05,
                "baseline_windows": 12,
                "significance": 0.01,
                "min_queries": 30,
            },
        },
    ],
    "alertmanager": {"url": "http://127.0.0.1:9093"},
    "webhook": {"url": None},
}


def parse(raw: dict[str, Any]) -> Any:
    return parse_alerting_config(
        raw, cutoffs=[5, 10, 20], gains=["exp", "linear"], segment_keys=["model"], window="5m"
    )


def with_second_rule(**rule: Any) -> dict[str, Any]:
    """The design example with its second rule replaced by `rule` (named `bad-rule`)."""
    return {"rules": [DESIGN_EXAMPLE["rules"][0], {"name": "bad-rule", **rule}]}


def test_design_example_parses_to_measure_keys_and_conditions() -> None:
    config = parse(DESIGN_EXAMPLE)
    floor, drop = config.rules
    assert floor.measure == "ndcg@10:linear"
    assert floor.condition == Below(0.55)
    assert (floor.for_windows, floor.keep_firing_for) == (2, 1)
    assert floor.segment == (("model", "v42"),)
    # Without `gain`, an nDCG rule takes the first configured gain.
    assert drop.measure == "ndcg@10:exp"
    assert drop.condition == Drop(0.05, None, 12, 0.01, 30, None)
    assert config.alertmanager.url is not None
    assert config.alertmanager.url.reveal() == "http://127.0.0.1:9093"
    assert config.webhook.url is None
    assert config.window_ms == 300_000


def test_measures_without_gain_keep_their_plain_keys() -> None:
    raw = {
        "rules": [
            {"name": "p", "measure": "precision@5", "below": 0.2},
            {"name": "m", "measure": "mrr", "below": 0.3},
            {"name": "s", "stale": {"after": "15m"}},
        ]
    }
    rules = parse(raw).rules
    assert [rule.measure for rule in rules] == ["precision@5", "mrr", "window"]
    assert rules[2].condition == Stale(after_ms=900_000)


BAD_RULES = [
    ({"measure": "ndcg_cut_10", "below": 0.5}, "alerts.rules[1].measure", "unknown measure"),
    ({"measure": "ndcg@15", "below": 0.5}, "alerts.rules[1].measure", "cutoff '15'"),
    ({"measure": "ndcg@10", "below": -0.1}, "alerts.rules[1].below", "at least 0"),
    (
        {"measure": "ndcg@10", "drop": {"relative": 0.05, "significance": 1.5}},
        "alerts.rules[1].drop.significance",
        "(0, 1)",
    ),
    (
        {"measure": "ndcg@10", "drop": {"relative": 0.05, "significance": 0}},
        "alerts.rules[1].drop.significance",
        "(0, 1)",
    ),
    ({"measure": "ndcg@10", "above": 0.5}, "alerts.rules[1].above", "unknown key"),
    ({"measure": "ndcg@10", "below": 0.5, "colour": "red"}, "alerts.rules[1].colour", "unknown"),
    (
        {"measure": "ndcg@10", "drop": {"relative": 0.05, "window": 3}},
        "alerts.rules[1].drop.window",
        "unknown key",
    ),
    ({"measure": "ndcg@10", "below": 0.5, "drop": {}}, "alerts.rules[1]", "exactly one"),
    ({"measure": "precision@10", "gain": "exp", "below": 0.5}, "alerts.rules[1].gain", "only"),
    ({"measure": "ndcg@10", "gain": "graded", "below": 0.5}, "alerts.rules[1].gain", "graded"),
    (
        {"measure": "ndcg@10", "below": 0.5, "segment": {"market": "de"}},
        "alerts.rules[1].segment.market",
        "not a configured segment key",
    ),
    ({"measure": "ndcg@10", "below": 0.5, "for": 0}, "alerts.rules[1].for", "at least 1"),
    ({"judged": {"k": 7, "min": 0.8}}, "alerts.rules[1].judged.k", "cutoff 7"),
    ({"coverage": {"min": 1.5}}, "alerts.rules[1].coverage.min", "at most 1"),
    ({"stale": {"after": "soon"}}, "alerts.rules[1].stale.after", "duration"),
    ({"measure": "ndcg@10", "stderr": {"max": 0}}, "alerts.rules[1].stderr.max", "positive"),
    ({"measure": "ndcg@10", "stderr": {}}, "alerts.rules[1].stderr.max", "required"),
    ({"stderr": {"max": 0.02}}, "alerts.rules[1].measure", "is required"),
]


@pytest.mark.parametrize(("rule", "key", "problem"), BAD_RULES)
def test_bad_rule_is_refused_with_its_key_and_name(
    rule: dict[str, Any], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(with_second_rule(**rule))
    assert caught.value.key == key
    assert "rule 'bad-rule'" in str(caught.value)
    assert problem in str(caught.value)


def test_rule_without_a_name_is_refused_by_index() -> None:
    with pytest.raises(ConfigError) as caught:
        parse({"rules": [{"measure": "mrr", "below": 0.1}]})
    assert caught.value.key == "alerts.rules[0].name"


def test_unknown_top_level_key_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        parse({"rules": [], "pagerduty": {}})
    assert caught.value.key == "alerts.pagerduty"


def test_the_instance_label_defaults_to_the_host_name_and_can_be_set() -> None:
    assert parse({"rules": []}).instance == socket.gethostname()
    assert parse({"rules": [], "instance": "rankmon-1"}).instance == "rankmon-1"
    for bad in ("", 7):
        with pytest.raises(ConfigError) as caught:
            parse({"rules": [], "instance": bad})
        assert caught.value.key == "alerts.instance"


def test_two_rules_with_one_identity_are_refused() -> None:
    rule = {"name": "twin", "measure": "mrr", "below": 0.1}
    with pytest.raises(ConfigError) as caught:
        parse({"rules": [rule, rule]})
    assert caught.value.key == "alerts.rules[1].name"


def test_the_monitor_refuses_a_bad_rule_at_start_naming_it(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    tree = {
        "kafka": {"topic": "events", "bootstrap_servers": ["127.0.0.1:1"]},
        "evaluation_set": {"path": "qrels.txt"},
        "segments": {"keys": ["model"]},
        "export": {"host": "127.0.0.1", "port": 0},
        "alerts": with_second_rule(measure="ndcg@10", drop={"relative": 0.05, "significance": 1.5}),
    }
    path = tmp_path / "rankmon.yaml"
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        Monitor(load_config(path, environ={}))
    assert str(caught.value) == (
        "config key 'alerts.rules[1].drop.significance': "
        "rule 'bad-rule': must be in (0, 1), got 1.5"
    )


EXAMPLE = Path(__file__).resolve().parents[2] / "rankmon.example.yaml"


def example_alerts() -> tuple[str, dict[str, Any]]:
    """The commented `alerts:` block of rankmon.example.yaml: its text and the mapping."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    block = lines[lines.index("# alerts:") : lines.index("alerts: {}")]
    text = "\n".join(line.removeprefix("#").removeprefix(" ") for line in block)
    return text, yaml.safe_load(text)["alerts"]


def example_comparisons() -> tuple[ComparisonConfig, ...]:
    """The commented `comparisons:` block of rankmon.example.yaml, parsed."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    block = lines[lines.index("# comparisons:") : lines.index("comparisons: []")]
    raw = yaml.safe_load("\n".join(line.removeprefix("# ") for line in block))
    example = load_config(EXAMPLE, {})
    return read_comparisons(
        ConfigSection(raw, "", {}),
        measures=monitor_keys(example.metrics.cutoffs, example.metrics.gains),
        segment_keys=["model"],
    )


def test_the_example_configs_comparisons_block_parses_and_shows_every_key() -> None:
    (comparison,) = example_comparisons()
    assert comparison.name == "v2-vs-v1"
    assert comparison.measures == ("ndcg@10:linear",)
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    block = lines[lines.index("# comparisons:") : lines.index("comparisons: []")]
    raw = yaml.safe_load("\n".join(line.removeprefix("# ") for line in block))
    assert set(raw["comparisons"][0]) == set(render_comparisons([comparison])[0])


def test_the_example_configs_alerts_block_parses_and_shows_every_key_and_condition() -> None:
    text, raw = example_alerts()
    example = load_config(EXAMPLE, {})

    def parse_example(alerts: dict[str, Any], judging: bool = False) -> Any:
        return parse_alerting_config(
            alerts,
            cutoffs=example.metrics.cutoffs,
            gains=example.metrics.gain_names,
            segment_keys=["model"],  # the block's segment filter needs segments.keys: [model]
            window=example.windows.size.text,
            comparisons=example_comparisons(),
            judging=judging,
        )

    config = parse_example(raw, judging=True)  # the judge rule needs the judging loop
    rules = raw["rules"]
    assert set(raw) == set(render_alerts(parse_example({})))  # every key the section reads
    assert {key for rule in rules for key in rule} == set(RULE_KEYS) | {
        kind.key for kind in CONDITIONS
    }
    drops = [rule["drop"] for rule in rules if "drop" in rule]
    assert {key for drop in drops for key in drop} == {
        "relative",
        "absolute",
        "baseline_windows",
        "significance",
        "min_queries",
        "pinned",
        "unjudged",
        "max_hold",
    }
    defaults = render_alerts(parse_example({}))
    assert set(raw["alertmanager"]) == set(defaults["alertmanager"])
    assert set(raw["webhook"]) == set(defaults["webhook"])
    assert set(raw["delivery"]) == {"resend_interval", "backoff_initial", "backoff_max"}
    assert all(severity in text for severity in SEVERITIES)
    # Where the code has a default, the block shows it.
    defaults = parse_example({"rules": []})
    assert config.delivery == defaults.delivery
    assert config.prometheus_job == defaults.prometheus_job
    assert config.instance == defaults.instance
    first_drop = next(rule for rule in config.rules if isinstance(rule.condition, Drop))
    bare_drop = {"name": "d", "measure": "ndcg@10", "drop": {"relative": 0.05}}
    assert first_drop.condition == parse_example({"rules": [bare_drop]}).rules[0].condition
    trend = next(rule for rule in config.rules if isinstance(rule.condition, Trend))
    bare_trend = {"name": "t", "measure": "ndcg@10", "trend": {}}
    assert trend.condition == parse_example({"rules": [bare_trend]}).rules[0].condition
