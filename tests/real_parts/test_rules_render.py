"""`rankmon rules render`: rules that pass promtool's checks and its rule unit tests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from monitor.cli import main
from monitor.dashboards.series import EXPORTED_SERIES, series_names
from monitor.scoring.catalog import EXPORTED_KINDS
from tests.support.realparts import Promtool

pytestmark = pytest.mark.prometheus

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = DATA / "alert_rules_config.yaml"


def render(tmp_path: Path, config: Path = CONFIG, *options: str) -> Path:
    output = tmp_path / "rendered_rules.yml"
    command = ["rules", "render", "--config", str(config), "--output", str(output), *options]
    assert main(command) == 0
    return output


def alert_names(rules_file: Path) -> list[str]:
    rules = yaml.safe_load(rules_file.read_text())
    return [rule["alert"] for rule in rules["groups"][1]["rules"]]


@pytest.mark.parametrize(("options", "alerts"), [((), 7), (("--ungated-drop",), 8)])
def test_rendered_rules_pass_promtool_check(
    tmp_path: Path, promtool: Promtool, options: tuple[str, ...], alerts: int
) -> None:
    rendered = render(tmp_path, CONFIG, *options)
    result = promtool.check_rules(rendered)
    assert result.ok, result.output
    # A mean and a standard error recorded per exported kind of the measure table, the
    # window's queries, coverage and failed queries; then the alerts.
    recorded = 2 * len(EXPORTED_KINDS) + 3
    assert len(alert_names(rendered)) == alerts
    assert f"SUCCESS: {recorded + alerts} rules found" in result.output


def test_rendered_rules_fire_and_resolve_in_promtool_unit_tests(
    tmp_path: Path, promtool: Promtool
) -> None:
    render(tmp_path, CONFIG, "--ungated-drop")
    shutil.copy(DATA / "alert_rules_test.yml", tmp_path)
    result = promtool.test_rules(tmp_path / "alert_rules_test.yml")
    assert result.ok, result.output


def test_the_unit_tests_notice_a_wrong_threshold(tmp_path: Path, promtool: Promtool) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["alerts"]["rules"][0]["below"] = 0.40
    changed = tmp_path / "config.yaml"
    changed.write_text(yaml.safe_dump(config))
    render(tmp_path, changed, "--ungated-drop")
    shutil.copy(DATA / "alert_rules_test.yml", tmp_path)
    assert not promtool.test_rules(tmp_path / "alert_rules_test.yml").ok


def test_drop_and_trend_rules_are_left_to_rankmon_and_the_header_says_why(
    tmp_path: Path,
) -> None:
    rendered = render(tmp_path)
    assert alert_names(rendered) == [
        "ndcg10-floor",
        "pipeline-stale",
        "coverage-low",
        "judged-low",
        "ranker-failing",
        "RankmonDown",
        "RankmonAbsent",
    ]
    header = rendered.read_text().split("groups:")[0]
    assert "#   ndcg10-drop (alerts.rules[1]): drop, gated by a paired test" in header
    assert "#   ndcg10-trend (alerts.rules[3]): trend, Page-Hinkley has no PromQL form" in header
    assert (
        "#   ndcg10-discovery (alerts.rules[7]): discovery, gated by a paired test on per-query "
        "values Prometheus lacks"
    ) in header
    assert "--ungated-drop renders drop rules" in header


def test_the_ungated_drop_is_rendered_only_when_asked_for_and_claims_no_paired_test(
    tmp_path: Path,
) -> None:
    rendered = render(tmp_path, CONFIG, "--ungated-drop")
    assert alert_names(rendered)[:2] == ["ndcg10-floor", "ndcg10-drop"]
    header = rendered.read_text().split("groups:")[0]
    assert "ndcg10-drop" not in header
    assert "ungated-drop" not in header
    drop = yaml.safe_load(rendered.read_text())["groups"][1]["rules"][1]
    summary = drop["annotations"]["summary"]
    assert summary.endswith("; ungated approximation, no paired test")
    assert "p <" not in summary
    assert "no paired test" in drop["annotations"]["description"]


def test_a_bad_rule_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["alerts"]["rules"][1]["drop"]["significance"] = 1.5
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    assert main(["rules", "render", "--config", str(bad)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (
        "rankmon rules: config key 'alerts.rules[1].drop.significance': "
        "rule 'ndcg10-drop': must be in (0, 1), got 1.5"
    )


def test_the_recorded_stderr_is_the_exact_standard_error_over_both_instances_queries(
    tmp_path: Path, promtool: Promtool
) -> None:
    # Two instances, each with its own queries (keyed to its partitions): what they export.
    rng = np.random.default_rng(7)
    per_instance = [rng.uniform(0, 1, 40), rng.uniform(0, 1, 25)]
    everything = np.concatenate(per_instance)
    expected = float(np.std(everything, ddof=1) / np.sqrt(everything.size))
    series = []
    for index, values in enumerate(per_instance):
        labels = f'job="rankmon",instance="i{index}",window="5m",version="v",model="v1"'
        series += [
            {"series": f'rankmon_ndcg_sum_of_query_means{{{labels},k="10",gain="linear"}}',
             "values": f"{float(values.sum())!r}x3"},
            {"series": f'rankmon_ndcg_sum_of_squared_query_means{{{labels},k="10",gain="linear"}}',
             "values": f"{float((values**2).sum())!r}x3"},
            {"series": f"rankmon_window_queries{{{labels}}}", "values": f"{values.size}x3"},
        ]  # fmt: skip
    rules = render(tmp_path, CONFIG)
    test: dict[str, Any] = {
        "rule_files": [rules.name],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'job:rankmon_ndcg:stderr{k="10"}',
                        "eval_time": "2m",
                        "exp_samples": [
                            {
                                "labels": 'job:rankmon_ndcg:stderr{job="rankmon",window="5m",'
                                'version="v",model="v1",k="10",gain="linear"}',
                                "value": expected,
                            }
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "stderr_test.yml").write_text(yaml.safe_dump(test))
    result = promtool.test_rules(tmp_path / "stderr_test.yml")
    assert result.ok, result.output
    # and the check notices a wrong answer
    test["tests"][0]["promql_expr_test"][0]["exp_samples"][0]["value"] = expected * 1.01
    (tmp_path / "stderr_test.yml").write_text(yaml.safe_dump(test))
    assert not promtool.test_rules(tmp_path / "stderr_test.yml").ok


def test_a_stderr_rule_fires_in_promtool_when_the_merged_standard_error_passes_its_max(
    tmp_path: Path, promtool: Promtool
) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["alerts"]["rules"] = [
        {"name": "ndcg10-uncertain", "measure": "ndcg@10", "stderr": {"max": 0.05}}
    ]
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    rules = render(tmp_path, config_path)
    # 40 queries on two instances; from minute 10 they disagree wildly: 20 score 0, 20 score 1
    # (standard error sqrt(0.25 * 40 / 39 / 40) = 0.0801 > 0.05); before, 0.5 +- 0.1 (0.0160).
    calm = np.array([0.4, 0.6] * 20)
    wild = np.array([0.0, 1.0] * 20)
    series = []
    for index in range(2):
        half = slice(index * 20, (index + 1) * 20)
        labels = f'job="rankmon",instance="i{index}",window="5m",version="v",model="v1"'
        sums = f"{float(calm[half].sum())!r}x9 {float(wild[half].sum())!r}x9"
        squares = f"{float((calm[half] ** 2).sum())!r}x9 {float((wild[half] ** 2).sum())!r}x9"
        series += [
            {"series": f'rankmon_ndcg_sum_of_query_means{{{labels},k="10",gain="linear"}}',
             "values": sums},
            {"series": f'rankmon_ndcg_sum_of_squared_query_means{{{labels},k="10",gain="linear"}}',
             "values": squares},
            {"series": f"rankmon_window_queries{{{labels}}}", "values": "20x19"},
            {"series": f'rankmon_evaluation_set_queries{{job="rankmon",instance="i{index}"}}',
             "values": "40x19"},
        ]  # fmt: skip
    firing = {
        "exp_labels": {
            "alertname": "ndcg10-uncertain",
            "severity": "warning",
            "measure": "ndcg@10:linear",
            "job": "rankmon",
            "k": "10",
            "gain": "linear",
            "window": "5m",
            "version": "v",
            "model": "v1",
        },
        "exp_annotations": {
            "summary": "standard error of ndcg@10:linear over 0.05: too uncertain to act on",
            "description": "the standard error of ndcg@10:linear is 0.0801; rendered from "
            "alerts.rules[0]",
            "runbook_url": "https://runbooks.example/rankmon",
        },
    }
    test = {
        "rule_files": [rules.name],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": "ndcg10-uncertain", "exp_alerts": []},
                    {"eval_time": "12m", "alertname": "ndcg10-uncertain", "exp_alerts": [firing]},
                ],
            }
        ],
    }
    (tmp_path / "stderr_rule_test.yml").write_text(yaml.safe_dump(test))
    result = promtool.test_rules(tmp_path / "stderr_rule_test.yml")
    assert result.ok, result.output


def test_every_series_the_rendered_rules_read_is_exported_or_recorded(tmp_path: Path) -> None:
    rules = yaml.safe_load(render(tmp_path, CONFIG, "--ungated-drop").read_text())
    every = [rule for group in rules["groups"] for rule in group["rules"]]
    recorded = {rule["record"] for rule in every if "record" in rule}
    named: set[str] = set()
    for rule in every:
        named |= series_names(rule["expr"])
    assert any(name.endswith("_sum_of_query_means") for name in named)
    # `up` is Prometheus's own, per scrape target (RankmonDown, RankmonAbsent read it)
    known = EXPORTED_SERIES | recorded | {"up"}
    assert named <= known, sorted(named - known)
