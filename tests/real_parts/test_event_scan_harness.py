"""The C event scanner (monitor/ingest/event_scan.c) against its harness and events.py.

The scanner may punt on anything; what it accepts must decode in `decode_event` to exactly
the fields it reported. These tests compile tests/native/test_event_scan.c with gcc under
ASan/UBSan, run its own table and mutation fuzz, then feed it thousands of generated events
through its `cli` mode and compare each accepted one with the Python reference.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from monitor.ingest.events import RankingEvent, Rejection, decode_event
from monitor.ingest.schema import Reason

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "monitor" / "ingest"
HARNESS = ROOT / "tests" / "native" / "test_event_scan.c"
FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-O1"]
MAX_DOCS = 8
NOW_MS = 10**18  # far enough ahead that no event is "too far in the future"
RECORD_MS = 1_700_000_000_000
SAFE_CHARS = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in '"\\')


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The harness binary, built with sanitizers (skipped without gcc, unless on CI)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        if os.environ.get("CI"):
            pytest.fail("gcc is missing on CI: the event scanner harness must run there")
        pytest.skip("gcc is not installed")
    binary = tmp_path_factory.mktemp("event_scan") / "test_event_scan"
    source = [str(HARNESS), str(NATIVE / "event_scan.c")]
    build = [gcc, *FLAGS, *SANITIZE, f"-I{NATIVE}", "-o", str(binary), *source]
    compiled = subprocess.run(build, check=False, capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    return binary


def test_the_event_scanner_harness_passes_under_sanitizers(harness: Path) -> None:
    env = {**os.environ, "EVENT_SCAN_FUZZ_SECONDS": "2"}
    run = subprocess.run(
        [harness], check=False, capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 failures" in run.stdout


def test_the_harness_bench_mode_reports_nanoseconds_per_event(harness: Path) -> None:
    run = subprocess.run(
        [harness, "bench", "2000"], check=False, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert "100-doc event:" in run.stdout
    assert "ns/event" in run.stdout


# ---- generated events ----


def _text(rng: random.Random, low: int = 1, high: int = 12) -> str:
    return "".join(rng.choice(SAFE_CHARS) for _ in range(rng.randint(low, high)))


def _rfc3339(rng: random.Random) -> str:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
        seconds=rng.randint(0, 4_200_000_000), microseconds=rng.randint(0, 999_999)
    )
    if rng.random() < 0.1:  # near the epoch, where an offset can push it before 1970
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 90_000))
    minutes = rng.choice([0, 0, 330, -480, -60, 345, rng.randint(-1439, 1439)])
    local = moment.astimezone(UTC).replace(tzinfo=None) + timedelta(minutes=minutes)
    if not 1 <= local.year <= 9999:
        local = moment.replace(tzinfo=None)
        minutes = 0
    separator = rng.choice("TtT ")
    text = local.strftime(f"%Y-%m-%d{separator}%H:%M:%S")
    fraction = rng.choice(["", ".ms", ".us"])
    if fraction == ".ms":
        text += f".{local.microsecond // 1000:03d}"
    elif fraction == ".us":
        text += f".{local.microsecond:06d}"
    if minutes == 0 and rng.random() < 0.6:
        return text + rng.choice("Zz")
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{text}{sign}{hours:02d}:{mins:02d}"


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.randint(-(10**9), 10**9)
    if kind == 1:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 3))
    if kind == 2:
        return _text(rng, 0, 8)
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return None
    if kind == 5:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_text(rng, 0, 6): _json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def simple_event(rng: random.Random) -> dict[str, Any]:
    """A valid event of varied shape: ASCII ids, int or RFC 3339 times, no escapes."""
    docs = list(dict.fromkeys(_text(rng, 1, 10) for _ in range(rng.randint(1, MAX_DOCS))))
    fields: dict[str, Any] = {
        "event_id": _text(rng),
        "query_id": _text(rng),
        "ranking": docs,
    }
    time_kind = rng.randrange(4)
    if time_kind == 1:
        fields["event_time"] = rng.choice([0, rng.randint(0, 10**13), rng.randint(0, 10**15 - 1)])
    elif time_kind == 2:
        fields["event_time"] = _rfc3339(rng)
    elif time_kind == 3:
        fields["event_time"] = None
    if rng.random() < 0.5:
        grades = {rng.choice([*docs, _text(rng)]): rng.randint(0, 1000) for _ in range(3)}
        fields["judgments"] = rng.choice([grades, grades, {}, None])
    if rng.random() < 0.5:
        pairs = {_text(rng, 0, 6): _text(rng, 0, 6) for _ in range(rng.randint(0, 5))}
        fields["segment"] = rng.choice([pairs, pairs, None])
    if rng.random() < 0.5:
        fields["schema_version"] = 1
    for _ in range(rng.randrange(3)):
        fields["x_" + _text(rng, 1, 5)] = _json_value(rng)
    items = list(fields.items())
    rng.shuffle(items)
    return dict(items)


def encode(rng: random.Random, fields: dict[str, Any]) -> bytes:
    """The event as JSON, compact or with JSON whitespace between the tokens."""
    if rng.random() < 0.7:
        return orjson.dumps(fields)
    spaced = orjson.dumps(fields, option=orjson.OPT_INDENT_2)
    return rng.choice([b"", b" ", b"\n\t "]) + spaced + rng.choice([b"", b"\r\n", b"  "])


BAD_VALUES: dict[str, list[Any]] = {
    "event_id": [None, "", 1, ["e"], {"e": 1}, True, "caf\u00e9", 'quo"te'],
    "query_id": [None, "", 2.5, [], "tab\there"],
    "ranking": [None, [], "d1", [1], ["a", ""], ["a", None], ["a", "a"], ["d"] * 9, {"a": "b"}],
    "event_time": [
        -1,
        1.5,
        True,
        10**16,
        "2023-02-29T00:00:00Z",
        "2024-02-29T00:00:00Z",
        "2100-02-29T00:00:00Z",
        "2024-01-01T24:00:00Z",
        "2024-01-01T00:00:60Z",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:00.1Z",
        "2024-01-01T00:00:00.12345Z",
        "2024-01-01T00:00:00.123456789Z",
        "2024-01-01T00:00:00+24:00",
        "2024-01-01T00:00:00+0530",
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:30:00+01:00",
        "1970-01-01T00:00:00.999-00:00",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999-23:59",
        "1700000000000",
        [],
    ],
    "judgments": [[], "a", 0, {"a": 1001}, {"a": -1}, {"a": 1.0}, {"a": True}, {"a": "1"}],
    "segment": [[], "s", {"a": 1}, {"a": None}, {str(i): "v" for i in range(17)}],
    "schema_version": [None, 2, 0, 1.0, True, "1", -1],
}

RAW_CASES: list[bytes] = [
    b"",
    b"null",
    b"[]",
    b"{}",
    b'{"event_id":"e","query_id":"q","ranking":["d"]}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"event_id":"f"}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"x":1,"x":2}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"segment":{"a":"1","a":"2"}}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"judgments":{"a":1,"a":2}}',
    b'{"event_id":"e\\u0041","query_id":"q","ranking":["d"]}',
    b'{"event_id":"e\x7f","query_id":"q","ranking":["d\x7f"]}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"x":-0,"y":-0.0,"z":0.5}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"x":123456789012345}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"x":1234567890123456}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"x":1e5}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"schema_version":01}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"event_time":-0}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"event_time":0}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],"x":' + b"[" * 31 + b"]" * 31 + b"}",
    b'{"event_id":"e","query_id":"q","ranking":["d"],"x":' + b"[" * 32 + b"]" * 32 + b"}",
    b'{"event_id":"e","query_id":"q","ranking":["d"]} {}',
    b'{"event_id":"e","query_id":"q","ranking":["d"],}',
    b'\xef\xbb\xbf{"event_id":"e","query_id":"q","ranking":["d"]}',
    b'{"event_id":"e","query_id":"q","ranking":["d\xc3\xa9"]}',
    b'{"event_id":"e","query_id":"q","ranking":["d\xff"]}',
]

MUTATION_BYTES = b'"\\{}[],:01-.eEtn \t\x00\x1f\x7f\x80\xc3\xff'


def mutate(rng: random.Random, value: bytes) -> bytes:
    """A few random byte edits: replace, delete or insert a JSON-significant byte."""
    data = bytearray(value)
    for _ in range(rng.randint(1, 3)):
        if not data:
            break
        at = rng.randrange(len(data))
        byte = rng.choice(MUTATION_BYTES)
        action = rng.randrange(4)
        if action == 0:
            data[at] = byte
        elif action == 1:
            del data[at]
        elif action == 2:
            data.insert(at, byte)
        elif data[at] in b"0123456789":
            data[at] = rng.choice(b"0123456789")
    return bytes(data)


@dataclass(frozen=True)
class Case:
    """One record, whether it is a generated valid simple event, and the scanner's answer."""

    value: bytes
    simple: bool
    scan: dict[str, Any]


