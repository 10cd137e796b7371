"""The config: defaults, environment overrides, durations, secrets and the example file."""

from __future__ import annotations

import copy
import dataclasses
import logging
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.alerting.settings import AlertingConfig
from monitor.clock import ScheduleConfig
from monitor.comparisons.settings import ComparisonConfig
from monitor.config.loader import (
    Config,
    Duration,
    Secret,
    config_from_tree,
    load_config,
    parse_duration,
)
from monitor.config.render import render_config
from monitor.declare import declared_keys
from monitor.errors import ConfigError, InputError
from monitor.explain.settings import ExplainConfig
from monitor.export.settings import ExportConfig
from monitor.ingest.settings import JudgmentsConfig, SegmentsConfig
from monitor.judge.settings import JudgeConfig
from monitor.judging.settings import JudgingConfig
from monitor.kafka.settings import KafkaConfig
from monitor.logs import JsonLinesFormatter, LoggingConfig, TextFormatter, fields
from monitor.replay.settings import ReplayConfig
from monitor.scoring.reload import EvaluationSetConfig
from monitor.scoring.settings import MetricsConfig
from monitor.sections import REQUIRED, apply_environment
from monitor.windows.settings import WindowsConfig

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "rankmon.example.yaml"
MINIMAL = {"kafka": {"topic": "ranking-events"}, "evaluation_set": {"path": "qrels.txt"}}


def write(tmp_path: Path, tree: dict[str, Any]) -> Path:
    path = tmp_path / "rankmon.yaml"
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return path


def load(tmp_path: Path, tree: dict[str, Any], env: dict[str, str] | None = None) -> Config:
    return load_config(write(tmp_path, tree), env or {})


def key_paths(tree: dict[str, Any], prefix: str = "") -> set[str]:
    paths = set()
    for key, value in tree.items():
        path = f"{prefix}{key}"
        paths.add(path)
        if isinstance(value, dict) and key != "alerts":
            paths |= key_paths(value, path + ".")
    return paths


def test_example_config_loads_and_validates() -> None:
    config = load_config(EXAMPLE, {})
    assert config.kafka.topic == "ranking-events"
    assert config.windows.size.text == "5m"


DECLARED: dict[str, type[Any]] = {
    "kafka": KafkaConfig,
    "evaluation_set": EvaluationSetConfig,
    "metrics": MetricsConfig,
    "windows": WindowsConfig,
    "schedule": ScheduleConfig,
    "segments": SegmentsConfig,
    "judgments": JudgmentsConfig,
    "judging": JudgingConfig,
    "export": ExportConfig,
    "export.explain": ExplainConfig,
    "logging": LoggingConfig,
}
# read in `export`, kept in ExplainConfig
NOT_DECLARED = {"export.external_url"}


def leaf_keys(tree: Any, prefix: str = "") -> set[str]:
    if not isinstance(tree, dict) or not tree:
        return {prefix}
    keys: set[str] = set()
    for name, value in tree.items():
        dotted = f"{prefix}.{name}" if prefix else str(name)
        keys |= leaf_keys(value, dotted)
    return keys


