"""Structured logging: text for people, JSON lines for log pipelines.

Each log call passes its fields as `extra={"fields": {...}}`; the JSON formatter writes them
as top-level keys, the text formatter as `key=value` after the message. Secrets never reach a
log line: config objects hold them as `Secret` or `SecretUrl`, whose text forms are masked.

Fields carry what events say (segment values, ids), and events come from a shared topic: the
text formatter escapes control characters in the message and in every field, so a value with
a newline cannot forge a log line (JSON lines escape them by construction).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from monitor.declare import setting
from monitor.sections import as_choice

__all__ = ["LoggingConfig", "configure_logging", "escaped", "fields"]

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(value: Any) -> str:
    if not isinstance(value, str) or value.upper() not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return value.upper()


@dataclass(frozen=True, slots=True)
class LoggingConfig:
    """The `logging` settings, declared once (`monitor.declare`)."""

    level: str = setting("INFO", read=_log_level, doc="DEBUG, INFO, WARNING, ERROR or CRITICAL")
    format: str = setting(
        "text", read=as_choice("text", "json"), doc="text for people, json lines for pipelines"
    )


def fields(**values: Any) -> dict[str, Any]:
    """The `extra` argument that attaches structured fields to one log record."""
    return {"fields": values}


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """`time level logger: message key=value ...`, one line whatever the values hold."""

    def format(self, record: logging.LogRecord) -> str:
        line = escaped(super().format(record), keep_newlines=bool(record.exc_info))
        extra = getattr(record, "fields", {})
        if extra:
            line += " " + " ".join(f"{escaped(str(k))}={escaped(str(v))}" for k, v in extra.items())
        return line


def escaped(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with control characters (newlines included, unless `keep_newlines` for a
    traceback's own lines) written as escapes: `\\n`, `\\x1b`."""
    if text.isprintable():
        return text
    return "".join(
        c
        if c.isprintable() or (keep_newlines and c == "\n")
        else c.encode("unicode_escape").decode()
        for c in text
    )


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """Send rankmon's logs to stderr in the chosen format."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonLinesFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("monitor")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
