"""The effective configuration as plain data, in the shape of the YAML file.

`render_config(config)` fills in every default and applies the overrides, and is itself a
valid config file: loading it gives back an equal `Config` (but for URLs written inline with
credentials, which print masked). Secrets appear only as where they come from
(`password_env: KAFKA_PASSWORD`), never as values; `rankmon check-config` prints it, and the
service may log it at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.config.alerts import render_alerts
from monitor.config.comparisons import render_comparisons
from monitor.config.loader import Config
from monitor.kafka.settings import KafkaConfig, SslConfig
from monitor.values import Secret

__all__ = ["render_config"]


def render_config(config: Config) -> dict[str, Any]:
    """Every key of `config` as YAML-ready data (str, int, bool, None, lists and dicts)."""
    windows, evaluation_set, export = config.windows, config.evaluation_set, config.export
    return {
        "kafka": _kafka(config.kafka),
        "evaluation_set": {
            "path": str(evaluation_set.path),
            "reload": {
                "watch": evaluation_set.watch,
                "poll_interval": evaluation_set.poll_interval.text,
            },
        },
        "metrics": {
            "cutoffs": list(config.metrics.cutoffs),
            "gains": [gain.name for gain in config.metrics.gains],
            "relevance_level": config.metrics.relevance_level,
            "idcg_zero": config.metrics.idcg_zero,
            "max_depth": config.metrics.max_depth,
            "min_queries": config.metrics.min_queries,
        },
        "windows": {
            "size": windows.size.text,
            "hop": windows.hop.text,
            "allowed_lateness": windows.allowed_lateness.text,
            "idle_timeout": windows.idle_timeout.text,
            "max_future": windows.max_future.text,
            "max_clock_skew": windows.max_clock_skew.text,
            "time_source": windows.time_source,
        },
        "schedule": {
            "interval": config.schedule.interval.text,
            "liveness_timeout": config.schedule.liveness_timeout.text,
        },
        "segments": {
            "keys": list(config.segments.keys),
            "max_values": config.segments.max_values,
            "max_combinations": config.segments.max_combinations,
            "retire_after": config.segments.retire_after.text,
            "max_value_bytes": config.segments.max_value_bytes,
        },
        "judgments": {"inline": config.judgments.inline},
        "export": {
            "host": export.host,
            "port": export.port,
            "tls": {"certfile": _path(export.tls_certfile), "keyfile": _path(export.tls_keyfile)},
            "external_url": export.explain.external_url,
            "explain": {
                "keep_windows": export.explain.keep_windows,
                "max_rankings": export.explain.max_rankings,
                "max_sample_bytes": export.explain.max_sample_bytes,
                "max_segments": export.explain.max_segments,
                "refresh": export.explain.refresh.text,
            },
        },
        "logging": {"level": config.logging.level, "format": config.logging.format},
        "alerts": render_alerts(config.alerts),
        "comparisons": render_comparisons(config.comparisons),
    }


def _kafka(kafka: KafkaConfig) -> dict[str, Any]:
    sasl = kafka.security.sasl
    return {
        "bootstrap_servers": list(kafka.bootstrap_servers),
        "topic": kafka.topic,
        "group_id": kafka.group_id,
        "client_id": kafka.client_id,
        "dead_letter_topic": kafka.dead_letter_topic,
        "windows_topic": kafka.windows_topic,
        "auto_offset_reset": kafka.auto_offset_reset,
        "session_timeout_ms": kafka.session_timeout_ms,
        "max_poll_records": kafka.max_poll_records,
        "max_record_bytes": kafka.max_record_bytes,
        "max_id_bytes": kafka.max_id_bytes,
        "security": {
            "protocol": kafka.security.protocol,
            "sasl": None
            if sasl is None
            else {
                "mechanism": sasl.mechanism,
                "username": sasl.username,
                **_secret("password", sasl.password),
            },
            "ssl": _ssl(kafka.security.ssl),
        },
    }


def _ssl(ssl: SslConfig) -> dict[str, Any]:
    return {
        "cafile": _path(ssl.cafile),
        "certfile": _path(ssl.certfile),
        "keyfile": _path(ssl.keyfile),
        **_secret("key_password", ssl.key_password),
        "check_hostname": ssl.check_hostname,
    }


def _secret(stem: str, secret: Secret | None) -> dict[str, str | None]:
    # Where the secret comes from, never its value.
    if secret is None:
        return {f"{stem}_env": None, f"{stem}_file": None}
    return {f"{stem}_env": secret.env, f"{stem}_file": _path(secret.file)}


def _path(path: Path | None) -> str | None:
    return None if path is None else str(path)
