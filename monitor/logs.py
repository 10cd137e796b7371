"""Structured logging: text for people, JSON lines for log pipelines.

Each log call passes its fields as `extra={"fields": {...}}`; the JSON formatter writes them
as top-level keys, the text formatter as `key=value` after the message. Secrets never reach a
log line: config objects hold them as `Secret`, whose text form is masked.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

__all__ = ["configure_logging", "fields"]


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
    """`time level logger: message key=value ...`."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = getattr(record, "fields", {})
        if extra:
            line += " " + " ".join(f"{key}={value}" for key, value in extra.items())
        return line


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
