"""The validated, frozen `Config`: one YAML file plus `RANKMON_` environment overrides.

`load_config(path)` reads the file, applies every `RANKMON_A__B=value` variable (see
`monitor.sections`), checks each key and returns a `Config`, or raises `ConfigError`
naming the dotted key (`config key 'windows.hop': ...`), or `ConfigKeysError` naming every bad
key, in the file's order; unknown keys are errors too. Nothing
here reads the environment at import time, and a `Config` never changes after start.
`rankmon.example.yaml` documents every key with its default.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from monitor.alerting.settings import AlertingConfig
from monitor.clock import ScheduleConfig
from monitor.comparisons.settings import ComparisonConfig
from monitor.config.alerts import parse_alerting_config, read_alerts
from monitor.config.comparisons import read_comparisons
from monitor.config.moved import as_written, move_keys, notices
from monitor.declare import read_settings
from monitor.errors import ConfigError, ConfigKeysError
from monitor.explain.settings import ExplainConfig, external_url
from monitor.export.settings import ExportConfig
from monitor.ingest.settings import EventsConfig, JudgmentsConfig, SegmentsConfig
from monitor.judge.settings import JudgeConfig
from monitor.judging.settings import JudgingConfig
from monitor.kafka.settings import KafkaConfig, deployment_prefix
from monitor.limits import RecordLimits
from monitor.logs import LoggingConfig
from monitor.replay.settings import ReplayConfig
from monitor.scoring.reload import EvaluationSetConfig
from monitor.scoring.settings import MetricsConfig
from monitor.sections import (
    ConfigSection,
    apply_environment,
    echoes,
    enclosing_item,
    key_lines,
    line_of,
    read_yaml,
    set_aside,
)
from monitor.values import Duration, Secret, parse_duration
from monitor.windows.settings import WindowsConfig

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

MAX_PROBLEMS: Final = 50  # reported at once; a file with more has bigger problems


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
    events: EventsConfig = field(default_factory=EventsConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    segments: SegmentsConfig = field(default_factory=SegmentsConfig)
    judgments: JudgmentsConfig = field(default_factory=JudgmentsConfig)
    judging: JudgingConfig = field(default_factory=JudgingConfig)
    export: ExportConfig = field(default_factory=ExportConfig)
    explain: ExplainConfig = field(default_factory=ExplainConfig)  # export.explain
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    alerts: AlertingConfig = field(default_factory=_no_alerts)
    comparisons: tuple[ComparisonConfig, ...] = ()
    replay: ReplayConfig | None = None  # only `rankmon replay` needs it
    judge: JudgeConfig | None = None  # only `rankmon judge` needs it
    notices: tuple[str, ...] = ()  # what the file should change, printed at start (moved keys)

    @property
    def record_limits(self) -> RecordLimits:
        """What every record read is held to (`monitor.limits`): the events' bounds."""
        return RecordLimits(
            self.events.max_future.ms, self.windows.max_clock_skew.ms, self.events.max_id_bytes
        )


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
    moved = move_keys(tree, origins)
    base = path.resolve().parent
    try:
        config = config_from_tree(tree, origins, env, base)
    except ConfigError as first:
        problems = _every_problem(first, tree, origins, env, base)
    else:
        return dataclasses.replace(config, notices=notices(moved))
    problems = [as_written(problem, moved) for problem in problems]
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
    and the tree read again, until it reads or nothing more can be set aside. A problem that
    may only be the echo of a key set aside (that key now missing, or an item left without
    it) is not reported: the whole list item it is in is set aside instead (a rule, a
    comparison), and reading goes on after it. A problem that stands only because of an
    earlier one (a rule's cutoff the metrics section no longer computes) is reported too: it
    would be one after the fix."""
    problems = [first]
    removed: set[str] = set()
    pending = first.key
    while len(problems) < MAX_PROBLEMS and set_aside(tree, pending):
        removed.add(pending)
        try:
            config_from_tree(tree, origins, environ, base)
        except ConfigError as again:
            if echoes(again.key, removed):
                item = enclosing_item(again.key)
                if item is None or item in removed:
                    break
                pending = item
                continue
            problems.append(again)
            pending = again.key
        else:
            break
    return problems


def config_from_tree(
    tree: Mapping[str, Any], origins: Mapping[str, str], environ: Mapping[str, str], base: Path
) -> Config:
    """Build a `Config` from an already overridden tree (see `load_config`)."""
    root = ConfigSection(tree, "", origins, base=base)
    metrics = read_settings(MetricsConfig, root.section("metrics"))
    windows = read_settings(WindowsConfig, root.section("windows"))
    segments = read_settings(SegmentsConfig, root.section("segments"))
    export, explain = _read_export(root.section("export"))
    comparisons = read_comparisons(
        root,
        measures=metrics.keys(),
        segment_keys=segments.keys,
    )
    kafka = read_settings(KafkaConfig, root.section("kafka"), environ=environ)
    judging = _read_judging(root.section("judging"), kafka, metrics, explain)
    config = Config(
        kafka=kafka,
        evaluation_set=read_settings(EvaluationSetConfig, root.section("evaluation_set")),
        metrics=metrics,
        windows=windows,
        events=read_settings(EventsConfig, root.section("events")),
        schedule=read_settings(ScheduleConfig, root.section("schedule")),
        segments=segments,
        judgments=read_settings(JudgmentsConfig, root.section("judgments")),
        judging=judging,
        export=export,
        explain=explain,
        logging=read_settings(LoggingConfig, root.section("logging")),
        comparisons=comparisons,
        alerts=read_alerts(
            root.section("alerts"),
            comparisons=comparisons,
            external_url=explain.external_url,
            cutoffs=metrics.cutoffs,
            gains=metrics.gain_names,
            measures=tuple(str(key) for key in metrics.measures),
            segment_keys=segments.keys,
            window=windows.size,
            hop=windows.hop,
            environ=environ,
            judging=judging.enabled,
        ),
    )
    replay = root.section("replay")
    if root.has("replay"):
        settings = read_settings(ReplayConfig, replay, environ=environ)
        _check_replay_period(settings, windows, replay)
        try:
            ranker = settings.ranker.with_secret_headers(environ)
        except ValueError as error:
            raise replay.section("ranker").error("headers_env", str(error)) from None
        settings = dataclasses.replace(settings, ranker=ranker)
        config = dataclasses.replace(config, replay=settings)
    if root.has("judge"):
        judge = read_settings(JudgeConfig, root.section("judge"), environ=environ)
        config = dataclasses.replace(config, judge=judge)
    root.finish()
    return config


def _check_replay_period(
    replay: ReplayConfig, windows: WindowsConfig, section: ConfigSection
) -> None:
    """A replay's records carry its start as event time, and its windows close once it
    ended (`monitor.windows.replay_ends`): the next replay must start in a later window, or
    its records would arrive behind the watermark, late."""
    interval = replay.schedule.interval
    if interval is not None and interval.ms < windows.size.ms:
        raise section.section("schedule").error(
            "interval",
            f"{interval.text} is shorter than windows.size ({windows.size.text}): each replay "
            "must start in a window of its own (raise the interval or lower windows.size)",
        )


def _read_judging(
    section: ConfigSection, kafka: KafkaConfig, metrics: MetricsConfig, explain: ExplainConfig
) -> JudgingConfig:
    """The `judging` section, its topics named after the deployment's; on, it needs the
    nDCG of its cutoff and the sampled rankings it finds the unjudged documents in."""
    prefix = deployment_prefix(kafka.topic, kafka.group_id)
    judging = read_settings(JudgingConfig, section, prefix=prefix)
    if judging.enabled:
        if judging.cutoff not in metrics.cutoffs:
            raise section.error(
                "cutoff",
                f"{judging.cutoff} is not one of metrics.cutoffs "
                f"({', '.join(map(str, metrics.cutoffs))}): its bounds are what it narrows",
            )
        if not explain.max_rankings:
            raise section.error(
                "enabled",
                "needs sampled rankings to find the unjudged documents in: "
                "export.explain.max_rankings is 0",
            )
    topics = {kafka.topic, kafka.dead_letter_topic, kafka.windows_topic}
    for key in ("tojudge_topic", "judgments_topic"):
        if getattr(judging, key) in topics:
            raise section.error(key, "must differ from the kafka section's topics")
    return judging


def _read_export(section: ConfigSection) -> tuple[ExportConfig, ExplainConfig]:
    """The `export` section: its own keys, and the explanations' (`explain`, `external_url`)."""
    url = section.get("external_url", external_url, None)
    explain = read_settings(ExplainConfig, section.section("explain"), external_url=url)
    return read_settings(ExportConfig, section), explain
