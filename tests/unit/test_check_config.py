"""`rankmon check-config FILE`: the effective config on stdout, or one line naming the bad key."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import main
from monitor.config.loader import load_config

MINIMAL: dict[str, Any] = {"kafka": {"topic": "events"}, "evaluation_set": {"path": "q.txt"}}


def section(name: str, **keys: Any) -> dict[str, Any]:
    base = dict(MINIMAL.get(name, {}))
    base.update(keys)
    return {**MINIMAL, name: base}


def with_alert_rule(**rule: Any) -> dict[str, Any]:
    """The minimal config with a good rule and `rule` (named `bad-rule`) after it."""
    good = {"name": "ndcg10-floor", "measure": "ndcg@10", "below": 0.5}
    return {**MINIMAL, "alerts": {"rules": [good, {"name": "bad-rule", **rule}]}}


CheckConfig = Callable[..., tuple[int, str, str]]


@pytest.fixture
def check_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> CheckConfig:
    """Run `rankmon check-config` on a config text with extra environment variables."""

    def run(text: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        (tmp_path / "q.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
        path = tmp_path / "rankmon.yaml"
        path.write_text(text, encoding="utf-8")
        code = main(["check-config", str(path)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


BAD_KEYS = [
    pytest.param(section("export", port=-1), {}, "export.port", id="negative-port"),
    pytest.param(section("export", port="http"), {}, "export.port", id="port-not-a-number"),
    pytest.param(section("export", port=70000), {}, "export.port", id="port-too-high"),
    pytest.param(section("windows", size="5 minutes"), {}, "windows.size", id="bad-duration"),
    pytest.param(section("windows", size=300), {}, "windows.size", id="duration-without-unit"),
    pytest.param(section("windows", size="0s"), {}, "windows.size", id="zero-window"),
    pytest.param(section("windows", size="5m", hop="10m"), {}, "windows.hop", id="hop-over-size"),
    pytest.param(section("metrics", gains=["linear", "cubic"]), {}, "metrics.gains", id="gain"),
    pytest.param(section("metrics", gains=[{1: -1}]), {}, "metrics.gains", id="negative-gain"),
    pytest.param(section("metrics", gains=["exp", "exp"]), {}, "metrics.gains", id="dup-gain"),
    pytest.param(section("metrics", cutoffs=[5, 10, 5]), {}, "metrics.cutoffs", id="dup-cutoff"),
    pytest.param(section("metrics", cutoffs=[0, 10]), {}, "metrics.cutoffs", id="zero-cutoff"),
    pytest.param(section("metrics", cutoffs=[]), {}, "metrics.cutoffs", id="no-cutoffs"),
    pytest.param(
        section("metrics", relevance_level=True), {}, "metrics.relevance_level", id="bool"
    ),
    pytest.param(section("metrics", idcg_zero="one"), {}, "metrics.idcg_zero", id="idcg-zero"),
    pytest.param(section("events", max_depth=0), {}, "events.max_depth", id="max-depth"),
    pytest.param(section("metrics", max_depth=0), {}, "metrics.max_depth", id="moved-max-depth"),
    pytest.param(section("events", time_source="log"), {}, "events.time_source", id="time-src"),
    pytest.param(
        section("events", max_future="soon"), {}, "events.max_future", id="max-future-text"
    ),
    pytest.param(section("metrics", cutoffs=[10**9]), {}, "metrics.cutoffs", id="huge-cutoff"),
    pytest.param(
        section("kafka", max_record_bytes=2**40),
        {},
        "kafka.max_record_bytes",
        id="record-bytes-past-int32",
    ),
    pytest.param({"evaluation_set": {"path": "q"}}, {}, "kafka.topic", id="missing-topic"),
    pytest.param({"kafka": {"topic": "t"}}, {}, "evaluation_set.path", id="missing-evalset"),
    pytest.param({**MINIMAL, "exporter": {}}, {}, "exporter", id="unknown-section"),
    pytest.param(section("kafka", grup_id="g"), {}, "kafka.grup_id", id="unknown-key"),
    pytest.param(
        section("kafka", bootstrap_servers=["nohost"]),
        {},
        "kafka.bootstrap_servers",
        id="server-without-port",
    ),
    pytest.param(
        section("kafka", dead_letter_topic="events"),
        {},
        "kafka.dead_letter_topic",
        id="dlq-is-the-topic",
    ),
    pytest.param(section("kafka", topic="ranking events"), {}, "kafka.topic", id="topic-name"),
    pytest.param(section("kafka", windows_topic="w/1"), {}, "kafka.windows_topic", id="topic-2"),
    pytest.param(MINIMAL, {"RANKMON_EXPORT__PORT": "abc"}, "export.port", id="bad-env-override"),
    pytest.param(MINIMAL, {"RANKMON_EXPORT__PORT__X": "1"}, "export.port", id="env-into-scalar"),
    pytest.param(MINIMAL, {"RANKMON_KAFKA__TOPIK": "t"}, "kafka.topik", id="unknown-env-key"),
    pytest.param(MINIMAL, {"RANKMON_WINDOWS__SIZE": "[5m"}, "windows.size", id="env-not-yaml"),
    pytest.param(
        section("kafka", security={"protocol": "SASL_SSL"}),
        {},
        "kafka.security.sasl",
        id="sasl-protocol-without-sasl",
    ),
    pytest.param(
        section("kafka", security={"protocol": "TLS"}),
        {},
        "kafka.security.protocol",
        id="unknown-protocol",
    ),
    pytest.param(
        section(
            "kafka",
            security={
                "protocol": "SASL_SSL",
                "sasl": {"mechanism": "GSSAPI", "username": "u", "password_env": "P"},
            },
        ),
        {"P": "x"},
        "kafka.security.sasl.mechanism",
        id="unsupported-mechanism",
    ),
    pytest.param(
        section(
            "kafka",
            security={
                "protocol": "SASL_SSL",
                "sasl": {"mechanism": "PLAIN", "username": "u", "password_env": "UNSET_PW"},
            },
        ),
        {},
        "kafka.security.sasl.password_env",
        id="password-variable-unset",
    ),
    pytest.param(
        section("kafka", security={"protocol": "SSL", "ssl": {"cafile": "nope.pem"}}),
        {},
        "kafka.security.ssl.cafile",
        id="missing-cafile",
    ),
    pytest.param(
        section("evaluation_set", path="~no-such-user-x/q"),
        {},
        "evaluation_set.path",
        id="unknown-home",
    ),
    pytest.param(
        section("export", tls={"certfile": "a\0b", "keyfile": "k"}),
        {},
        "export.tls.certfile",
        id="nul-in-path",
    ),
    pytest.param(section("segments", keys=["model", "k"]), {}, "segments.keys", id="label-k"),
    pytest.param(section("segments", max_values=0), {}, "segments.max_values", id="max-values"),
    pytest.param(section("judgments", inline="merge"), {}, "judgments.inline", id="inline"),
    pytest.param(section("logging", format="xml"), {}, "logging.format", id="log-format"),
    pytest.param(section("schedule", interval="-1s"), {}, "schedule.interval", id="interval"),
    pytest.param({**MINIMAL, "alerts": ["a"]}, {}, "alerts", id="alerts-not-a-mapping"),
    pytest.param(
        with_alert_rule(measure="ndcg_cut_10", below=0.5),
        {},
        "alerts.rules[1].measure",
        id="alert-unknown-measure",
    ),
    pytest.param(
        with_alert_rule(measure="ndcg@15", below=0.5),
        {},
        "alerts.rules[1].measure",
        id="alert-cutoff-not-computed",
    ),
    pytest.param(
        with_alert_rule(measure="ndcg@10", below=-0.1),
        {},
        "alerts.rules[1].below",
        id="alert-negative-threshold",
    ),
    pytest.param(
        with_alert_rule(measure="ndcg@10", drop={"relative": 0.05, "significance": 1.5}),
        {},
        "alerts.rules[1].drop.significance",
        id="alert-significance-outside-0-1",
    ),
    pytest.param(
        with_alert_rule(measure="ndcg@10", below=0.5),
        {"RANKMON_METRICS__CUTOFFS": "[5, 20]"},
        "alerts.rules[0].measure",
        id="alert-cutoff-removed-by-env",
    ),
]


@pytest.mark.parametrize(("tree", "env", "key"), BAD_KEYS)
def test_bad_key_gives_a_line_naming_it_and_exit_2(
    check_config: CheckConfig, tree: dict[str, Any], env: dict[str, str], key: str
) -> None:
    code, out, err = check_config(yaml.safe_dump(tree), env)
    assert code == 2
    assert out == ""
    assert err.startswith(f"rankmon check-config: config key '{key}': ")
    # a line per bad key (nul-in-path's keyfile does not exist either), nothing else
    assert all(line.startswith("rankmon check-config: config key '") for line in err.splitlines())


def test_a_key_that_moved_to_events_is_still_read_from_its_old_place_with_a_notice(
    check_config: CheckConfig,
) -> None:
    tree = {
        **section("metrics", max_depth=50),
        "windows": {"max_future": "1m", "time_source": "record"},
    }
    code, out, err = check_config(yaml.safe_dump(tree), {"RANKMON_KAFKA__MAX_ID_BYTES": "64"})
    assert code == 0
    effective = yaml.safe_load(out)
    assert effective["events"] == {
        "max_depth": 50,
        "max_id_bytes": 64,
        "max_document_bytes": 2048,
        "max_future": "1m",
        "time_source": "record",
    }
    assert "max_depth" not in effective["metrics"] and "max_id_bytes" not in effective["kafka"]
    moved = sorted(line.split("'")[1] for line in err.splitlines())
    assert moved == [
        "kafka.max_id_bytes",
        "metrics.max_depth",
        "windows.max_future",
        "windows.time_source",
    ]
    assert all("refused from 0.3.0" in line for line in err.splitlines())


def test_a_key_written_in_its_old_and_its_new_place_is_refused_naming_both(
    check_config: CheckConfig,
) -> None:
    tree = {**section("metrics", max_depth=50), "events": {"max_depth": 60}}
    code, out, err = check_config(yaml.safe_dump(tree))
    assert (code, out) == (2, "")
    assert err == (
        "rankmon check-config: config key 'metrics.max_depth': moved to events.max_depth, "
        "which is written too: keep events.max_depth only\n"
    )


def test_a_bad_alert_rule_is_named_with_its_key_as_rankmon_run_would_refuse_it(
    check_config: CheckConfig,
) -> None:
    tree = with_alert_rule(measure="ndcg@10", drop={"relative": 0.05, "significance": 1.5})
    code, out, err = check_config(yaml.safe_dump(tree))
    assert (code, out) == (2, "")
    assert err == (
        "rankmon check-config: config key 'alerts.rules[1].drop.significance': "
        "rule 'bad-rule': must be in (0, 1), got 1.5\n"
    )


def test_valid_alert_rules_pass_and_are_printed_with_every_default(
    check_config: CheckConfig,
) -> None:
    tree = with_alert_rule(measure="ndcg@10", drop={"relative": 0.05, "significance": 0.01})
    code, out, err = check_config(yaml.safe_dump(tree))
    assert (code, err) == (0, "")
    alerts = yaml.safe_load(out)["alerts"]
    floor, drop = alerts["rules"]
    assert floor == {
        "name": "ndcg10-floor",
        "measure": "ndcg@10",
        "gain": "linear",
        "severity": "warning",
        "below": 0.5,
        "for": 1,
        "keep_firing_for": 0,
        "runbook_url": None,
    }
    assert drop["drop"] == {
        "relative": 0.05,
        "baseline_windows": 12,
        "significance": 0.01,
        "min_queries": 30,
        "pinned": None,
        "unjudged": "page",
        "max_hold": 12,
    }
    assert alerts["log"] is True and alerts["delivery"]["resend_interval"] == "1m"
    assert alerts["alertmanager"]["min_firing"] == "1m"


def test_valid_config_prints_the_effective_config_and_exits_0(check_config: CheckConfig) -> None:
    code, out, err = check_config(yaml.safe_dump(MINIMAL), {"RANKMON_EXPORT__PORT": "9500"})
    assert (code, err) == (0, "")
    effective = yaml.safe_load(out)
    assert effective["export"]["port"] == 9500
    assert effective["kafka"]["dead_letter_topic"] == "events.dlq"
    assert effective["metrics"]["cutoffs"] == [5, 10, 20]


def test_output_never_shows_a_secret_and_loads_back(
    tmp_path: Path, check_config: CheckConfig
) -> None:
    env = {"KAFKA_PASSWORD": "correct-horse-battery", "KEY_PASSWORD": "staple-key-phrase"}
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("-----BEGIN-----\n", encoding="utf-8")
    security = {
        "protocol": "SASL_SSL",
        "sasl": {"mechanism": "SCRAM-SHA-256", "username": "u", "password_env": "KAFKA_PASSWORD"},
        "ssl": {
            "cafile": "ca.pem",
            "certfile": "client.pem",
            "keyfile": "client.key",
            "key_password_env": "KEY_PASSWORD",
        },
    }
    code, out, _ = check_config(yaml.safe_dump(section("kafka", security=security)), env)
    assert code == 0
    assert "correct-horse-battery" not in out
    assert "staple-key-phrase" not in out
    printed = tmp_path / "printed.yaml"
    printed.write_text(out, encoding="utf-8")
    assert load_config(printed) == load_config(tmp_path / "rankmon.yaml")


def test_unreadable_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check-config", str(tmp_path / "missing.yaml")])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1
    assert "missing.yaml" in err


def refusals_of_both_commands(path: Path, env: dict[str, str] | None = None) -> list[str]:
    """What `check-config` and `run` each say refusing the config at `path` (one line each,
    exit 2, nothing on stdout), after their "rankmon <command>: "."""
    outputs = []
    for command in (["check-config", str(path)], ["run", "--config", str(path)]):
        done = subprocess.run(
            [sys.executable, "-m", "monitor.cli", *command],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, **(env or {})},
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        (line,) = done.stderr.splitlines()
        outputs.append(line.split(": ", 1)[1])
    return outputs


@pytest.mark.parametrize("key", ["partition", "severity", "alertname", "alert", "measure", "k"])
def test_check_config_and_run_refuse_a_reserved_segment_key_the_same_way(
    tmp_path: Path, key: str
) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    path = tmp_path / "rankmon.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL, "segments": {"keys": ["model", key]}}))
    outputs = refusals_of_both_commands(path)
    assert outputs[0] == outputs[1]
    assert "segments.keys" in outputs[0] and f"'{key}'" in outputs[0]


def test_every_bad_key_is_named_at_once_in_the_files_order(check_config: CheckConfig) -> None:
    text = (
        "kafka: {topic: events, bootstrap_servers: localhost:9092, grup_id: g}\n"
        "evaluation_set: {path: q.txt}\n"
        "windows: {size: 5 minutes}\n"
        "alerts:\n"
        "  rules:\n"
        "    - {name: a, measure: ndcg@10, below: -1}\n"
        "    - {name: b, measure: ndcg@10, below: 0.5}\n"
        "    - {name: c, measure: ndcg@10, drop: {relative: 0.1, significance: 2}}\n"
        "metrics: {cutoffs: '10'}\n"
    )
    code, out, err = check_config(text)
    assert (code, out) == (2, "")
    keys = [line.split("'")[1] for line in err.splitlines()]
    assert keys == [
        "kafka.bootstrap_servers",
        "kafka.grup_id",
        "windows.size",
        "alerts.rules[0].below",
        "alerts.rules[2].drop.significance",
        "metrics.cutoffs",
    ]
    assert all(line.startswith("rankmon check-config: config key '") for line in err.splitlines())


def test_every_bad_key_inside_one_rule_or_comparison_is_named_and_their_echoes_are_not(
    check_config: CheckConfig,
) -> None:
    text = (
        "kafka: {topic: events}\n"
        "evaluation_set: {path: q.txt}\n"
        "segments: {keys: [model]}\n"
        "comparisons:\n"
        "  - name: v2-vs-v1\n"
        "    baseline: {model: v1}\n"
        "    candidate: {model: v2}\n"
        "    confidnce: 0.9\n"
        "    since: '2026-12-01'\n"
        "alerts:\n"
        "  rules:\n"
        "    - {name: a, measure: ndcg@10, below: -1, for: 0}\n"
        "    - {name: b, measure: ndcg@99, below: 0.5, severity: loud}\n"
        "    - {name: c, measure: ndcg@10, drop: {relative: 0.1, significance: 2}, fr: 2}\n"
    )
    code, out, err = check_config(text)
    assert (code, out) == (2, "")
    keys = [line.split("'")[1] for line in err.splitlines()]
    # Rule a without its bad `below` has no condition and rule b without its measure has
    # none: those echoes are not reported, the rule is set aside and reading goes on.
    assert keys == [
        "comparisons[0].confidnce",
        "comparisons[0].since",
        "alerts.rules[0].below",
        "alerts.rules[1].severity",
        "alerts.rules[1].measure",
        "alerts.rules[2].drop.significance",
        "alerts.rules[2].fr",
    ]


def test_a_list_in_the_file_is_a_yaml_list_and_only_a_variable_is_split_on_commas(
    check_config: CheckConfig,
) -> None:
    code, _, err = check_config(yaml.safe_dump(section("metrics", cutoffs="10")))
    assert code == 2
    assert "metrics.cutoffs': expected a list, got '10' (str): write [10]" in err
    env = {"RANKMON_METRICS__CUTOFFS": "5,10", "RANKMON_KAFKA__BOOTSTRAP_SERVERS": "a:1,b:2"}
    code, out, err = check_config(yaml.safe_dump(MINIMAL), env)
    assert (code, err) == (0, "")
    effective = yaml.safe_load(out)
    assert effective["metrics"]["cutoffs"] == [5, 10]
    assert effective["kafka"]["bootstrap_servers"] == ["a:1", "b:2"]


@pytest.mark.parametrize(
    ("qrels", "env", "problem"),
    [
        pytest.param("missing.txt", {}, "missing.txt: cannot read the judgments", id="no-file"),
        pytest.param("q.txt", {"RANKMON_SPEEDUPS": "maybe"}, "RANKMON_SPEEDUPS", id="speedups"),
        pytest.param("bad.txt", {}, "bad.txt:1: ", id="bad-line"),
    ],
)
def test_check_config_refuses_what_run_refuses_before_it_connects(
    tmp_path: Path, qrels: str, env: dict[str, str], problem: str
) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "bad.txt").write_text("q1 0 d1\n")
    path = tmp_path / "rankmon.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL, "evaluation_set": {"path": qrels}}))
    outputs = refusals_of_both_commands(path, env)
    assert outputs[0] == outputs[1]
    assert problem in outputs[0]


def test_a_good_config_is_headed_by_what_its_evaluation_set_holds(
    check_config: CheckConfig,
) -> None:
    code, out, _ = check_config(yaml.safe_dump(MINIMAL))
    assert code == 0
    assert out.splitlines()[0].startswith("# evaluation set ")
    assert ": 1 query, 1 judgment, version " in out.splitlines()[0]


def test_string_overrides_from_the_environment_print_as_plain_values(
    check_config: CheckConfig,
) -> None:
    env = {
        "RANKMON_WINDOWS__SIZE": "10m",
        "RANKMON_KAFKA__CLIENT_ID": "from-env",
        "RANKMON_LOGGING__LEVEL": "debug",
        "RANKMON_SEGMENTS__KEYS": "model",  # one value, for a list-valued key
        "RANKMON_KAFKA__BOOTSTRAP_SERVERS": "b1:9092",
    }
    code, out, err = check_config(yaml.safe_dump(MINIMAL), env)
    assert (code, err) == (0, "")
    effective = yaml.safe_load(out)
    assert effective["windows"]["size"] == "10m"
    assert effective["kafka"]["client_id"] == "from-env"
    assert effective["logging"]["level"] == "DEBUG"
    assert effective["segments"]["keys"] == ["model"]
    assert effective["kafka"]["bootstrap_servers"] == ["b1:9092"]