def generate(rng: random.Random, count: int) -> list[tuple[bytes, bool]]:
    records: list[tuple[bytes, bool]] = [(raw, False) for raw in RAW_CASES]
    for _ in range(count):
        fields = simple_event(rng)
        value = encode(rng, fields)
        roll = rng.random()
        if roll < 0.5:
            records.append((value, True))
        elif roll < 0.8:
            records.append((mutate(rng, value), False))
        else:
            field = rng.choice(sorted(BAD_VALUES))
            if rng.random() < 0.2:
                fields.pop(field, None)
            else:
                fields[field] = rng.choice(BAD_VALUES[field])
            records.append((encode(rng, fields), False))
    return records


def scan_all(harness: Path, values: list[bytes]) -> list[dict[str, Any]]:
    """Each value's scan result from the harness's cli mode (one hex record a line)."""
    stdin = "".join(value.hex() + "\n" for value in values)
    run = subprocess.run(
        [harness, "cli", str(MAX_DOCS)],
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == len(values)
    return [orjson.loads(line) for line in lines]


@pytest.fixture(scope="module")
def cases(harness: Path) -> list[Case]:
    records = generate(random.Random(20261130), 4000)
    scans = scan_all(harness, [value for value, _ in records])
    return [Case(value, simple, scan) for (value, simple), scan in zip(records, scans, strict=True)]


def _decode(value: bytes) -> RankingEvent | Rejection:
    return decode_event(value, RECORD_MS, now_ms=NOW_MS, max_depth=MAX_DOCS)


def _string(value: bytes, span: list[int]) -> str:
    offset, length = span
    return value[offset : offset + length].decode("ascii")


def _check_accepted(case: Case) -> None:
    scan, value = case.scan, case.value
    result = _decode(value)
    ranking = tuple(_string(value, span) for span in scan["ranking"])
    if len(set(ranking)) != len(ranking):  # the caller's check, not the scanner's
        assert isinstance(result, Rejection), value
        assert result.reason is Reason.DUPLICATE_DOC, value
        return
    assert isinstance(result, RankingEvent), (value, result)
    assert result.event_id == _string(value, scan["event_id"])
    assert result.query_id == _string(value, scan["query_id"])
    assert result.ranking == ranking
    expected_ms = scan["event_time_ms"] if scan["has_event_time"] else RECORD_MS
    assert result.event_time_ms == expected_ms, value
    segment = [(_string(value, k), _string(value, v)) for k, v in scan["segment"]]
    assert list(result.segment.items()) == segment, value
    assert (result.judgments is not None) == bool(scan["has_judgments"]), value


def test_every_event_the_scanner_accepts_decodes_to_the_same_fields_in_python(
    cases: list[Case],
) -> None:
    accepted = [case for case in cases if case.scan["ok"]]
    for case in accepted:
        _check_accepted(case)
    # The corpus really exercises both sides: many accepted, many mutated ones accepted too.
    assert len(accepted) > 2000
    assert sum(1 for case in accepted if not case.simple) > 100


def test_the_scanner_punts_on_every_record_python_rejects(cases: list[Case]) -> None:
    rejected = [
        (case, result) for case in cases if isinstance(result := _decode(case.value), Rejection)
    ]
    assert len(rejected) > 500
    # Duplicate doc ids are the one rejection the caller owes after an OK.
    wrongly_accepted = [
        case.value
        for case, result in rejected
        if case.scan["ok"] and result.reason is not Reason.DUPLICATE_DOC
    ]
    assert wrongly_accepted == []


def test_the_scanner_takes_the_fast_path_for_almost_all_simple_valid_events(
    cases: list[Case],
) -> None:
    simple = [case for case in cases if case.simple]
    valid = [case for case in simple if isinstance(_decode(case.value), RankingEvent)]
    assert len(valid) > 1500
    taken = sum(1 for case in valid if case.scan["ok"])
    assert taken / len(valid) >= 0.95, f"fast path for {taken} of {len(valid)}"