def dig(tree: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        tree = tree[part]
    return tree


@pytest.mark.parametrize("where", list(DECLARED))
def test_the_example_writes_each_declared_key_with_its_declared_default(where: str) -> None:
    example = dig(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8")), where)
    declared = declared_keys(DECLARED[where])
    for declared_key in declared:
        key, default = declared_key.key, declared_key.default
        written = dig(example, key)
        if default is REQUIRED or declared_key.derived:
            assert written is not None or declared_key.derived, (where, key)
        else:
            assert written == default, (where, key)
        assert declared_key.doc and "\n" not in declared_key.doc, (where, key)
    nested = {name.split(".", 1)[1] for name in DECLARED if name.startswith(where + ".")}
    others = {name.split(".", 1)[1] for name in NOT_DECLARED if name.startswith(where + ".")}
    written_keys = {k for k in leaf_keys(example) if k.split(".")[0] not in nested | others}
    assert written_keys == {declared_key.key for declared_key in declared}


def test_example_config_documents_every_key() -> None:
    example = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    example["kafka"]["security"]["sasl"] = {
        "mechanism": "PLAIN",
        "username": "u",
        "password_env": "P",
        "password_file": None,
    }
    # The SASL keys are documented in comments (the example runs without SASL).
    text = EXAMPLE.read_text(encoding="utf-8")
    for key in ("mechanism:", "username:", "password_env:", "password_file:"):
        assert f"#   {key}" in text
    rendered = render_config(load_config(EXAMPLE, {}))
    rendered["kafka"]["security"]["sasl"] = example["kafka"]["security"]["sasl"]
    assert key_paths(example) == key_paths(rendered)


def test_minimal_config_takes_the_documented_defaults(tmp_path: Path) -> None:
    config = load(tmp_path, MINIMAL)
    assert config.kafka.group_id == "rankmon"
    assert config.kafka.dead_letter_topic == "ranking-events.dlq"
    assert config.kafka.windows_topic == "ranking-events.windows"
    assert config.kafka.bootstrap_servers == ("localhost:9092",)
    assert config.metrics.cutoffs == (5, 10, 20)
    assert config.metrics.gain_names == ("linear", "exp")
    assert (config.export.host, config.export.port) == ("0.0.0.0", 9464)
    assert config.windows.hop == config.windows.size == Duration("5m", 300_000)
    assert not config.windows.sliding
    assert config.windows.allowed_lateness.ms == 60_000
    assert config.schedule.interval.seconds == 15.0
    assert config.alerts.rules == ()
    assert config.alerts.alertmanager.url is None and config.alerts.log


def test_relative_evaluation_set_path_is_taken_from_the_config_directory(tmp_path: Path) -> None:
    assert load(tmp_path, MINIMAL).evaluation_set.path == tmp_path.resolve() / "qrels.txt"


def test_environment_overrides_lists_numbers_and_nested_keys(tmp_path: Path) -> None:
    env = {
        "RANKMON_KAFKA__BOOTSTRAP_SERVERS": "a:9092,b:9092",
        "RANKMON_EXPORT__PORT": "9500",
        "RANKMON_METRICS__CUTOFFS": "[1, 3]",
        "RANKMON_WINDOWS__HOP": "1m",
        "RANKMON_KAFKA__SECURITY__SSL__CHECK_HOSTNAME": "false",
    }
    config = load(tmp_path, MINIMAL, env)
    assert config.kafka.bootstrap_servers == ("a:9092", "b:9092")
    assert config.export.port == 9500
    assert config.metrics.cutoffs == (1, 3)
    assert config.windows.sliding
    assert config.kafka.security.ssl.check_hostname is False


def test_empty_environment_override_leaves_the_default(tmp_path: Path) -> None:
    assert load(tmp_path, MINIMAL, {"RANKMON_EXPORT__PORT": ""}).export.port == 9464


def test_variables_without_a_level_separator_are_not_overrides(tmp_path: Path) -> None:
    config = load(tmp_path, MINIMAL, {"RANKMON_SASL_PASSWORD": "x", "RANKMON_PORT": "1"})
    assert config.export.port == 9464


def test_environment_is_read_when_loading_not_at_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANKMON_KAFKA__TOPIC", "late-bound")
    assert load_config(write(tmp_path, MINIMAL)).kafka.topic == "late-bound"


def test_unknown_override_names_the_key_the_variable_and_the_closest_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, MINIMAL, {"RANKMON_EXPORT__PROT": "9500"})
    message = str(caught.value)
    assert "'export.prot'" in message
    assert "RANKMON_EXPORT__PROT" in message
    assert "did you mean 'export.port'" in message


def test_unknown_key_in_the_file_suggests_the_closest_valid_key(tmp_path: Path) -> None:
    tree = {**MINIMAL, "windows": {"allowed_latenes": "1m"}}
    with pytest.raises(ConfigError, match=r"did you mean 'windows\.allowed_lateness'"):
        load(tmp_path, tree)


def test_null_means_the_default(tmp_path: Path) -> None:
    tree = {**MINIMAL, "export": {"port": None}, "windows": {"hop": None, "size": "10m"}}
    config = load(tmp_path, tree)
    assert config.export.port == 9464
    assert config.windows.hop.text == "10m"


@pytest.mark.parametrize(
    ("text", "ms"),
    [("500ms", 500), ("15s", 15_000), ("5m", 300_000), ("1h", 3_600_000), ("1d", 86_400_000)],
)
def test_duration_keeps_the_text_as_written(text: str, ms: int) -> None:
    duration = parse_duration(text)
    assert (duration.ms, str(duration)) == (ms, text)


@pytest.mark.parametrize("text", ["5", "5 m", "1h30m", "-5m", "1.5m", "5M", "m", ""])
def test_malformed_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_sliding_hop_must_divide_the_window_size(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'windows\.hop'.*multiple"):
        load(tmp_path, {**MINIMAL, "windows": {"size": "5m", "hop": "2m"}})


def test_gain_map_becomes_a_gain_labelled_by_its_text(tmp_path: Path) -> None:
    config = load(tmp_path, {**MINIMAL, "metrics": {"gains": ["linear", {1: 1, 2: 5}]}})
    assert config.metrics.gain_names == ("linear", "1=1,2=5")
    assert config.metrics.gains[1].of(2) == 5.0


def test_sasl_password_comes_from_the_named_variable(tmp_path: Path) -> None:
    sasl = {"mechanism": "SCRAM-SHA-512", "username": "rankmon", "password_env": "KAFKA_PW"}
    tree = {**MINIMAL, "kafka": {"topic": "t", "security": {"protocol": "SASL_SSL", "sasl": sasl}}}
    config = load(tmp_path, tree, {"KAFKA_PW": "hunter2-secret"})
    assert config.kafka.security.sasl is not None
    assert config.kafka.security.sasl.password.reveal() == "hunter2-secret"
    assert "hunter2-secret" not in repr(config)
    assert "hunter2-secret" not in str(config)
    assert "hunter2-secret" not in yaml.safe_dump(render_config(config))


def test_secret_file_is_read_without_its_trailing_newline(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("s3cret\n", encoding="utf-8")
    sasl = {"mechanism": "PLAIN", "username": "u", "password_file": "pw"}
    tree = {**MINIMAL, "kafka": {"topic": "t", "security": {"protocol": "SASL_SSL", "sasl": sasl}}}
    sasl_config = load(tmp_path, tree).kafka.security.sasl
    assert sasl_config is not None
    assert sasl_config.password.reveal() == "s3cret"
    assert sasl_config.password.file == tmp_path.resolve() / "pw"


def test_inline_password_is_refused_without_echoing_it(tmp_path: Path) -> None:
    sasl = {"mechanism": "PLAIN", "username": "u", "password": "plain-text-pw"}
    tree = {**MINIMAL, "kafka": {"topic": "t", "security": {"protocol": "SASL_SSL", "sasl": sasl}}}
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, tree)
    assert caught.value.key == "kafka.security.sasl.password"
    assert "plain-text-pw" not in str(caught.value)


SASL = {"mechanism": "PLAIN", "username": "u", "password_env": "PW"}


@pytest.mark.parametrize(
    ("security", "key", "problem"),
    [
        ({"protocol": "SASL_SSL"}, "sasl", "needs sasl.mechanism"),
        ({"sasl": SASL}, "sasl", "does not use SASL"),
        ({"ssl": {"cafile": "ca.pem"}}, "ssl", "does not use TLS"),
        ({"protocol": "SSL", "ssl": {"certfile": "ca.pem"}}, "ssl.keyfile", "both certfile"),
        (
            {"protocol": "SSL", "ssl": {"key_password_env": "PW"}},
            "ssl.key_password_env",
            "no keyfile",
        ),
        ({"protocol": "SSL", "ssl": {"cafile": "gone.pem"}}, "ssl.cafile", "file not found"),
        (
            {"protocol": "SASL_SSL", "sasl": {**SASL, "password_env": None}},
            "sasl.password_env",
            "password is required: set password_env or password_file",
        ),
        (
            {"protocol": "SASL_SSL", "sasl": {**SASL, "password_file": "ca.pem"}},
            "sasl.password_file",
            "not password_env and password_file",
        ),
        (
            {"protocol": "SASL_SSL", "sasl": {**SASL, "mechanism": "GSSAPI"}},
            "sasl.mechanism",
            "PLAIN",
        ),
    ],
)
def test_each_security_mistake_names_its_key(
    tmp_path: Path, security: dict[str, Any], key: str, problem: str
) -> None:
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    tree = {**MINIMAL, "kafka": {"topic": "t", "security": security}}
    with pytest.raises(ConfigError, match=problem) as caught:
        load(tmp_path, tree, {"PW": "pw"})
    assert caught.value.key == f"kafka.security.{key}"


def test_secret_prints_masked_and_refuses_pickling() -> None:
    secret = Secret("value-123", env="X")
    assert str(secret) == "***"
    assert f"{secret}" == "***"
    assert "value-123" not in repr(secret)
    with pytest.raises(TypeError):
        pickle.dumps(secret)


def test_rendered_config_loads_back_to_an_equal_config(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("pw", encoding="utf-8")
    sasl = {"mechanism": "PLAIN", "username": "u", "password_file": "pw"}
    tree = {
        **MINIMAL,
        "kafka": {"topic": "t", "security": {"protocol": "SASL_PLAINTEXT", "sasl": sasl}},
        "metrics": {"gains": ["exp", {0: 0, 1: 2.5}], "cutoffs": [3, 10]},
        "windows": {"size": "1h", "hop": "15m"},
        "segments": {"keys": ["model", "market"]},
        "alerts": {"rules": [{"name": "floor", "measure": "ndcg@10", "below": 0.5}]},
    }
    config = load(tmp_path, tree)
    again = tmp_path / "again"
    again.mkdir()
    assert load(again, render_config(config)) == config


def test_impossible_date_in_the_file_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("windows:\n  size: 2026-13-45\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid YAML"):
        load_config(path, {})


def test_yaml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kafka:\n  topic: [unclosed\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.yaml:\d+: not valid YAML"):
        load_config(path, {})


def test_the_alerts_section_is_read_with_the_rest_and_overrides_reach_it(tmp_path: Path) -> None:
    rule = {"name": "floor", "measure": "ndcg@10", "below": 0.5}
    tree = {**MINIMAL, "alerts": {"rules": [rule], "alertmanager": {"url": "x"}}}
    env = {"RANKMON_ALERTS__ALERTMANAGER__URL": "http://am:9093"}
    alerts = load(tmp_path, tree, env).alerts
    assert alerts.alertmanager.url is not None
    assert alerts.alertmanager.url.reveal() == "http://am:9093"
    assert [r.measure for r in alerts.rules] == ["ndcg@10:linear"]


def test_config_cannot_be_changed_after_start(tmp_path: Path) -> None:
    config = load(tmp_path, MINIMAL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.export.port = 1  # type: ignore[misc]


def test_config_logged_as_a_json_field_keeps_its_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sasl = {"mechanism": "PLAIN", "username": "u", "password_env": "PW"}
    tree = {**MINIMAL, "kafka": {"topic": "t", "security": {"protocol": "SASL_SSL", "sasl": sasl}}}
    config = load(tmp_path, tree, {"PW": "log-me-not"})
    logger = logging.getLogger("monitor.test")
    with caplog.at_level(logging.INFO, logger="monitor.test"):
        logger.info("started", extra=fields(config=config))
    json_line = JsonLinesFormatter().format(caplog.records[0])
    text_line = TextFormatter().format(caplog.records[0])
    assert '"username":"u"' in json_line
    assert "log-me-not" not in json_line
    assert "log-me-not" not in text_line


def _valid_keys() -> dict[str, list[str]]:
    rendered = render_config(load_config(EXAMPLE, {}))
    return {section: sorted(keys) for section, keys in rendered.items() if isinstance(keys, dict)}


VALID_KEYS = _valid_keys()
yaml_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["5m", "0s", "15s", "linear", "exp", "SASL_SSL", "a:1", "1=2"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
config_trees = st.dictionaries(
    st.sampled_from(sorted(VALID_KEYS)),
    st.dictionaries(
        st.sampled_from(sorted({k for ks in VALID_KEYS.values() for k in ks})),
        yaml_values,
        max_size=4,
    )
    | yaml_values,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(config_trees)
def test_any_config_tree_gives_a_config_or_a_config_error_never_a_crash(
    tree: dict[str, Any],
) -> None:
    merged: dict[str, Any] = {"kafka": {"topic": "t"}, "evaluation_set": {"path": "q"}}
    for name, value in tree.items():
        # Keep the required keys unless the tree sets them, so the rest gets read too.
        base = merged.get(name)
        merged[name] = {**base, **value} if isinstance(value, dict) and base else value
    try:
        config_from_tree(merged, {}, {}, ROOT)
    except ConfigError as error:
        assert "\n" not in str(error)
        assert error.key


env_names = st.lists(
    st.sampled_from([*sorted(VALID_KEYS), "port", "size", "x", ""]), min_size=1, max_size=4
).map(lambda parts: "RANKMON_" + "__".join(parts).upper())


env_values = st.text(max_size=20) | st.sampled_from(
    ["2026-13-45", "[5m", "9500", "a:1,b:2", "{x: 1}", "", "null", "5m", "linear"]
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(env_names, env_values, max_size=3))
def test_any_environment_override_gives_a_config_or_a_config_error(env: dict[str, str]) -> None:
    base = {"kafka": {"topic": "t"}, "evaluation_set": {"path": "q"}}
    tree = copy.deepcopy(base)
    try:
        config_from_tree(tree, apply_environment(tree, env), env, ROOT)
    except ConfigError as error:
        assert "\n" not in str(error)


def test_the_example_comparison_writes_each_declared_key_with_its_declared_default() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    block = text.split("\n# comparisons:\n", 1)[1].split("\ncomparisons:", 1)[0]
    uncommented = "\n".join(line[2:] for line in block.splitlines() if line.startswith("# "))
    (item,) = yaml.safe_load(uncommented)
    declared = declared_keys(ComparisonConfig)
    for declared_key in declared:
        assert item[declared_key.key] == declared_key.default, declared_key.key
        assert declared_key.doc and "\n" not in declared_key.doc, declared_key.key
    read_by_the_config = {"name", "baseline", "candidate", "measures"}
    assert set(item) == {d.key for d in declared} | read_by_the_config


def test_the_example_alerts_section_writes_each_declared_key_with_its_declared_default() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    block = text.split("\n# alerts:\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if not line.startswith("# "):
            break
        lines.append(line[2:])
    written = yaml.safe_load("\n".join(lines))
    declared = declared_keys(AlertingConfig)
    for declared_key in declared:
        value = dig(written, declared_key.key)
        if declared_key.derived:
            assert value is None, declared_key.key  # the host name, derived at start
        else:
            assert value == declared_key.default, declared_key.key
        assert declared_key.doc and "\n" not in declared_key.doc, declared_key.key
    read_by_the_rules = {"rules"}
    assert {k for k in leaf_keys(written) if k.split(".")[0] not in read_by_the_rules} == {
        d.key for d in declared
    }


def check_commented_section(name: str, settings: type[Any]) -> None:
    """The example's commented-out `# name:` block writes each key `settings` declares,
    with its declared default (a value for the required ones), and nothing else."""
    text = EXAMPLE.read_text(encoding="utf-8")
    block = text.split(f"\n# {name}:\n", 1)[1].split("\n\n", 1)[0]
    written = yaml.safe_load(
        "\n".join(line[2:] for line in block.splitlines() if line.startswith("# "))
    )
    declared = declared_keys(settings)
    for declared_key in declared:
        value = dig(written, declared_key.key)
        if declared_key.default is REQUIRED:
            assert value is not None, declared_key.key
        else:
            assert value == declared_key.default, declared_key.key
        assert declared_key.doc and "\n" not in declared_key.doc, declared_key.key
    assert leaf_keys(written) == {d.key for d in declared}


def test_the_example_replay_section_writes_each_declared_key_with_its_declared_default() -> None:
    check_commented_section("replay", ReplayConfig)


def test_a_replay_section_is_read_checked_and_rendered_back(tmp_path: Path) -> None:
    (tmp_path / "topics.tsv").write_text("q1\tfirst query\n", encoding="utf-8")
    replay = {
        "topics": "topics.tsv",
        "ranker": {
            "url_env": "RANKER",
            "preset": "solr",
            "headers": {"X-Team": "search"},
            "headers_env": {"X-Api-Key": "KEY"},
        },
        "segment": {"model": "v42"},
        "schedule": {"cron": "*/10 * * * *", "timezone": "Europe/Paris"},
    }
    environ = {"RANKER": "http://s:8983/select", "KEY": "k-secret"}
    config = load(tmp_path, {**MINIMAL, "replay": replay}, environ)
    assert config.replay is not None
    [(header, key)] = config.replay.ranker.secret_headers
    assert (header, key.reveal()) == ("X-Api-Key", "k-secret")
    assert "k-secret" not in yaml.safe_dump(render_config(config)) + repr(config)
    assert config.replay.ranker.preset_of.ids == "response.docs[].id"
    assert config.replay.ranker.url.reveal() == "http://s:8983/select"
    rendered = render_config(config)
    assert rendered["replay"]["ranker"]["url_env"] == "RANKER"
    assert rendered["replay"]["segment"] == {"model": "v42"}
    again = tmp_path / "again"
    again.mkdir()
    assert load(again, rendered, environ).replay == config.replay
    assert load(tmp_path, MINIMAL).replay is None


@pytest.mark.parametrize(
    ("replay", "key", "problem"),
    [
        ({"ranker": {"url": "http://r"}}, "replay.topics", "is required"),
        ({"topics": "topics.tsv"}, "replay.ranker.url", "set url, url_env or url_file"),
        ({"topics": "topics.tsv", "ranker": {"url": "ftp://r"}}, "replay.ranker.url", "http"),
        ({"topics": "nope.tsv", "ranker": {"url": "http://r"}}, "replay.topics", "not found"),
        (
            {"topics": "topics.tsv", "ranker": {"url": "http://r", "ids": "hits.id"}},
            "replay.ranker.ids",
            "exactly one list",
        ),
        (
            {"topics": "topics.tsv", "ranker": {"url": "http://r"}, "schedule": {"cron": "x"}},
            "replay.schedule.cron",
            "crontab",
        ),
        (
            {
                "topics": "topics.tsv",
                "ranker": {"url": "http://r"},
                "schedule": {"cron": "* * * * *", "interval": "1m"},
            },
            "replay.schedule.cron",
            "not both",
        ),
        (
            {"topics": "topics.tsv", "ranker": {"url": "http://r"}, "segment_from": {"m": "x"}},
            "replay.segment_from",
            "header:NAME",
        ),
        (
            {"topics": "topics.tsv", "ranker": {"url": "http://r"}, "segment": {"m": 42}},
            "replay.segment",
            "expected a string",
        ),
        (
            {"topics": "topics.tsv", "ranker": {"url": "http://r", "headers_env": {"K": "UNSET"}}},
            "replay.ranker.headers_env",
            "K: environment variable UNSET is not set",
        ),
        (  # windows.size is 5m by default: two replays would share a window
            {"topics": "topics.tsv", "ranker": {"url": "http://r"}, "schedule": {"interval": "1m"}},
            "replay.schedule.interval",
            "shorter than windows.size",
        ),
    ],
)
def test_each_replay_mistake_names_its_key(
    tmp_path: Path, replay: dict[str, Any], key: str, problem: str
) -> None:
    (tmp_path / "topics.tsv").write_text("q1\tfirst query\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as caught:
        load(tmp_path, {**MINIMAL, "replay": replay})
    assert caught.value.key == key


def test_the_example_judge_section_writes_each_declared_key_with_its_declared_default() -> None:
    check_commented_section("judge", JudgeConfig)


def test_a_judge_section_is_read_and_rendered_back_without_its_key(tmp_path: Path) -> None:
    (tmp_path / "documents.jsonl").write_text('{"doc_id": "d1", "text": "t"}\n')
    judge = {"url": "http://llm:8000/v1/chat/completions", "model": "m",
             "documents": "documents.jsonl", "key_env": "JUDGE_KEY"}  # fmt: skip
    config = load(tmp_path, {**MINIMAL, "judge": judge}, {"JUDGE_KEY": "sk-secret"})
    assert config.judge is not None and config.judge.key is not None
    assert config.judge.key.reveal() == "sk-secret"
    assert config.judge.documents == tmp_path.resolve() / "documents.jsonl"
    rendered = render_config(config)["judge"]
    assert rendered["key_env"] == "JUDGE_KEY" and "sk-secret" not in str(rendered)
