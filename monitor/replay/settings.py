"""The `replay:` section, declared once (`monitor.declare`): what to ask, whom, how hard, when.

```yaml
replay:
  topics: topics.tsv           # the query texts: qid<TAB>text, JSON lines or TREC topics
  depth: 100                   # documents asked for (and kept) per query
  ranker:
    url: http://localhost:9200/products/_search   # or url_env / url_file
    preset: elasticsearch      # json | elasticsearch | opensearch | solr
  segment: {model: v42}        # labels every event carries
  schedule: {interval: 10m}    # or cron: "*/10 * * * *", with timezone and misfire_grace
```

A request is built from a template (`body` for POST, `params` for GET) in which the string
`"{query}"` (or a string containing it) takes the query's text, `"{depth}"` the depth as a
number, and `"{field}"` any extra field a JSON-lines topic carries; the answer's document ids
(and scores) are found by a path such as `hits.hits[]._id` (`[]`: each element of a list).
Each preset fills the method, template and paths; a key written wins over the preset.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from monitor.declare import secret, setting, subsection
from monitor.ingest.schema import DOCUMENT_FIELDS
from monitor.sections import (
    as_bool,
    as_choice,
    as_int,
    as_path,
    as_positive_duration,
    as_positive_number,
    as_str,
    as_str_map,
)
from monitor.values import Duration, Secret, SecretUrl, parse_duration

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "PRESETS",
    "Preset",
    "RankerSettings",
    "ReplayConfig",
    "ReplaySchedule",
    "as_answer_path",
    "as_template",
]


@dataclass(frozen=True)
class Preset:
    """What a kind of search API is asked and answers."""

    method: str
    body: str | None  # JSON text of the POST body template
    params: tuple[tuple[str, str], ...]
    ids: str
    scores: str | None
    # What a judge reads of each document: (title|snippet|url, path in the answer).
    fields: tuple[tuple[str, str], ...] = ()


_JSON_FIELDS: Final = tuple((name, f"hits[].{name}") for name in DOCUMENT_FIELDS)
PRESETS: Final = {
    "json": Preset(
        "POST",
        json.dumps({"query": "{query}", "size": "{depth}"}),
        (),
        "hits[].id",
        "hits[].score",
        _JSON_FIELDS,
    ),
    "elasticsearch": Preset(
        "POST",
        json.dumps(
            {"query": {"query_string": {"query": "{query}"}}, "size": "{depth}", "_source": False}
        ),
        (),
        "hits.hits[]._id",
        "hits.hits[]._score",
    ),
    "solr": Preset(
        "GET",
        None,
        (("q", "{query}"), ("rows", "{depth}"), ("fl", "id,score"), ("wt", "json")),
        "response.docs[].id",
        "response.docs[].score",
    ),
}
PRESETS["opensearch"] = PRESETS["elasticsearch"]
# A plain JSON list of document ids as the whole answer.
PRESETS["list"] = Preset("POST", PRESETS["json"].body, (), "[]", None)


DEFAULT_MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
# RFC 9110's token: the characters a header name may have.
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _breaks_line(value: str) -> bool:
    return "\r" in value or "\n" in value or "\0" in value


def as_template(value: Any) -> str:
    """A request body template: a JSON object (or JSON text of one), kept as JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"not JSON: {error.msg} at character {error.pos}") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot be sent as JSON: {error}") from None


def as_answer_path(value: Any) -> str:
    """A path into the ranker's JSON answer: dotted keys, `[]` for each element of a list
    (`hits.hits[]._id`, `response.docs[].id`, `[]` for a plain list of ids)."""
    text = as_str(value).strip()
    if text.count("[]") != 1:
        raise ValueError(f"{text!r} must walk exactly one list, written [] (e.g. hits[].id)")
    for part in text.replace("[]", ".").split("."):
        if part and not part.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"{text!r}: {part!r} is not a key")
    return text


def as_document_fields(value: Any) -> tuple[tuple[str, str], ...]:
    """title, snippet and url, each a path into the answer walking the ids' list
    (`hits.hits[]._source.title`)."""
    fields = as_str_map(value)
    for name, path in fields:
        if name not in DOCUMENT_FIELDS:
            raise ValueError(f"{name!r} is not one of {', '.join(DOCUMENT_FIELDS)}")
        as_answer_path(path)
    return tuple((name, as_answer_path(path)) for name, path in fields)


