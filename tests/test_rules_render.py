"""`rankmon rules render`: rules that pass promtool's checks and its rule unit tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from monitor.cli import main
from tests.realparts import Promtool

pytestmark = pytest.mark.prometheus

DATA = Path(__file__).parent / "data"
CONFIG = DATA / "alert_rules_config.yaml"


def render(tmp_path: Path, config: Path = CONFIG) -> Path:
    output = tmp_path / "rendered_rules.yml"
    assert main(["rules", "render", "--config", str(config), "--output", str(output)]) == 0
    return output


def test_rendered_rules_pass_promtool_check(tmp_path: Path, promtool: Promtool) -> None:
    result = promtool.check_rules(render(tmp_path))
    assert result.ok, result.output
    assert "SUCCESS: 13 rules found" in result.output


def test_rendered_rules_fire_and_resolve_in_promtool_unit_tests(
    tmp_path: Path, promtool: Promtool
) -> None:
    render(tmp_path)
    shutil.copy(DATA / "alert_rules_test.yml", tmp_path)
    result = promtool.test_rules(tmp_path / "alert_rules_test.yml")
    assert result.ok, result.output


def test_the_unit_tests_notice_a_wrong_threshold(tmp_path: Path, promtool: Promtool) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["alerts"]["rules"][0]["below"] = 0.40
    changed = tmp_path / "config.yaml"
    changed.write_text(yaml.safe_dump(config))
    render(tmp_path, changed)
    shutil.copy(DATA / "alert_rules_test.yml", tmp_path)
    assert not promtool.test_rules(tmp_path / "alert_rules_test.yml").ok


def test_trend_rules_are_left_to_the_engine(tmp_path: Path) -> None:
    rules = yaml.safe_load(render(tmp_path).read_text())
    names = [rule["alert"] for rule in rules["groups"][1]["rules"]]
    assert names == [
        "ndcg10-floor",
        "ndcg10-drop",
        "pipeline-stale",
        "RankmonDown",
        "RankmonAbsent",
    ]


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
