"""The `judging` settings, declared once (`monitor.declare`): the judging loop's topics, its
cutoff, its budget and the grades a judgment may give."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from monitor.declare import setting
from monitor.kafka.settings import topic_name
from monitor.sections import (
    as_bool,
    as_int,
    as_int_list,
    as_number,
    as_path,
    as_str,
    as_str_list,
)

__all__ = ["JudgingConfig"]

_ANY_GRADE: Final[tuple[int, ...]] = ()
_HEADER: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110's token


def _grades(value: Any) -> tuple[int, ...]:
    """A list of distinct 32-bit grades; empty: the evaluation set's."""
    if value in ([], ""):
        return _ANY_GRADE
    return as_int_list(-(2**31), 2**31 - 1)(value)


def _patterns(value: Any) -> tuple[str, ...]:
    """A list of source patterns (`human:*`, `llm:gpt-4o@*`): `*` any text, `?` one letter."""
    if value in ([], "", None):
        return ()
    patterns = as_str_list(value)
    for pattern in patterns:
        if not pattern.strip():
            raise ValueError("a source pattern is empty")
    return tuple(patterns)


def _url_template(value: Any) -> str:
    """A document link template: http(s), with `{doc_id}` in it (or empty)."""
    text = as_str(value).strip() if value not in (None, "") else ""
    if text and not text.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    if text and "{doc_id}" not in text:
        raise ValueError("must hold {doc_id}, where each document's id goes")
    return text


def _header_name(value: Any) -> str:
    text = as_str(value).strip() if value not in (None, "") else ""
    if text and not _HEADER.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a header name")
    return text


def _optional_path(value: Any) -> Path | None:
    return None if value in (None, "") else as_path(value)


def _topic(suffix: str) -> Any:
    def derive(values: Mapping[str, Any]) -> str:
        return f"{values['prefix']}.{suffix}"

    return derive


@dataclass(frozen=True, slots=True)
class JudgingConfig:
    """The judging loop (docs/judging.md). Off by default.

    On, rankmon publishes the unjudged documents of each finalized window's top `cutoff` to
    `tojudge_topic` (most useful first, each (query, document) once, at most
    `budget_per_hour` an hour for the whole consumer group) and merges the judgments read from
    `judgments_topic` into the evaluation set, as a new version from a window boundary on.
    `grades`: the grades a judgment may give (default: those the evaluation set's file uses).
    `prefix` is given by the loader: the deployment's topic prefix (`kafka.deployment_prefix`).
    """

    prefix: str = ""
    enabled: bool = setting(False, read=as_bool, doc="run the judging loop")
    cutoff: int = setting(
        10, read=as_int(1, 10_000), doc="the top k whose unjudged documents are asked for"
    )
    budget_per_hour: int = setting(
        200, read=as_int(0, 10_000_000), doc="pairs published an hour, whole group, at most"
    )
    max_pending: int = setting(
        10_000, read=as_int(1, 10_000_000), doc="pairs waiting for the budget, at most"
    )
    audit_pairs: int = setting(
        200, read=as_int(2, 1_000_000), doc="newest audit pairs each model judge is read over"
    )
    min_audited_queries: int = setting(
        40,
        read=as_int(2, 1_000_000),
        doc="audited queries a window needs for its corrected headline (fewer: none)",
    )
    grades: tuple[int, ...] = setting(
        _ANY_GRADE,
        read=_grades,
        doc="grades a judgment may give (default: the evaluation set's)",
    )
    max_judgments: int = setting(
        250_000,
        read=as_int(1, 100_000_000),
        doc="grades kept from the judgments topic at most (more: refused, too_many_judgments)",
    )
    sources_allowed: tuple[str, ...] = setting(
        (),
        read=_patterns,
        doc="the sources a judgment may name, shell patterns like human:* (empty: any)",
    )
    audit_rate: float = setting(
        0.2,
        read=as_number(0.0, 1.0),
        doc="share of queries drawn for people to audit the model judges (whole queries)",
    )
    max_documents_bytes: int = setting(
        64 * 1024 * 1024,
        read=as_int(0, 1 << 40),
        doc="what events said of their documents kept for the to-judge records, bytes at most",
    )
    document_url: str = setting(
        "",
        read=_url_template,
        doc="a link to a document for its judges, {doc_id} put in (empty: the events' url)",
    )
    page: bool = setting(False, read=as_bool, doc="serve the judging page for people at /judge")
    people_header: str = setting(
        "X-Forwarded-User",
        read=_header_name,
        doc="the header your auth proxy sets to the person's name (empty: trust none)",
    )
    people_tokens: Path | None = setting(
        None,
        read=_optional_path,
        path="file",
        doc="a file of 'name token' lines: a person signs in to /judge with their token",
    )
    tojudge_topic: str = setting(
        "", read=topic_name, derive=_topic("tojudge"), doc="where pairs to judge go"
    )
    judgments_topic: str = setting(
        "", read=topic_name, derive=_topic("judgments"), doc="where judgments come from"
    )

    def problem(self) -> tuple[str, str] | None:
        """The two topics are two; the page knows who judges."""
        if self.tojudge_topic == self.judgments_topic:
            return "judgments_topic", "must differ from tojudge_topic"
        if self.page and not self.people_header and self.people_tokens is None:
            return "page", "needs people_header or people_tokens: no anonymous judgments"
        return None
