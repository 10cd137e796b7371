"""The evaluation set's query texts, from a topics file, checked against its judgments.

Three formats, told apart by the content:

- TSV: `qid<TAB>text`, one query per line (`#` starts a comment line);
- JSON lines: `{"query_id": "q1", "text": "...", ...}`, one object per line; its other
  fields are the query's own, for the request template (`"{field}"`);
- TREC topics: `<top> <num> Number: 301 <title> text ... </top>` (the title is the text).

Every query of the evaluation set needs a text, and every text a query of the evaluation set:
either mismatch is an error at start that names the queries (a replay that silently skips
queries, or asks ones nobody judged, would read as a coverage or quality change).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.errors import InputError

__all__ = ["Query", "check_against", "read_topics"]

_TREC_TOP = re.compile(r"<top>(.*?)</top>", re.DOTALL | re.IGNORECASE)
_TREC_NUM = re.compile(r"<num>\s*(?:Number:)?\s*(\S+)", re.IGNORECASE)
_TREC_TITLE = re.compile(r"<title>\s*(?:Topic:)?\s*(.*?)\s*(?=<|\Z)", re.DOTALL | re.IGNORECASE)
_SHOWN = 5


@dataclass(frozen=True)
class Query:
    """One query to replay: its id, its text, and the extra fields of a JSON-lines topic."""

    query_id: str
    text: str
    fields: Mapping[str, Any] = field(default_factory=dict)


def read_topics(path: Path) -> dict[str, Query]:
    """The queries of the topics file at `path`, by id, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError.unreadable(str(path), "topics", error) from error
    start = text.lstrip()[:1]
    if start == "{":
        queries = _json_lines(text, str(path))
    elif "<top>" in text.lower():
        queries = _trec(text, str(path))
    else:
        queries = _tsv(text, str(path))
    if not queries:
        raise InputError(str(path), "no queries (expected qid<TAB>text, JSON lines or <top>)")
    return queries


def query_texts(path: Path) -> dict[str, str]:
    """Each query's text of the topics file at `path`, by id: what people read beside the
    query ids (alerts, the page, `rankmon explain --topics`)."""
    return {query_id: query.text for query_id, query in read_topics(path).items()}


def _add(queries: dict[str, Query], query: Query, path: str, line: int | None) -> None:
    if not query.query_id or not query.text.strip():
        raise InputError(path, "a query needs a non-empty id and text", line)
    if query.query_id in queries:
        raise InputError(path, f"query {query.query_id} is written twice", line)
    queries[query.query_id] = query


def _tsv(text: str, path: str) -> dict[str, Query]:
    queries: dict[str, Query] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        qid, tab, query = line.partition("\t")
        if not tab:
            raise InputError(path, "expected qid<TAB>text", number)
        _add(queries, Query(qid.strip(), query.strip()), path, number)
    return queries


def _json_lines(text: str, path: str) -> dict[str, Query]:
    queries: dict[str, Query] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(path, f"not JSON: {error.msg}", number) from None
        if not isinstance(item, dict):
            raise InputError(path, "expected a JSON object", number)
        qid, query = item.pop("query_id", None), item.pop("text", None)
        if not isinstance(qid, str) or not isinstance(query, str):
            raise InputError(path, "expected string fields query_id and text", number)
        _add(queries, Query(qid, query, item), path, number)
    return queries


def _trec(text: str, path: str) -> dict[str, Query]:
    queries: dict[str, Query] = {}
    for top in _TREC_TOP.finditer(text):
        line = text.count("\n", 0, top.start()) + 1
        number, title = _TREC_NUM.search(top[1]), _TREC_TITLE.search(top[1])
        if number is None or title is None:
            raise InputError(path, "a <top> needs a <num> and a <title>", line)
        _add(queries, Query(number[1], " ".join(title[1].split())), path, line)
    return queries


def check_against(queries: Mapping[str, Query], judged: Collection[str], path: Path) -> None:
    """Refuse a topics file whose queries are not exactly the evaluation set's."""
    without_text = sorted(set(judged) - set(queries))
    unjudged = sorted(set(queries) - set(judged))
    problems = []
    if without_text:
        problems.append(
            f"{len(without_text)} evaluation-set queries have no text ({_few(without_text)})"
        )
    if unjudged:
        problems.append(f"{len(unjudged)} texts have no judgments ({_few(unjudged)})")
    if problems:
        raise InputError(str(path), "; ".join(problems))


def _few(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")