def _url(value: str, variable: str | None, file: Path | None) -> SecretUrl:
    if not value.startswith(("http://", "https://")):
        raise ValueError("the ranker's url must start with http:// or https://")
    return SecretUrl(value, keep_path=True, env=variable, file=file)


@dataclass(frozen=True)
class RankerSettings:
    """`replay.ranker`: the HTTP API the queries are sent to."""

    url: SecretUrl = secret(
        inline=True, required=True, make=_url, doc="the ranker's URL (inline, url_env or url_file)"
    )
    preset: str = setting(
        "json",
        read=as_choice(*PRESETS),
        doc="json, list, elasticsearch, opensearch or solr: the method, template and paths",
    )
    method: str | None = setting(
        None, read=as_choice("GET", "POST"), doc="GET or POST (null: the preset's)"
    )
    body: str | None = setting(
        None,
        read=as_template,
        write=lambda text: None if text is None else json.loads(text),
        doc="the POST body template (null: the preset's)",
    )
    params: tuple[tuple[str, str], ...] = setting(
        (), read=as_str_map, write=dict, doc="query-string parameters, a template too"
    )
    headers: tuple[tuple[str, str], ...] = setting(
        (), read=as_str_map, write=dict, doc="headers sent with every request"
    )
    headers_env: tuple[tuple[str, str], ...] = setting(
        (),
        read=as_str_map,
        write=dict,
        doc="headers whose values are secrets: header -> environment variable",
    )
    token: Secret | None = secret(doc="a bearer token sent as Authorization")
    ids: str | None = setting(
        None, read=as_answer_path, doc="where the answer's document ids are (null: the preset's)"
    )
    scores: str | None = setting(
        None, read=as_answer_path, doc="where their scores are (null: the preset's)"
    )
    fields: tuple[tuple[str, str], ...] | None = setting(
        None,
        read=as_document_fields,
        write=lambda pairs: None if pairs is None else dict(pairs),
        doc="what a judge reads: title, snippet, url -> path in the answer (null: the preset's)",
    )
    timeout: Duration = setting(
        parse_duration("5s"),
        read=as_positive_duration,
        doc="one attempt's time limit, the whole answer read (each retry gets its own)",
    )
    max_response_bytes: int = setting(
        DEFAULT_MAX_RESPONSE_BYTES,
        read=as_int(1024, 1 << 31),
        doc="an answer's body at most (more: the query fails, too_large)",
    )
    retries: int = setting(2, read=as_int(0, 10), doc="retries of a failed or timed-out request")
    backoff: Duration = setting(
        parse_duration("500ms"), read=as_positive_duration, doc="the first retry's wait, doubling"
    )
    concurrency: int = setting(4, read=as_int(1, 256), doc="requests in flight at most")
    circuit_breaker: int = setting(
        10,
        read=as_int(0, 1_000_000),
        doc="queries failed in a row (down, overloaded) that abort the replay (0: never)",
    )
    rate: float | None = setting(
        None, read=as_positive_number, doc="queries per second at most (null: no limit)"
    )
    # `headers_env` read from the environment at start (`with_secret_headers`); never written.
    secret_headers: tuple[tuple[str, Secret], ...] = ()

    def with_secret_headers(self, environ: Mapping[str, str]) -> RankerSettings:
        """These settings with `headers_env` read; ValueError names an unset variable, or
        one whose value holds a line break (never the value: it is a secret)."""
        found = []
        for header, variable in self.headers_env:
            value = environ.get(variable, "")
            if not value:
                raise ValueError(f"{header}: environment variable {variable} is not set")
            if _breaks_line(value):
                raise ValueError(
                    f"{header}: environment variable {variable} holds a line break (CR or LF),"
                    " which no header value may hold"
                )
            found.append((header, Secret(value, env=variable)))
        return replace(self, secret_headers=tuple(found))

    def problem(self) -> tuple[str, str] | None:
        """A header name or value, or the token, that cannot be sent (a line break in it
        would end the header: an error, or a second header made up by the value)."""
        for name, value in self.headers:
            if not _HEADER_NAME.fullmatch(name):
                return "headers", f"{name[:40]!r} is not a header name"
            if _breaks_line(value):
                return "headers", f"{name}: the value holds a line break (CR or LF)"
        for name, _ in self.headers_env:
            if not _HEADER_NAME.fullmatch(name):
                return "headers_env", f"{name[:40]!r} is not a header name"
        if self.token is not None and _breaks_line(self.token.reveal()):
            return "token", "holds a line break (CR or LF) inside it"
        return None

    @property
    def preset_of(self) -> Preset:
        """The preset with every key written here in its place."""
        preset = PRESETS[self.preset]
        return Preset(
            self.method or preset.method,
            self.body if self.body is not None else preset.body,
            self.params or preset.params,
            self.ids or preset.ids,
            self.scores if self.scores is not None else preset.scores,
            self.fields if self.fields is not None else preset.fields,
        )


