"""The `judging` settings, declared once (`monitor.declare`): the judging loop's topics, its
cutoff, its budget and the grades a judgment may give."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from monitor.declare import setting
from monitor.kafka.settings import topic_name
from monitor.sections import as_bool, as_int, as_int_list, as_str_list

__all__ = ["JudgingConfig"]

_ANY_GRADE: Final[tuple[int, ...]] = ()


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
    tojudge_topic: str = setting(
        "", read=topic_name, derive=_topic("tojudge"), doc="where pairs to judge go"
    )
    judgments_topic: str = setting(
        "", read=topic_name, derive=_topic("judgments"), doc="where judgments come from"
    )

    def problem(self) -> tuple[str, str] | None:
        """The two topics are two."""
        if self.tojudge_topic == self.judgments_topic:
            return "judgments_topic", "must differ from tojudge_topic"
        return None
