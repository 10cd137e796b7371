"""Drives a sanitizer build of monitor._speedups with damaged events (run by
tests/real_parts/test_speedups_sanitized.py in a subprocess, with libasan preloaded).

argv: the .so built with -fsanitize=address,undefined, a seed, a number of rounds.
Prints "ok <accepted> <punted> <records read> <batches found corrupt>" at the end; any memory
error aborts the process first.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import random
import sys
import tempfile

import numpy as np
import orjson


def load(path: str):  # type: ignore[no-untyped-def]
    loader = importlib.machinery.ExtensionFileLoader("monitor._speedups", path)
    spec = importlib.util.spec_from_file_location("monitor._speedups", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def damaged(value: bytes, rng: random.Random) -> bytes | None:
    if rng.random() < 0.02:
        return None
    data = bytearray(value)
    for _ in range(rng.randrange(0, 4)):
        at = rng.randrange(len(data) + 1)
        edit = rng.randrange(3)
        if edit == 0 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif edit == 1 and data:
            del data[min(at, len(data) - 1)]
        else:
            data[at:at] = bytes([rng.choice(b'"{}[],:0123456789\\ae\x00\xff')])
    return bytes(data)


class Record(tuple):  # type: ignore[type-arg]
    """Stands in for SourceRecord: parse_records fills any tuple subclass."""


def varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)  # zigzag
    out = bytearray()
    while True:
        out.append((raw & 0x7F) | (0x80 if raw > 0x7F else 0))
        raw >>= 7
        if not raw:
            return bytes(out)


INT64_MAX = 2**63 - 1
EXTREMES = (INT64_MAX, -(2**63), INT64_MAX - 1, -(2**62), 2**62)


def kafka_record(rng: random.Random, delta: int, time_delta: int) -> bytes:
    """One Kafka v2 record (as in a record batch), sometimes with headers."""
    key = rng.choice((None, b"", b"q17"))
    value = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60)))
    body = b"\x00" + varint(time_delta) + varint(delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(len(value)) + value
    headers = rng.randrange(3)
    body += varint(headers)
    for _ in range(headers):
        name = b"h\xc3" if rng.random() < 0.02 else b"trace"  # the first is not UTF-8
        body += varint(len(name)) + name + rng.choice((varint(-1), varint(1) + b"v"))
    return varint(len(body)) + body


def main() -> None:
    speedups = load(sys.argv[1])
    rng = random.Random(int(sys.argv[2]))
    rounds = int(sys.argv[3])
    queries = [f"q{i}" for i in range(50)]
    judged = [{f"d{j}": rng.randint(1, 5) for j in range(rng.randrange(0, 30))} for _ in queries]
    index = speedups.JudgmentIndex(queries, judged)
    events = [
        orjson.dumps(
            {
                "event_id": f"e{n}",
                "query_id": f"q{rng.randrange(60)}",
                "ranking": [f"d{rng.randrange(200)}" for _ in range(rng.randrange(1, 40))],
                "event_time": rng.randrange(0, 10**13),
                "segment": {"model": rng.choice("ab"), "x": "y"},
                "judgments": (
                    {f"d{rng.randrange(200)}": rng.randrange(0, 8) for _ in range(n % 9)}
                    if n % 3 == 0
                    else None
                ),
                "extra": [1, {"a": None}, "z"],
            }
        )
        for n in range(300)
    ]
    accepted = punted = records = corrupt = 0
    for _ in range(rounds):
        count = rng.randrange(0, 30)
        # Crafted batches too: deltas and bases at the int64 limits, whose sums overflow int64
        # (kafka-python's Python ints just grow; C must give the same numbers, without UB).
        crafted = rng.random() < 0.3
        deltas = [
            (
                rng.choice(EXTREMES) if crafted else n,
                rng.choice(EXTREMES) if crafted else rng.randrange(-5, 10**6),
            )
            for n in range(count)
        ]
        batch = bytearray(b"".join(kafka_record(rng, d, t) for d, t in deltas))
        intact = rng.random() < 0.5
        for _ in range(0 if intact else rng.randrange(0, 3)):
            if batch:
                batch[rng.randrange(len(batch))] = rng.randrange(256)
        cut = len(batch) if intact or rng.random() >= 0.2 else rng.randrange(len(batch) + 1)
        base = rng.choice(EXTREMES) if crafted else rng.randrange(0, 10**12)
        first = rng.choice(EXTREMES) if crafted else rng.randrange(0, 10**13)
        read, error = speedups.parse_records(
            bytes(batch[:cut]),
            0,
            count if intact else count + rng.randrange(-1, 2),
            base,
            first,
            10**13,
            False if intact else rng.random() < 0.1,
            "events",
            rng.randrange(8),
            Record,
        )
        if intact:  # every record read up to a non-UTF-8 header key, the one corruption left
            assert error in (None, "header key is not UTF-8"), error
            assert error is not None or len(read) == count, (len(read), count)
            want = [(base + d, first + t) for d, t in deltas][: len(read)]
            assert [(r[2], r[3]) for r in read] == want, "offsets or timestamps not exact"
        records += len(read)
        corrupt += error is not None
        values = [damaged(v, rng) for v in rng.sample(events, 50)]
        depth = rng.choice((-1, 0, 5, 20))
        grade_codes = bytes(rng.randrange(0, 7) for _ in range(rng.randrange(0, 9)))
        status, _, _, rows, _, _, codes, lengths, added, added_counts = speedups.decode_events(
            index,
            values,
            [rng.randrange(-5, 10**13) for _ in values],
            10**13,
            rng.randrange(1, 60),
            10**6,
            300_000,
            ("model", "x", "absent"),
            rng.random() < 0.8,
            depth,
            grade_codes if rng.random() < 0.5 else None,
        )
        assert len(added) == sum(added_counts), (len(added), sum(added_counts))
        accepted += status.count(0)
        punted += status.count(1)
        taken = np.array([n if depth < 0 else min(n, depth) for n in lengths], dtype=np.int64)
        out = np.empty((len(rows), 3), dtype=np.float64)
        speedups.measure_codes(
            codes,
            taken,
            np.array(lengths, dtype=np.int64),
            np.array(rows, dtype=np.int64),
            np.array([0, 2, 6], dtype=np.int32),
            np.zeros(3, dtype=np.int32),
            np.array([10, 5, -1], dtype=np.int64),
            np.zeros(3, dtype=np.int32),
            np.linspace(0, 1, 256),
            np.arange(256, dtype=np.uint8) % 2,
            np.ones(256, dtype=np.uint8),
            np.log2(np.arange(2, int(taken.max(initial=0)) + 2, dtype=np.float64)),
            np.ones((len(queries), 1)),
            1,
            np.full(len(queries), 3, dtype=np.int64),
            0.0,
            out,
        )
        speedups.JudgmentIndex(queries, judged).codes(
            rows[:10], [["d1", "d2", "\ud800"]] * min(10, len(rows)), depth
        )
        extras = [
            rng.choice((None, {}, {"d1": 2, "d9": None}, {"\ud800": 1, "d3": 3}, {"d4": 9}))
            for _ in rows[:10]
        ]
        # Run files, damaged, read whole and in chunks of every size (the run coder's carry).
        run = b"".join(
            b"q%d Q0 d%d %d %d.%d t\n" % (rng.randrange(60), rng.randrange(50), r, 50 - r, r)
            for r in range(rng.randrange(0, 40))
        )
        run = damaged(run, rng) or b""
        cut, lookup = rng.choice((-1, 0, 3)), rng.choice((-1, 0, 5))
        whole = speedups.code_run(index, run, rng.random() < 0.5, cut, lookup)
        coder = speedups.run_coder(index, False, cut, lookup)
        step = rng.randrange(1, 50)
        for at in range(0, len(run), step):
            if not coder.feed(run[at : at + step]):
                break
        streamed = coder.finish()
        assert whole is None or streamed is None or len(streamed[3]) == len(whole[3])
        # The same file read by the coder itself, `step` bytes a read, by one thread or two.
        with tempfile.TemporaryFile() as file:
            file.write(run)
            file.seek(0)
            reader = speedups.run_coder(index, False, cut, lookup)
            reader.read(file.fileno(), step, rng.choice((1, 2)))
            assert reader.finish() == streamed
        # Qrels files, damaged, read straight into an index; its dicts and ideal codes.
        qrels = b"".join(
            b"q%d 0 d%d %d\n" % (rng.randrange(30), rng.randrange(40), rng.randrange(-2, 300))
            for _ in range(rng.randrange(0, 60))
        )
        read = speedups.JudgmentIndex.from_qrels(damaged(qrels, rng) or b"")
        if read is not None:
            assert len(read.judgments()) == len(read.query_ids) == len(read)
            if read.code_grades is not None:
                offset_bytes, ideal_bytes = read.ideal_codes()
                read_offsets = np.frombuffer(offset_bytes, dtype=np.int64)
                longest = int(np.diff(read_offsets).max(initial=0))
                speedups.ideal_rows(
                    read_offsets,
                    np.frombuffer(ideal_bytes, dtype=np.uint8),
                    np.arange(len(read), dtype=np.int64),
                    b"",
                    np.zeros(len(read), dtype=np.int64),
                    np.array([0], dtype=np.int32),
                    np.array([5], dtype=np.int64),
                    np.linspace(0, 1, 256)[None, :],
                    np.arange(256, dtype=np.uint8)[::-1].reshape(1, 256).copy(),
                    256,
                    np.arange(256, dtype=np.uint8) % 2,
                    np.log2(np.arange(2, longest + 2, dtype=np.float64)),
                    np.empty(0),
                    np.empty(0, dtype=np.int64),
                    np.empty((len(read), 1)),
                    np.empty(len(read), dtype=np.int64),
                )
        inline = index.inline_codes(
            rows[:10], [["d1", "d4", "\ud800", "d3"]] * len(extras), depth, extras, grade_codes
        )
        if inline is not None:
            _, _, new, new_counts = inline
            offsets = np.zeros(len(queries) + 1, dtype=np.int64)
            ideal_codes = np.zeros(0, dtype=np.uint8)
            ideal = np.empty((len(new_counts), 2), dtype=np.float64)
            num_rel = np.empty(len(new_counts), dtype=np.int64)
            order = np.tile(np.arange(256, dtype=np.uint8)[::-1], (2, 1))
            speedups.ideal_rows(
                offsets,
                ideal_codes,
                np.array(rows[:10], dtype=np.int64),
                new,
                np.array(new_counts, dtype=np.int64),
                np.array([0, 1], dtype=np.int32),
                np.array([5, -1], dtype=np.int64),
                np.tile(np.linspace(0, 1, 256), (2, 1)),
                order,
                256,
                np.arange(256, dtype=np.uint8) % 2,
                np.log2(np.arange(2, 64, dtype=np.float64)),
                np.ones((len(queries), 2)),
                np.full(len(queries), 3, dtype=np.int64),
                ideal,
                num_rel,
            )
    print("ok", accepted, punted, records, corrupt)


if __name__ == "__main__":
    main()
