"""The event schema has one definition (`monitor.ingest.schema`); the other places agree.

The C scanner knows the field names and limits as literals and defines (it cannot import
Python), the README documents the fields and reasons for producers, and the decoder names
every rejection: each is read here against the schema module, so a field or limit changed
in one place and not the others fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from monitor.ingest import events
from monitor.ingest.schema import (
    EVENT_FIELDS,
    EVENT_SCHEMA_VERSION,
    MAX_GRADE,
    MIN_EPOCH_MS,
    REQUIRED_FIELDS,
    Reason,
    json_schema,
)

ROOT = Path(__file__).resolve().parents[2]
SCANNER = (ROOT / "monitor" / "ingest" / "event_scan.c").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def c_define(name: str) -> int:
    match = re.search(rf"#define {name} (\d+)", SCANNER)
    assert match, f"{name} is not defined in event_scan.c"
    return int(match[1])


def test_the_c_scanner_knows_exactly_the_schemas_fields() -> None:
    assert set(re.findall(r'KEY_IS\("(\w+)"\)', SCANNER)) == set(EVENT_FIELDS)


def test_the_c_scanner_uses_the_schemas_limits() -> None:
    assert c_define("RM_MIN_EPOCH_MS") == MIN_EPOCH_MS
    assert c_define("RM_MAX_GRADE") == MAX_GRADE
    assert c_define("RM_SCHEMA_VERSION") == EVENT_SCHEMA_VERSION
    assert EVENT_SCHEMA_VERSION < 10  # the scanner compares one digit


def test_the_readme_documents_every_field_and_every_reason() -> None:
    section = README.split("## The ranking event", 1)[1].split("\n## ", 1)[0]
    assert f"(schema version {EVENT_SCHEMA_VERSION})" in README
    assert [name for name in EVENT_FIELDS if f'"{name}"' not in section] == []
    assert [r.value for r in Reason if f"`{r.value}`" not in section] == []
    *first, last = (f"`{name}`" for name in REQUIRED_FIELDS)
    sentence = section.split(f"{', '.join(first)} and {last}", 1)[1].split(". ", 1)[0]
    assert "are required" in sentence


def test_the_decoder_refuses_a_record_without_each_required_field() -> None:
    whole = {"event_id": "e", "query_id": "q", "ranking": ["d"]}
    assert set(whole) == set(REQUIRED_FIELDS)
    for name in REQUIRED_FIELDS:
        value = {key: item for key, item in whole.items() if key != name}
        result = events.decode_event(repr(value).replace("'", '"').encode(), 0, now_ms=0)
        assert isinstance(result, events.Rejection) and result.reason is Reason.MISSING_FIELD


EVENT_SCHEMA = ROOT / "docs" / "event.schema.json"
NOW_MS = 1_800_000_000_000
GOOD = {"event_id": "e1", "query_id": "q1", "ranking": ["d1", "d2"]}
AGREEMENT = [
    GOOD,
    {**GOOD, "event_time": "2026-12-02T10:00:00.250+01:00", "schema_version": 1},
    {**GOOD, "event_time": 1_764_669_600_000, "judgments": {"d1": 3, "d9": 0}},
    {**GOOD, "segment": {"model": "v2", "market": "de"}},
    {**GOOD, "unknown_field": [1, 2]},
    {"query_id": "q1", "ranking": ["d1"]},
    {**GOOD, "event_id": ""},
    {**GOOD, "query_id": 7},
    {**GOOD, "ranking": []},
    {**GOOD, "ranking": ["d1", "d1"]},
    {**GOOD, "ranking": ["d1", 2]},
    {**GOOD, "ranking": ["d1", ""]},
    {**GOOD, "ranking": "d1"},
    {**GOOD, "event_time": 1_764_669_600},
    {**GOOD, "event_time": "2026-12-02 10:00"},
    {**GOOD, "judgments": {"d1": -1}},
    {**GOOD, "judgments": {"d1": MAX_GRADE + 1}},
    {**GOOD, "judgments": {"d1": True}},
    {**GOOD, "judgments": [1]},
    {**GOOD, "segment": {"model": 2}},
    {**GOOD, "schema_version": 2},
    {**GOOD, "event_id": "x" * 513},
    {**GOOD, "documents": {"d1": {"title": "T", "snippet": "S", "url": "u"}, "d9": {"x": 1}}},
    {**GOOD, "documents": {"d1": {"title": 5}}},
    {**GOOD, "documents": {"d1": "a text"}},
    {**GOOD, "documents": ["d1"]},
]
# What JSON Schema cannot say, and the schema's descriptions do: an integer written as a
# float (JSON Schema's integers include 1.5e12), a length in UTF-8 bytes (maxLength counts
# characters).
LOOSER = [
    {**GOOD, "event_time": 1.5e12},
    {**GOOD, "event_id": "\u00e9" * 300},
]


def test_the_published_json_schema_is_the_schema_modules() -> None:
    written = json.loads(EVENT_SCHEMA.read_text(encoding="utf-8"))
    assert written == json_schema(), (
        "docs/event.schema.json is stale: python -m monitor.ingest.schema > docs/event.schema.json"
    )
    jsonschema.Draft202012Validator.check_schema(written)


@pytest.mark.parametrize("event", AGREEMENT, ids=lambda event: json.dumps(event)[:60])
def test_the_json_schema_accepts_what_the_decoder_accepts_and_nothing_else(
    event: dict[str, Any],
) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(EVENT_SCHEMA.read_text()))
    decoded = events.decode_event(json.dumps(event).encode(), NOW_MS, now_ms=NOW_MS)
    accepted = not isinstance(decoded, events.Rejection)
    assert validator.is_valid(event) == accepted, decoded


@pytest.mark.parametrize("event", LOOSER, ids=lambda event: json.dumps(event)[:60])
def test_what_the_json_schema_cannot_say_it_says_in_words_and_the_decoder_refuses(
    event: dict[str, Any],
) -> None:
    schema = json.loads(EVENT_SCHEMA.read_text())
    assert jsonschema.Draft202012Validator(schema).is_valid(event)
    decoded = events.decode_event(json.dumps(event).encode(), NOW_MS, now_ms=NOW_MS)
    assert isinstance(decoded, events.Rejection)
    described = " ".join(field.get("description", "") for field in schema["properties"].values())
    assert "bytes of UTF-8" in described and "without a decimal point" in described
