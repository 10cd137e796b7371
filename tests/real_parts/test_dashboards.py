"""The Grafana dashboards: checked-in files, Grafana's schemas, PromQL that parses and names
only series rankmon exports (or Prometheus's `ALERTS` for rankmon's rendered rules),
thresholds from the config's alert rules."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from prometheus_client import CollectorRegistry

from monitor.cli import main
from monitor.dashboards import EXPORTED_SERIES, PROMETHEUS_SERIES, build_dashboards, load_spec
from monitor.dashboards.queries import merged_mean
from monitor.dashboards.series import label_values_selector, series_names
from monitor.export.exporter import Exporter
from monitor.export.series import SAMPLED_ONLY
from monitor.replay.metrics import REPLAY_SERIES
from tests.support.realparts import Promtool

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "dashboards"
CHECKED_IN_CONFIG = CHECKED_IN / "rankmon.yaml"  # what the checked-in files are rendered from
DEPLOYED = ROOT / "deploy" / "grafana" / "dashboards"
GRAFANA_SCHEMAS = ROOT / "tests" / "data" / "grafana-schema"  # copied from the SDK, see SOURCE.md

CONFIG = """
kafka: {topic: ranking-events}
evaluation_set: {path: qrels.txt}
segments: {keys: [model, market]}
windows: {size: 5m}
metrics: {cutoffs: [5, 10, 20], gains: [linear, exp]}
alerts:
  rules:
    - {name: ndcg10-floor, measure: ndcg@10, segment: {model: v42}, severity: critical,
       below: 0.55}
    - {name: ndcg10-drop, measure: ndcg@10, gain: exp, severity: warning,
       drop: {relative: 0.05, baseline_windows: 12}}
    - {name: ndcg10-discovery, measure: ndcg@10, gain: exp,
       discovery: {relative: 0.05, baseline_windows: 12}}
    - {name: mrr-floor, measure: mrr, below: 0.3}
