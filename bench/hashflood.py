"""Hash flooding the C duplicate-document check: ordinary vs crafted doc ids, per event.

    .venv/bin/python bench/hashflood.py [--docs 1000] [--events 300]

Each event ranks `--docs` doc ids; the C scanner checks them for duplicates in a table keyed
by a 64-bit hash (`monitor/scoring/judgments.h`). Ids crafted so that their hashes share the
low bits the table indexes by put every id in one probe chain: the check becomes quadratic.
The hash is keyed with a random seed per process, so an attacker crafts against a key he
does not know. Three streams, timed through `decode_events` (the scan of a poll's values):

- ordinary:  `doc-<n>` ids;
- crafted, unknown key: ids crafted to collide under the fixed key of the hash before it was
  keyed (what an attacker can compute offline); the process runs with its own random key;
- crafted, known key: ids crafted against the key the process is given (`set_hash_seed`),
  as if the key had leaked: the probe bound sends those events to the reference decoder.

Prints microseconds per event for each and the ratio to ordinary. Target: crafted (unknown
key) at most 2x ordinary.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

from monitor import _speedups
from monitor.ingest.events import EventDecoder
from monitor.native import DecodedEvents, judgment_index, speedups

MASK64 = (1 << 64) - 1
OLD_KEY = (0x9E3779B97F4A7C15, 0)  # the hash's fixed start before it was keyed


def rm_hash(data: bytes, key: tuple[int, int]) -> int:
    """`rm_hash` of judgments.h, in Python (to craft ids offline, as an attacker would)."""
    n = len(data)
    h = key[0] ^ ((n * 0xC2B2AE3D27D4EB4F) & MASK64)
    p = 0
    while n - p >= 8:
        w = int.from_bytes(data[p : p + 8], "little")
        h = ((h ^ w) * 0xFF51AFD7ED558CCD) & MASK64
        h ^= h >> 29
        p += 8
    rest = n - p
    if rest:
        tail = data[p:]
        if rest >= 4:
            lo = int.from_bytes(tail[:4], "little")
            hi = int.from_bytes(tail[rest - 4 : rest], "little")
            w = (hi << 32) | lo
        else:
            w = tail[0] | (tail[rest // 2] << 8) | (tail[rest - 1] << 16)
        h = ((h ^ w) * 0xFF51AFD7ED558CCD) & MASK64
    h ^= key[1]
    h ^= h >> 32
    h = (h * 0xC4CEB9FE1A85EC53) & MASK64
    h ^= h >> 29
    return h


def crafted_ids(count: int, key: tuple[int, int], slots: int) -> list[str]:
    """`count` distinct ids whose hashes under `key` share their low bits (one probe chain)."""
    ids: list[str] = []
    candidate = 0
    while len(ids) < count:
        doc = f"x{candidate:08d}"
        if rm_hash(doc.encode(), key) & (slots - 1) == 0:
            ids.append(doc)
        candidate += 1
    return ids


def events(ids: list[str], count: int) -> list[bytes]:
    return [
        orjson.dumps(
            {"event_id": f"e{n}", "query_id": "q1", "ranking": ids, "event_time": 1_000 + n}
        )
        for n in range(count)
    ]


def scan_statuses(index: Any, values: list[bytes], now_ms: int) -> Sequence[int]:
    """The C scan of a poll's values, as the intake calls it; one status per value."""
    decoded = DecodedEvents(
        *speedups.decode_events(
            index,
            values,
            [now_ms] * len(values),
            now_ms=now_ms,
            max_depth=10_000,
            max_bytes=10**8,
            max_future_ms=0,
            segment_keys=(),
            use_event_time=True,
            depth=-1,
            grade_codes=None,
        )
    )
    statuses: Sequence[int] = decoded.status
    return statuses


def per_event_us(values: list[bytes], rounds: int = 5) -> float:
    """The scan of a poll in C, and the reference decoder on what the scan punted, as the
    intake does it."""
    index = judgment_index(["q1"], [{"doc-1": 1}])
    assert index is not None
    reference = EventDecoder(max_depth=10_000, max_bytes=10**8, max_future_ms=10**13)
    best = []
    for _ in range(rounds):
        started = time.perf_counter()
        statuses = scan_statuses(index, values, 0)
        for value, status in zip(values, statuses, strict=True):
            if status == speedups.SCAN_PUNTED:
                reference(value, 0, 10**13)
        best.append((time.perf_counter() - started) / len(values) * 1e6)
    return statistics.median(best)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1000, help="doc ids per event")
    parser.add_argument("--events", type=int, default=300)
    args = parser.parse_args()
    slots = 4
    while slots < 2 * args.docs:
        slots <<= 1
    print(f"crafting {args.docs} ids per stream (probe table of {slots} slots)...", flush=True)
    ordinary = [f"doc-{n}" for n in range(args.docs)]
    unknown = crafted_ids(args.docs, OLD_KEY, slots)
    leaked_key = (int.from_bytes(b"leaked-key-half1", "little") & MASK64, 42)
    known = crafted_ids(args.docs, leaked_key, slots)

    _speedups.set_hash_seed(os.urandom(16))  # the process's own key, as at every start
    base = per_event_us(events(ordinary, args.events))
    unknown_us = per_event_us(events(unknown, args.events))
    seed = leaked_key[0].to_bytes(8, "little") + leaked_key[1].to_bytes(8, "little")
    _speedups.set_hash_seed(seed)  # the key the "known" ids were crafted against
    known_us = per_event_us(events(known, args.events))
    print(f"{'stream':>24} {'us/event':>9} {'x ordinary':>11}")
    for name, value in (
        ("ordinary", base),
        ("crafted, unknown key", unknown_us),
        ("crafted, known key", known_us),
    ):
        print(f"{name:>24} {value:9.1f} {value / base:11.2f}")
    met = unknown_us <= 2 * base
    print(f"crafted ids (unknown key) within 2x of ordinary: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