def as_cron(value: Any) -> str:
    """A crontab expression of five fields (`*/10 * * * *`)."""
    text = as_str(value).strip()
    try:
        CronTrigger.from_crontab(text, timezone="UTC")
    except ValueError as error:
        raise ValueError(f"{text!r} is not a crontab expression: {error}") from None
    return text


def as_timezone(value: Any) -> str:
    """An IANA time zone name (`UTC`, `Europe/Paris`)."""
    text = as_str(value)
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{text!r} is not an IANA time zone (e.g. UTC, Europe/Paris)") from None
    return text


@dataclass(frozen=True)
class ReplaySchedule:
    """`replay.schedule`: when replays start (`rankmon replay --once` ignores it)."""

    interval: Duration | None = setting(
        None, read=as_positive_duration, doc="a replay every interval (or cron, not both)"
    )
    cron: str | None = setting(None, read=as_cron, doc="a crontab expression (or interval)")
    timezone: str = setting("UTC", read=as_timezone, doc="the cron expression's time zone")
    misfire_grace: Duration = setting(
        parse_duration("1m"),
        read=as_positive_duration,
        doc="a replay that could not start on time still starts within this",
    )
    run_at_start: bool = setting(
        False,
        read=as_bool,
        doc="one replay at once when the replayer starts (a restart then replays off schedule)",
    )

    def problem(self) -> tuple[str, str] | None:
        if self.interval is not None and self.cron is not None:
            return "cron", "set interval or cron, not both"
        return None


@dataclass(frozen=True)
class ArchiveSettings:
    """`replay.archive`: where each replay's run file is kept, and how many
    (`monitor.replay.archive`)."""

    directory: Path | None = setting(
        None, read=as_path, path="path", doc="keep each replay's run file here (null: none)"
    )
    keep: int = setting(100, read=as_int(1, 1_000_000), doc="run files kept, the newest")


@dataclass(frozen=True)
class ReplayConfig:
    """The `replay:` section."""

    topics: Path = setting(
        read=as_path, path="file", doc="the query texts: TSV, JSON lines or TREC topics"
    )
    depth: int = setting(100, read=as_int(1, 10_000), doc="documents asked for per query")
    ranker: RankerSettings = subsection(RankerSettings, doc="the ranker's HTTP API")
    segment: tuple[tuple[str, str], ...] = setting(
        (), read=as_str_map, write=dict, doc="segment labels every event carries"
    )
    segment_from: tuple[tuple[str, str], ...] = setting(
        (),
        read=as_str_map,
        write=dict,
        doc="labels read from the answer: header:NAME or field:PATH",
    )
    schedule: ReplaySchedule = subsection(ReplaySchedule, doc="when replays start")
    archive: ArchiveSettings = subsection(ArchiveSettings, doc="each replay's run file, kept")
    metrics_port: int = setting(
        0, read=as_int(0, 65535), doc="the replayer's own /metrics while scheduled (0: off)"
    )
    compression: str = setting(
        "lz4",
        read=as_choice("lz4", "gzip", "zstd", "snappy", "none"),
        doc="how the replay's records are compressed on the topic (lz4: a fifth of gzip's CPU)",
    )

    def problem(self) -> tuple[str, str] | None:
        for label, source in self.segment_from:
            kind, _, name = source.partition(":")
            if kind not in ("header", "field") or not name:
                return (
                    "segment_from",
                    f"{label}: expected header:NAME or field:PATH, got {source!r}",
                )
        shared = {label for label, _ in self.segment} & {label for label, _ in self.segment_from}
        if shared:
            return "segment_from", f"{sorted(shared)} also set in segment"
        return None
