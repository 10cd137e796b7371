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
from monitor.declare import write_settings
from monitor.kafka.settings import KafkaConfig, SslConfig
from monitor.values import Secret

__all__ = ["render_config"]


def render_config(config: Config) -> dict[str, Any]:
    """Every key of `config` as YAML-ready data (str, int, bool, None, lists and dicts)."""
    export = write_settings(config.export)
    export["external_url"] = config.explain.external_url
    export["explain"] = write_settings(config.explain)
    return {
        "kafka": _kafka(config.kafka),
        "evaluation_set": write_settings(config.evaluation_set),
        "metrics": write_settings(config.metrics),
        "windows": write_settings(config.windows),
        "schedule": write_settings(config.schedule),
        "segments": write_settings(config.segments),
        "judgments": write_settings(config.judgments),
        "export": export,
        "logging": write_settings(config.logging),
        "alerts": render_alerts(config.alerts),
        "comparisons": render_comparisons(config.comparisons),
    }


def _kafka(kafka: KafkaConfig) -> dict[str, Any]:
    sasl = kafka.security.sasl
    out = write_settings(kafka)
    out["security"] = {
        "protocol": kafka.security.protocol,
        "sasl": None
        if sasl is None
        else {
            "mechanism": sasl.mechanism,
            "username": sasl.username,
            **_secret("password", sasl.password),
        },
        "ssl": _ssl(kafka.security.ssl),
    }
    return out


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
