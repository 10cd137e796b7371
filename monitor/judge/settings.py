"""The `judge:` section, declared once (`monitor.declare`): what `rankmon judge` asks and how.
Only `rankmon judge` reads it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from monitor.declare import secret, setting
from monitor.sections import as_int, as_number, as_path, as_positive_duration, as_str
from monitor.values import Duration, Secret, SecretUrl, parse_duration

__all__ = ["JudgeConfig"]


def _url(value: str, variable: str | None, file: Path | None) -> SecretUrl:
    if not value.startswith(("http://", "https://")):
        raise ValueError("the chat-completions URL must start with http:// or https://")
    return SecretUrl(value, keep_path=True, env=variable, file=file)


def _optional_path(value: object) -> Path | None:
    return None if value in (None, "") else as_path(value)


@dataclass(frozen=True)
class JudgeConfig:
    """`judge:`: an OpenAI-compatible chat-completions endpoint that grades the pairs the
    judging loop asks for (docs/judging.md, "An LLM judge worker")."""

    url: SecretUrl = secret(
        inline=True,
        required=True,
        make=_url,
        doc="the chat-completions URL, e.g. http://localhost:8000/v1/chat/completions",
    )
    model: str = setting(read=as_str, doc="the model name the endpoint serves")
    documents: Path | None = setting(
        None,
        read=_optional_path,
        path="file",
        doc="the documents' text, JSON lines of doc_id, title and text (null: the records')",
    )
    key: Secret | None = secret(doc="the API key, sent as a bearer token (key_env or key_file)")
    source: str = setting(
        "", read=as_str, doc="the judgments' source (empty: llm:<model>@<prompt hash>)"
    )
    prompt_file: Path | None = setting(
        None,
        read=_optional_path,
        path="file",
        doc="a prompt template ({query}, {title}, {text}; --- splits system from user)",
    )
    temperature: float = setting(0.0, read=as_number(0.0, 2.0), doc="the sampling temperature")
    max_tokens: int = setting(200, read=as_int(1, 100_000), doc="tokens an answer may take at most")
    max_document_bytes: int = setting(
        4096, read=as_int(64, 1 << 20), doc="a document's text sent at most (UTF-8 bytes)"
    )
    timeout: Duration = setting(
        parse_duration("60s"),
        read=as_positive_duration,
        doc="each attempt at most, the whole answer read",
    )
    retries: int = setting(3, read=as_int(0, 20), doc="retries of a failed request")
    backoff: Duration = setting(
        parse_duration("1s"), read=as_positive_duration, doc="the first retry's wait, doubling"
    )
    concurrency: int = setting(4, read=as_int(1, 256), doc="requests in flight at most")
    requests_per_hour: int = setting(
        0, read=as_int(0, 100_000_000), doc="requests an hour at most (0: no limit)"
    )
    tokens_per_hour: int = setting(
        0, read=as_int(0, 10_000_000_000), doc="tokens an hour at most (0: no limit)"
    )
    group_id: str = setting(
        "",
        read=as_str,
        doc="the workers sharing the to-judge topic (empty: rankmon-judge-<source>)",
    )
    metrics_port: int = setting(0, read=as_int(0, 65535), doc="the worker's own /metrics (0: off)")