"""

# Concrete values for Grafana's variables, so that promtool sees plain PromQL.
VARIABLE_VALUES = {"__rate_interval": "1m", "window": "5m", "baseline": "1h", "k": "10"}


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "rankmon.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def render(out: Path, *options: str) -> dict[str, dict[str, Any]]:
    assert main(["dashboards", "render", "--out", str(out), *options]) == 0
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("*.json"))}


def loaded(directory: Path) -> dict[str, dict[str, Any]]:
    return {
        p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))
    }


# Every set of dashboards the checks below cover: rendered without and with a config, and the
# files as checked in (dashboards/) and as the compose stack's Grafana loads them (deploy/).
SOURCES = ("no-config", "config", "checked-in", "deployed")


def dashboards_of(source: str, out: Path, config_file: Path) -> dict[str, dict[str, Any]]:
    if source == "checked-in":
        return loaded(CHECKED_IN)
    if source == "deployed":
        return loaded(DEPLOYED)
    return render(out, *(("--config", str(config_file)) if source == "config" else ()))


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def expressions(dashboard: dict[str, Any]) -> Iterator[str]:
    """Every PromQL expression in the dashboard JSON: targets, annotations, variables."""
    for panel in panels(dashboard):
        for target in panel["targets"]:
            yield target["expr"]
    for annotation in dashboard["annotations"]["list"]:
        if "expr" in annotation:
            yield annotation["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            selector = label_values_selector(variable["query"])
            assert selector is not None, variable["query"]
            yield selector


def concrete(expr: str) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: VARIABLE_VALUES.get(m.group(1), "x"), expr)


def test_render_reproduces_the_checked_in_dashboards_byte_for_byte(tmp_path: Path) -> None:
    render(tmp_path, "--config", str(CHECKED_IN_CONFIG))
    rendered = sorted(p.name for p in tmp_path.glob("*.json"))
    assert rendered == sorted(p.name for p in CHECKED_IN.glob("*.json"))
    for name in rendered:
        assert (tmp_path / name).read_bytes() == (CHECKED_IN / name).read_bytes(), name


def test_dashboards_keep_their_uids_whatever_the_config(tmp_path: Path, config_file: Path) -> None:
    plain = render(tmp_path / "plain")
    configured = render(tmp_path / "configured", "--config", str(config_file))
    assert [d["uid"] for d in plain.values()] == ["rankmon-pipeline", "rankmon-quality"]
    assert [d["uid"] for d in configured.values()] == ["rankmon-pipeline", "rankmon-quality"]


# --- Grafana's JSON schemas -------------------------------------------------------------------


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (GRAFANA_SCHEMAS / f"{name}.jsonschema.json").read_text(encoding="utf-8")
    )
    return loaded


def definition(name: str, ref: str) -> jsonschema.Draft7Validator:
    whole = schema(name)
    return jsonschema.Draft7Validator({"$ref": f"#/definitions/{ref}", **whole})


def dashboard_validator() -> jsonschema.Draft7Validator:
    whole = schema("dashboard")
    # SOURCE.md: Grafana writes the base threshold step as null (-Infinity), the schema says number.
    whole["definitions"]["Threshold"]["properties"]["value"] = {"type": ["number", "null"]}
    # SOURCE.md: a field override's matcher options are a string for `byFrameRefID` (the
    # query's ref id), as Grafana writes it; the schema says object.
    matcher = whole["definitions"]["MatcherConfig"]["properties"]
    matcher["options"] = {"type": ["object", "string"]}
    return jsonschema.Draft7Validator(whole)


def assert_valid(validator: jsonschema.Draft7Validator, instance: Any, where: str) -> None:
    errors = [f"{where}: {'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator.iter_errors(instance)]  # fmt: skip
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("source", SOURCES)
def test_every_dashboard_panel_and_target_validates_against_grafana_schemas(
    tmp_path: Path, config_file: Path, source: str
) -> None:
    rendered = dashboards_of(source, tmp_path, config_file)
    assert rendered, source
    board = dashboard_validator()
    target = jsonschema.Draft7Validator(schema("prometheus"))
    kinds = {kind: (definition(kind, "Options"), kind) for kind in ("timeseries", "stat", "table")}
    for name, dashboard in rendered.items():
        assert_valid(board, dashboard, name)
        for panel in panels(dashboard):
            where = f"{name} {panel['title']}"
            options_schema, kind = kinds[panel["type"]]
            assert_valid(options_schema, panel["options"], where)
            custom = panel["fieldConfig"]["defaults"].get("custom", {})
            if kind == "stat":
                assert custom == {}, where  # the stat panel has no custom field config
            else:
                assert_valid(definition(kind, "FieldConfig"), custom, where)
            for query in panel["targets"]:
                assert_valid(target, query, where)


def test_schema_check_rejects_a_panel_option_grafana_does_not_know(tmp_path: Path) -> None:
    dashboard = render(tmp_path)["rankmon-quality.json"]
    panel = panels(dashboard)[0]
    panel["options"]["legend"]["placement"] = "top"  # Grafana allows bottom and right only
    assert list(definition("timeseries", "Options").iter_errors(panel["options"]))


# --- PromQL: parses, and names only exported series ------------------------------------------


@pytest.mark.prometheus
def test_every_promql_expression_parses_with_promtool(
    tmp_path: Path, config_file: Path, promtool: Promtool
) -> None:
    exprs = sorted(
        {
            concrete(e)
            for source in SOURCES
            for d in dashboards_of(source, tmp_path / source, config_file).values()
            for e in expressions(d)
        }
    )
    rules = [{"record": f"rankmon_dashboard:expr_{i}", "expr": e} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboard-expressions.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = promtool.check_rules(path)
    assert result.ok, result.output
    assert f"SUCCESS: {len(exprs)} rules found" in result.output


@pytest.mark.prometheus
def test_promtool_catches_a_broken_expression(tmp_path: Path, promtool: Promtool) -> None:
    path = tmp_path / "broken.rules.yml"
    rule = {"record": "rankmon_dashboard:broken", "expr": "sum by (k (rankmon_ndcg)"}
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": [rule]}]}))
    assert not promtool.check_rules(path).ok


@pytest.mark.parametrize("source", SOURCES)
def test_every_expression_names_only_series_rankmon_exports_or_alerts_of_its_rules(
    tmp_path: Path, config_file: Path, source: str
) -> None:
    named: set[str] = set()
    for dashboard in dashboards_of(source, tmp_path, config_file).values():
        for expr in expressions(dashboard):
            named |= series_names(expr)
    assert named, "the scan found no series at all"
    # Deliberately one series beyond rankmon's own: Prometheus's ALERTS, for the alerts of
    # `rankmon rules render` (the next test holds every use of it to rankmon's rules).
    assert {"ALERTS"} == PROMETHEUS_SERIES
    # And the replayer's own series (`rankmon replay`'s /metrics, replay.metrics_port).
    assert named <= EXPORTED_SERIES | PROMETHEUS_SERIES | REPLAY_SERIES, sorted(
        named - EXPORTED_SERIES
    )


@pytest.mark.parametrize("source", SOURCES)
def test_every_alerts_query_selects_only_firing_alerts_of_rankmons_job(
    tmp_path: Path, config_file: Path, source: str
) -> None:
    uses = [
        expr
        for dashboard in dashboards_of(source, tmp_path, config_file).values()
        for expr in expressions(dashboard)
        if "ALERTS" in series_names(expr)
    ]
    assert uses, "no panel shows the alerts Prometheus evaluates"
    wanted = '{alertstate="firing",job="rankmon"}'
    for expr in uses:
        assert re.findall(r"ALERTS(\{[^}]*\})?", expr) == [wanted], expr


def test_the_alerts_panels_follow_the_configured_prometheus_job(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "kafka: {topic: events}\nevaluation_set: {path: qrels.txt}\n"
        "alerts: {prometheus: {job: ranking-monitor}}\n"
    )
    quality = render(tmp_path / "out", "--config", str(path))["rankmon-quality.json"]
    exprs = [e for e in expressions(quality) if "ALERTS" in series_names(e)]
    assert exprs and all('job="ranking-monitor"' in e for e in exprs), exprs


def test_series_scan_finds_metric_names_and_skips_functions_labels_and_keywords() -> None:
    expr = (
        'sum by (k) (rate(foo_total{a="b",c=~"$d"}[$__rate_interval])) '
        "/ ignoring (k) group_left bar:recorded offset 5m or vector(0) > bool 1e3"
    )
    assert series_names(expr) == {"foo_total", "bar:recorded"}


def test_exported_series_list_is_what_the_exporter_registers() -> None:
    registry = CollectorRegistry()
    Exporter(registry, segment_keys=("model",), process_metrics=False)
    suffix = {"counter": "_total", "info": "_info", "gauge": ""}
    registered = {family.name + suffix[family.type] for family in registry.collect()}
    # trec_eval's families' series come once they have a sample (test_provided_measures_served)
    assert registered == EXPORTED_SERIES - SAMPLED_ONLY


def test_exported_series_list_covers_the_architecture_doc() -> None:
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = doc.split("## Exported series", 1)[1].split("\n## ", 1)[0]
    # The doc names one companion it avoids (`..._sum_total`-style) and writes the others as
    # `rankmon_<measure>_sum_of_query_means`, which the regex cuts at `<`.
    listed = set(re.findall(r"`(rankmon_[a-z_]*[a-z])", section)) - {
        "rankmon_ndcg_query_mean_sum_total"
    }
    assert listed <= EXPORTED_SERIES, sorted(listed - EXPORTED_SERIES)


@pytest.mark.prometheus
def test_merged_mean_equals_the_mean_over_all_queries_of_two_instances(
    tmp_path: Path, promtool: Promtool
) -> None:
    # Instance a saw 2 queries with nDCG means 0.5 and 0.7 (sum 1.2), instance b saw 3 queries
    # with 0.2, 0.4, 0.9 (sum 1.5): the mean over the 5 queries is 2.7 / 5 = 0.54. The per-
    # instance gauges (0.6 and 0.5) average to 0.55, which is not the mean over queries.
    common = ['window="5m"', 'model=~".*"']
    rules = tmp_path / "merged.rules.yml"
    expr = merged_mean("ndcg", common, ['k="10"', 'gain="linear"'])
    rule = {"record": "rankmon:ndcg_merged", "expr": expr}
    rules.write_text(yaml.safe_dump({"groups": [{"name": "m", "rules": [rule]}]}))
    series = [
        ('rankmon_ndcg_sum_of_query_means{instance="a",window="5m",model="v1",k="10",gain="linear"}',
         "1.2"),
        ('rankmon_ndcg_sum_of_query_means{instance="b",window="5m",model="v1",k="10",gain="linear"}',
         "1.5"),
        ('rankmon_window_queries{instance="a",window="5m",model="v1"}', "2"),
        ('rankmon_window_queries{instance="b",window="5m",model="v1"}', "3"),
    ]  # fmt: skip
    expected = {"labels": 'rankmon:ndcg_merged{window="5m",model="v1",k="10",gain="linear"}',
                "value": 0.54}  # fmt: skip
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": f"{v}x5"} for s, v in series],
                "promql_expr_test": [
                    {"expr": "rankmon:ndcg_merged", "eval_time": "2m", "exp_samples": [expected]}
                ],
            }
        ],
    }
    path = tmp_path / "merged.test.yml"
    path.write_text(yaml.safe_dump(tests))
    result = promtool.test_rules(path)
    assert result.ok, result.output


@pytest.mark.prometheus
def test_active_alerts_panels_show_prometheus_alerts_of_rankmons_rendered_rules_only(
    tmp_path: Path, config_file: Path, promtool: Promtool
) -> None:
    quality = render(tmp_path / "out", "--config", str(config_file))["rankmon-quality.json"]
    by_title = {p["title"]: p for p in panels(quality)}
    table = by_title["Active alerts (Prometheus rules)"]["targets"][0]["expr"]
    [count] = [t["expr"] for t in by_title["Alerts firing"]["targets"] if "ALERTS" in t["expr"]]
    rendered = tmp_path / "rankmon.rules.yml"
    assert main(["rules", "render", "--config", str(config_file), "--output", str(rendered)]) == 0
    other = tmp_path / "other.rules.yml"  # another team's rule in the same Prometheus
    other_rule = {"alert": "OtherDown", "expr": 'up{job="other"} == 0'}
    other.write_text(yaml.safe_dump({"groups": [{"name": "other", "rules": [other_rule]}]}))
    segment = 'job="rankmon",instance="a",window="5m",model="v1",market="de"'
    series = [
        ('up{job="rankmon",instance="a"}', "0x10"),  # RankmonDown after its 5m
        ('up{job="other",instance="b"}', "0x10"),  # OtherDown at once
        (f"rankmon_mrr_sum_of_query_means{{{segment}}}", "0.4x10"),  # 2 queries: MRR 0.2
        (f"rankmon_window_queries{{{segment}}}", "2x10"),  # mrr-floor: under 0.3
        ('rankmon_evaluation_set_queries{job="rankmon",instance="a"}', "2x10"),  # all seen
    ]
    names = [{"labels": f'{{alertname="{n}"}}', "value": 1} for n in ("RankmonDown", "mrr-floor")]
    checks = [  # at 6m: RankmonDown fired after its 5m, the two others at once
        (f"count by (alertname) ({table})", names),
        (count, [{"labels": "{}", "value": 2}]),
        ('count(ALERTS{alertname="OtherDown"})', [{"labels": "{}", "value": 1}]),
    ]
    tests = {
        "rule_files": [str(rendered), str(other)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series],
                "promql_expr_test": [
                    {"expr": e, "eval_time": "6m", "exp_samples": x} for e, x in checks
                ],
            }
        ],
    }
    path = tmp_path / "alerts.test.yml"
    path.write_text(yaml.safe_dump(tests))
    result = promtool.test_rules(path)
    assert result.ok, result.output


# --- thresholds from the config's alert rules -------------------------------------------------


def rule_panels(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["title"].split(":")[0]: p for p in panels(dashboard) if ":" in p["title"]}


def steps(panel: dict[str, Any]) -> list[tuple[float | None, str]]:
    found = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    return [(s["value"], s["color"]) for s in found]


def test_below_rule_draws_its_floor_on_the_series_it_watches(
    tmp_path: Path, config_file: Path
) -> None:
    quality = render(tmp_path, "--config", str(config_file))["rankmon-quality.json"]
    panel = rule_panels(quality)["ndcg10-floor"]
    assert steps(panel) == [(None, "red"), (0.55, "green")]
    assert panel["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] != "off"
    expr = panel["targets"][0]["expr"]
    for matcher in ('k="10"', 'gain="linear"', 'model="v42"', 'market=~"$market"'):
        assert matcher in expr


def test_drop_rule_draws_the_allowed_drop_against_its_baseline(
    tmp_path: Path, config_file: Path
) -> None:
    quality = render(tmp_path, "--config", str(config_file))["rankmon-quality.json"]
    panel = rule_panels(quality)["ndcg10-drop"]
    assert steps(panel) == [(None, "red"), (-0.05, "green")]
    expr = panel["targets"][0]["expr"]
    assert 'gain="exp"' in expr
    assert "[1h:5m] offset 5m" in expr  # 12 windows of 5m, the current one left out


def test_a_discovery_rule_draws_no_floor_of_its_own_beside_its_drop_rule(
    tmp_path: Path, config_file: Path
) -> None:
    quality = render(tmp_path, "--config", str(config_file))["rankmon-quality.json"]
    assert sorted(rule_panels(quality)) == ["mrr-floor", "ndcg10-drop", "ndcg10-floor"]


@pytest.mark.parametrize(
    ("directory", "config"),
    [(CHECKED_IN, CHECKED_IN_CONFIG), (DEPLOYED, ROOT / "deploy" / "rankmon" / "config.yaml")],
    ids=["checked-in", "deployed"],
)
def test_shipped_quality_dashboards_draw_every_floor_and_drop_of_their_config(
    directory: Path, config: Path
) -> None:
    spec = load_spec(config)
    assert spec.floors and spec.drops, "the config must show both kinds of threshold"
    quality = loaded(directory)["rankmon-quality.json"]
    drawn = rule_panels(quality)
    expected = {rule.name: [(None, "red"), (rule.floor, "green")] for rule in spec.floors}
    expected |= {rule.name: [(None, "red"), (-rule.amount, "green")] for rule in spec.drops}
    assert {name: steps(panel) for name, panel in drawn.items()} == expected
    for panel in drawn.values():
        assert panel["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] != "off"


def test_without_config_no_panel_draws_thresholds(tmp_path: Path) -> None:
    quality = render(tmp_path)["rankmon-quality.json"]
    drawn = [
        p["title"]
        for p in panels(quality)
        if p["type"] == "timeseries"
        and p["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] != "off"
    ]
    assert drawn == []
    assert rule_panels(quality) == {}


def test_segment_keys_of_the_config_become_dashboard_variables(
    tmp_path: Path, config_file: Path
) -> None:
    quality = render(tmp_path, "--config", str(config_file))["rankmon-quality.json"]
    names = [v["name"] for v in quality["templating"]["list"]]
    assert names == ["datasource", "window", "market", "model", "k", "gain", "baseline"]


def test_a_bad_rule_in_the_config_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    bad = CONFIG.replace("measure: mrr,", "measure: ndcg10,")
    assert bad != CONFIG
    path.write_text(bad)
    assert main(["dashboards", "render", "--out", str(tmp_path), "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "alerts.rules[3].measure" in err


def test_load_spec_reads_the_window_and_baseline_of_a_drop_rule(config_file: Path) -> None:
    spec = load_spec(config_file)
    assert spec.window == "5m"
    assert [(d.name, d.amount, d.relative, d.baseline_windows) for d in spec.drops] == [
        ("ndcg10-drop", 0.05, True, 12)
    ]
    assert [d.uid for d in build_dashboards(spec)] == ["rankmon-quality", "rankmon-pipeline"]


def test_a_config_without_segment_keys_gets_no_segment_variables(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text("kafka: {topic: events}\nevaluation_set: {path: qrels.txt}\n")
    spec = load_spec(path)
    assert spec.segment_keys == ()
    assert (spec.floors, spec.drops) == ((), ())
    quality = render(tmp_path / "out", "--config", str(path))["rankmon-quality.json"]
    names = [v["name"] for v in quality["templating"]["list"]]
    assert names == ["datasource", "window", "k", "gain", "baseline"]


def test_quality_panels_link_each_point_to_rankmons_explanation_when_the_url_is_known(
    tmp_path: Path, config_file: Path
) -> None:
    config_file.write_text(CONFIG + 'export: {external_url: "https://rankmon.example.com"}\n')
    rendered = render(tmp_path / "linked", "--config", str(config_file))
    panels = {p["title"]: p for p in rendered["rankmon-quality.json"]["panels"]}
    (link,) = panels["nDCG@$k"]["fieldConfig"]["defaults"]["links"]
    assert link["url"].startswith("https://rankmon.example.com/explain?segment=")
    assert "${__field.labels.model}" in link["url"] and "at=${__value.time}" in link["url"]
    plain = render(tmp_path / "plain")
    panels = {p["title"]: p for p in plain["rankmon-quality.json"]["panels"]}
    assert "links" not in panels["nDCG@$k"]["fieldConfig"]["defaults"]


def test_the_bounds_panel_draws_the_corrected_headline_only_when_the_judging_loop_runs(
    tmp_path: Path,
) -> None:
    def bounds_exprs(config: str) -> list[str]:
        (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
        (tmp_path / "c.yaml").write_text(
            f"kafka: {{topic: events}}\nevaluation_set: {{path: qrels.txt}}\n{config}"
        )
        out = tmp_path / config.replace(" ", "").replace(":", "").replace("{", "").strip("}")
        quality = render(out, "--config", str(tmp_path / "c.yaml"))["rankmon-quality.json"]
        (panel,) = [
            p for p in panels(quality) if p["title"].endswith("its bounds for unjudged documents")
        ]
        return [target["expr"] for target in panel["targets"]]

    assert not any("rankmon_ndcg_corrected" in e for e in bounds_exprs(""))
    judged = bounds_exprs("judging: {enabled: true}\n")
    assert sum("rankmon_ndcg_corrected" in e for e in judged) == 1
    assert any(e.startswith("avg without (instance, pod) (rankmon_ndcg_corrected{") for e in judged)
