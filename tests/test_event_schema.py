"""The event schema has one definition (`monitor.ingest.schema`); the other places agree.

The C scanner knows the field names and limits as literals and defines (it cannot import
Python), the README documents the fields and reasons for producers, and the decoder names
every rejection: each is read here against the schema module, so a field or limit changed
in one place and not the others fails.
"""

from __future__ import annotations

import re
from pathlib import Path

from monitor.ingest import events
from monitor.ingest.schema import (
    EVENT_FIELDS,
    EVENT_SCHEMA_VERSION,
    MAX_GRADE,
    MIN_EPOCH_MS,
    REQUIRED_FIELDS,
    Reason,
)

ROOT = Path(__file__).resolve().parent.parent
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
