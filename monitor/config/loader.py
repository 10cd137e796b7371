"""The validated, frozen `Config`: one YAML file plus `RANKMON_` environment overrides.

`load_config(path)` reads the file, applies every `RANKMON_A__B=value` variable (see
`monitor.sections`), checks each key and returns a `Config`, or raises `ConfigError`
naming the dotted key (`config key 'windows.hop': ...`), or `ConfigKeysError` naming every bad
key, in the file's order; unknown keys are errors too. Nothing
here reads the environment at import time, and a `Config` never changes after start.
`rankmon.example.yaml` documents every key with its default.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from monitor.alerting.settings import AlertingConfig
from monitor.comparisons.settings import ComparisonConfig
from monitor.config.alerts import parse_alerting_config, read_alerts
from monitor.config.comparisons import read_comparisons
from monitor.config.kafka import read_kafka, read_path
from monitor.config.metrics import MetricsConfig, read_metrics
from monitor.errors import ConfigError, ConfigKeysError
from monitor.explain.settings import ExplainConfig
from monitor.ingest.schema import DEFAULT_MAX_VALUE_BYTES
from monitor.kafka.settings import KafkaConfig
from monitor.scoring.catalog import monitor_keys
from monitor.scoring.reload import EvaluationSetConfig
from monitor.sections import (
    ConfigSection,
    apply_environment,
    as_bool,
    as_choice,
    as_duration,
    as_int,
    as_path,
    as_positive_duration,
    as_str,
    as_str_list,
    key_lines,
    line_of,
    read_yaml,
    set_aside,
)
from monitor.values import Duration, Secret, duration_of_ms, parse_duration
from monitor.windows.segments import label_name_problem

__all__ = [
    "Config",
    "Duration",
    "ExportConfig",
    "JudgmentsConfig",
    "LoggingConfig",
    "MetricsConfig",
    "ScheduleConfig",
    "Secret",
    "SegmentsConfig",
    "WindowsConfig",
    "load_config",
    "parse_duration",
]

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_TEN_SECONDS: Final = parse_duration("10s")
_FIFTEEN_SECONDS: Final = parse_duration("15s")
_ONE_MINUTE: Final = parse_duration("1m")
_ONE_DAY: Final = parse_duration("1d")
_NO_KEYS: tuple[str, ...] = ()
MAX_PROBLEMS: Final = 50  # reported at once; a file with more has bigger problems


@dataclass(frozen=True, slots=True)
class WindowsConfig:
    """Event-time windows, aligned to the epoch.

    Tumbling when `hop == size`, sliding otherwise (each event is in size/hop windows).
    `time_source` "event" takes the event's `event_time` and falls back to the record
    timestamp; "record" always takes the record timestamp. An event moves the watermark no
    further than its record timestamp plus `max_clock_skew`.
    """

    size: Duration
    hop: Duration
    allowed_lateness: Duration
    idle_timeout: Duration
    max_future: Duration
    time_source: str
    max_clock_skew: Duration = _TEN_SECONDS

    @property
    def sliding(self) -> bool:
        """Whether windows overlap."""
        return self.hop.ms != self.size.ms


@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    """How often closed windows are finalized, exported, published and committed, and how
    long the poll loop may make no progress before `/healthz` fails (default: the larger of
    a minute and four intervals)."""

    interval: Duration = _FIFTEEN_SECONDS
    liveness_timeout: Duration = _ONE_MINUTE


@dataclass(frozen=True, slots=True)
class SegmentsConfig:
    """Segment keys that become labels, and the caps on what they may take.

    Each key takes at most `max_values` values, and the keys together at most
    `max_combinations` combinations; the rest is reported as `monitor.windows.segments.OVERFLOW`, so
    a producer cannot explode the label cardinality. A value or combination not seen for
    `retire_after` (event time) leaves, making room for new ones (a new model release).
    An event whose value of a key is longer than `max_value_bytes` is rejected.
    """

    keys: tuple[str, ...] = ()
    max_values: int = 100
    max_combinations: int = 1000
    retire_after: Duration = _ONE_DAY
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES


@dataclass(frozen=True, slots=True)
class JudgmentsConfig:
    """Inline judgments: "ignore", or "fill" the documents the evaluation set has not judged.

    When both grade a document, the evaluation set wins.
    """

    inline: str = "ignore"


@dataclass(frozen=True, slots=True)
class ExportConfig:
    """The `/metrics` endpoint (and the explanations' API and page); TLS when both files
    are set."""

    host: str = "0.0.0.0"
    port: int = 9464
    tls_certfile: Path | None = None
    tls_keyfile: Path | None = None
    explain: ExplainConfig = field(default_factory=ExplainConfig)


@dataclass(frozen=True, slots=True)
class LoggingConfig:
    """Log level (DEBUG..CRITICAL) and format ("text" or "json" lines)."""

    level: str = "INFO"
    format: str = "text"


def _no_alerts() -> AlertingConfig:
    return parse_alerting_config({}, cutoffs=(), gains=(), segment_keys=(), window="5m")


@dataclass(frozen=True, slots=True)
class Config:
    """Everything rankmon reads at start, every section checked (the alert rules against the
    cutoffs, gains and segment keys the rest of it sets)."""

    kafka: KafkaConfig
    evaluation_set: EvaluationSetConfig
    metrics: MetricsConfig
    windows: WindowsConfig
    schedule: ScheduleConfig = ScheduleConfig()
    segments: SegmentsConfig = SegmentsConfig()
    judgments: JudgmentsConfig = JudgmentsConfig()
    export: ExportConfig = ExportConfig()
    logging: LoggingConfig = LoggingConfig()
    alerts: AlertingConfig = field(default_factory=_no_alerts)
    comparisons: tuple[ComparisonConfig, ...] = ()


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> Config:
    """Read, override and validate the config at `path`.

    `environ` defaults to `os.environ` as it is now; relative paths in the file are taken
    from the file's directory. Raises `InputError` (unreadable file, bad YAML) or
    `ConfigError` (a bad key).
    """
    path = Path(path)
    env = os.environ if environ is None else environ
    tree = read_yaml(path)
    origins = apply_environment(tree, env)
    base = path.resolve().parent
    try:
        return config_from_tree(tree, origins, env, base)
    except ConfigError as first:
        problems = _every_problem(first, tree, origins, env, base)
    if len(problems) == 1:
        raise problems[0]
    raise ConfigKeysError(_in_file_order(problems, key_lines(path)))


def _in_file_order(problems: list[ConfigError], lines: Mapping[str, int]) -> list[ConfigError]:
    """Problems by the line of their key. A key the file does not write (a required one
    that is missing, one an earlier fix would need) stays right after the problem found
    before it; the first one found, at its section's line."""
    placed: list[tuple[int, int, ConfigError]] = []
    for index, problem in enumerate(problems):
        line = lines.get(problem.key)
        if line is None:
            line = placed[-1][0] if placed else (line_of(problem.key, lines) or 0)
        placed.append((line, index, problem))
    return [problem for _, _, problem in sorted(placed, key=lambda p: (p[0], p[1]))]


def _every_problem(
    first: ConfigError,
    tree: dict[str, Any],
    origins: Mapping[str, str],
    environ: Mapping[str, str],
    base: Path,
) -> list[ConfigError]:
    """`first` and the problems after it: each bad key is set aside (it takes its default)
    and the tree read again, until it reads or a problem cannot be set aside (a required key
    that is missing, a whole list item, a key set aside already: then what follows may only
    be its echo). A problem that stands only because of an earlier one (a rule's cutoff the
    metrics section no longer computes) is reported too: it would be one after the fix."""
    problems = [first]
    removed: set[str] = set()
    error = first
    while len(problems) < MAX_PROBLEMS and set_aside(tree, error.key):
        removed.add(error.key)
        try:
            config_from_tree(tree, origins, environ, base)
        except ConfigError as again:
            if again.key in removed:
                break
            problems.append(again)
            error = again
        else:
            break
    return problems


def config_from_tree(
    tree: Mapping[str, Any], origins: Mapping[str, str], environ: Mapping[str, str], base: Path
) -> Config:
    """Build a `Config` from an already overridden tree (see `load_config`)."""
    root = ConfigSection(tree, "", origins)
    metrics = read_metrics(root.section("metrics"))
    windows = _read_windows(root.section("windows"))
    segments = _read_segments(root.section("segments"))
    export = _read_export(root.section("export"), base)
    comparisons = read_comparisons(
        root,
        measures=monitor_keys(metrics.cutoffs, metrics.gains),
        segment_keys=segments.keys,
    )
    config = Config(
        kafka=read_kafka(root.section("kafka"), environ, base),
        evaluation_set=_read_evaluation_set(root.section("evaluation_set"), base),
        metrics=metrics,
        windows=windows,
        schedule=_read_schedule(root.section("schedule")),
        segments=segments,
        judgments=_read_judgments(root.section("judgments")),
        export=export,
        logging=_read_logging(root.section("logging")),
        comparisons=comparisons,
        alerts=read_alerts(
            root.section("alerts"),
            comparisons=comparisons,
            external_url=export.explain.external_url,
            cutoffs=metrics.cutoffs,
            gains=metrics.gain_names,
            segment_keys=segments.keys,
            window=windows.size,
            hop=windows.hop,
            environ=environ,
            base=base,
        ),
    )
    root.finish()
    return config


def _read_evaluation_set(section: ConfigSection, base: Path) -> EvaluationSetConfig:
    path = base / section.get("path", as_path)
    reload = section.section("reload")
    config = EvaluationSetConfig(
        path=path,
        watch=reload.get("watch", as_bool, True),
        poll_interval=reload.get("poll_interval", as_positive_duration, parse_duration("10s")),
    )
    reload.finish()
    section.finish()
    return config


def _read_windows(section: ConfigSection) -> WindowsConfig:
    size = section.get("size", as_positive_duration, parse_duration("5m"))
    config = WindowsConfig(
        size=size,
        hop=section.get("hop", as_positive_duration, size),
        allowed_lateness=section.get("allowed_lateness", as_duration, parse_duration("1m")),
        idle_timeout=section.get("idle_timeout", as_positive_duration, parse_duration("5m")),
        max_future=section.get("max_future", as_duration, parse_duration("5m")),
        time_source=section.get("time_source", as_choice("event", "record"), "event"),
        max_clock_skew=section.get("max_clock_skew", as_duration, _TEN_SECONDS),
    )
    section.finish()
    if config.hop.ms > size.ms:
        raise section.error("hop", f"{config.hop} is longer than the window size {size}")
    if size.ms % config.hop.ms:
        raise section.error("hop", f"the window size {size} must be a multiple of {config.hop}")
    return config


def _read_schedule(section: ConfigSection) -> ScheduleConfig:
    interval = section.get("interval", as_positive_duration, parse_duration("15s"))
    derived = duration_of_ms(max(60_000, 4 * interval.ms))
    config = ScheduleConfig(
        interval=interval,
        liveness_timeout=section.get("liveness_timeout", as_positive_duration, derived),
    )
    section.finish()
    if config.liveness_timeout.ms < 2 * interval.ms:
        raise section.error(
            "liveness_timeout",
            f"{config.liveness_timeout} is shorter than two ticks ({interval} each): "
            "every tick would fail the liveness probe",
        )
    return config


def _read_segments(section: ConfigSection) -> SegmentsConfig:
    keys = section.get("keys", as_str_list, _NO_KEYS)
    config = SegmentsConfig(
        keys=keys,
        max_values=section.get("max_values", as_int(1, 100_000), 100),
        max_combinations=section.get("max_combinations", as_int(1, 1_000_000), 1000),
        retire_after=section.get("retire_after", as_positive_duration, _ONE_DAY),
        max_value_bytes=section.get("max_value_bytes", as_int(1, 1 << 16), DEFAULT_MAX_VALUE_BYTES),
    )
    section.finish()
    for key in keys:
        problem = label_name_problem(key)
        if problem is not None:
            raise section.error("keys", problem)
    if len(set(keys)) < len(keys):
        raise section.error("keys", "lists a key more than once")
    return config


def _read_judgments(section: ConfigSection) -> JudgmentsConfig:
    config = JudgmentsConfig(section.get("inline", as_choice("ignore", "fill"), "ignore"))
    section.finish()
    return config


def _read_export(section: ConfigSection, base: Path) -> ExportConfig:
    tls = section.section("tls")
    config = ExportConfig(
        host=section.get("host", as_str, "0.0.0.0"),
        port=section.get("port", as_int(0, 65535), 9464),  # 0: any free port
        tls_certfile=read_path(tls, "certfile", base),
        tls_keyfile=read_path(tls, "keyfile", base),
        explain=_read_explain(section),
    )
    tls.finish()
    section.finish()
    if (config.tls_certfile is None) != (config.tls_keyfile is None):
        raise tls.error("certfile", "TLS on the metrics endpoint needs both certfile and keyfile")
    return config


def _read_explain(export: ConfigSection) -> ExplainConfig:
    url = export.get("external_url", _external_url, None)
    section = export.section("explain")
    defaults = ExplainConfig()
    config = ExplainConfig(
        keep_windows=section.get("keep_windows", as_int(1, 10_000), defaults.keep_windows),
        max_rankings=section.get("max_rankings", as_int(0, 100_000_000), defaults.max_rankings),
        max_sample_bytes=section.get(
            "max_sample_bytes", as_int(0, 1 << 40), defaults.max_sample_bytes
        ),
        max_segments=section.get("max_segments", as_int(1, 1_000_000), defaults.max_segments),
        external_url=url,
        refresh=section.get("refresh", as_duration, defaults.refresh),
    )
    section.finish()
    return config


def _external_url(value: Any) -> str:
    text = as_str(value)
    parsed = urllib.parse.urlsplit(text)
    if "@" in parsed.netloc:
        # Never echoed: it is a credential. It would be printed by check-config and sent to
        # every alert receiver in each alert's generatorURL.
        raise ValueError(
            "carries user info (user:password@); it is every alert's public link: "
            "put the page behind an authenticating proxy instead"
        )
    if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.query:
        raise ValueError(f"expected an http(s) URL without a query, got {text!r}")
    return text.rstrip("/")


def _read_logging(section: ConfigSection) -> LoggingConfig:
    config = LoggingConfig(
        level=section.get("level", _log_level, "INFO"),
        format=section.get("format", as_choice("text", "json"), "text"),
    )
    section.finish()
    return config


def _log_level(value: Any) -> str:
    if not isinstance(value, str) or value.upper() not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return value.upper()
