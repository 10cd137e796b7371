"""The effective configuration as plain data, in the shape of the YAML file.

`render_config(config)` fills in every default and applies the overrides, and is itself a
valid config file: loading it gives back an equal `Config` (but for URLs written inline with
credentials, which print masked). Secrets appear only as where they come from
(`password_env: KAFKA_PASSWORD`), never as values; `rankmon check-config` prints it, and the
service may log it at start.
"""

from __future__ import annotations

from typing import Any

from monitor.config.alerts import render_alerts
from monitor.config.comparisons import render_comparisons
from monitor.config.loader import Config
from monitor.declare import write_settings

__all__ = ["render_config"]


def render_config(config: Config) -> dict[str, Any]:
    """Every key of `config` as YAML-ready data (str, int, bool, None, lists and dicts)."""
    export = write_settings(config.export)
    export["external_url"] = config.explain.external_url
    export["explain"] = write_settings(config.explain)
    rendered = {
        "kafka": write_settings(config.kafka),
        "evaluation_set": write_settings(config.evaluation_set),
        "metrics": write_settings(config.metrics),
        "windows": write_settings(config.windows),
        "events": write_settings(config.events),
        "schedule": write_settings(config.schedule),
        "segments": write_settings(config.segments),
        "judgments": write_settings(config.judgments),
        "judging": write_settings(config.judging),
        "export": export,
        "logging": write_settings(config.logging),
        "alerts": render_alerts(config.alerts),
        "comparisons": render_comparisons(config.comparisons),
    }
    if config.replay is not None:  # only `rankmon replay` needs it
        rendered["replay"] = write_settings(config.replay)
    if config.judge is not None:  # only `rankmon judge` needs it
        rendered["judge"] = write_settings(config.judge)
    return rendered
