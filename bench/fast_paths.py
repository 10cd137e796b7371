"""Do the C fast paths still earn their keep? The event scanner against msgspec, the measure
kernel against the numpy columns, on the stream benchmark's events.

    .venv/bin/python bench/fast_paths.py                  # 20,000 events, best of 5
    .venv/bin/python bench/fast_paths.py --events 5000    # a quick look
    .venv/bin/python bench/fast_paths.py --end-to-end 300000  # and the kernel through Kafka

Events as bench/stream.py makes them: 1000 evaluation-set queries with 20 judged documents
each, rankings of 100 documents, an integer event time, a model segment. Per event, in one
process, alternating (best of `--repeats`, CPU time):

Decoding a poll's record values into validated events with each ranking's grade codes
(what the scorer takes next):

1. `c-scanner`: `monitor._speedups.decode_events`, the C scanner and judgment lookup in one pass
   (what `Intake` runs);
2. `msgspec`: a typed `msgspec.json.Decoder` (strings non-empty, 1..max_depth documents,
   grades 0..MAX_GRADE checked by msgspec), the schema's remaining checks in Python
   (distinct documents, schema version, event time, future bound), then
   `JudgmentIndex.codes` for the grade codes: the shortest path msgspec allows;
3. `python`: `monitor.ingest.events.decode_event` (orjson and the reference checks), then the
   same `JudgmentIndex.codes`.

Scoring the coded rankings of every monitor key (nDCG@5/10/20 linear and exp,
precision/recall/judged@5/10/20, MRR, MAP):

4. `c-kernel`: `Scorer.score_coded`, the C measure kernel;
5. `numpy`: the numpy columns (`measure_matrix`) on the same codes.

Prints microseconds per event, the ratios, and each difference as a share of the whole
streaming cost per event (`--stream-us`, default 12.8: bench/stream.py's 78k events/s here),
which is what the keep-or-drop rule (within 10 % end to end) is about. The two sides agree
on every event (checked before timing).

`--end-to-end N` also measures the kernel's share directly: bench/stream.py's run (N events
on a Tansu topic through a `Monitor` to the published window), alternating rounds with the C
kernel and with the numpy columns put in its place, and prints both medians and their ratio.

What it said on 2026-12-01 (this machine, 20,000 events; 300,000 end to end, 3 rounds each):
the scanner 5.2 us per event, msgspec 26.4 (5.0x; it must build a Python str per document
id, which the scanner never does), the reference decoder 28.8: the scanner stays. The kernel
0.34 us per event, the numpy columns 2.45 (7.1x). End to end, 4 rounds each with the order
swapped every round: 31,398 against 31,311 events/s (+0.3 % time per event; two earlier
runs that always ran the kernel first gave +3.1 % and -9.4 %: the rounds vary by 10 %), so
inside the 10 %. The kernel stays all the same: without it the
streaming scoring step measured 6.1 us per ranking against its 5 us target (3.3 with it), and
`rankmon eval`'s batch engine fell from 300k to 207k rankings/s (bench/metrics.py, same day).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import msgspec
import numpy as np
import orjson
import stream  # bench/stream.py: the end-to-end run's events, topic, config and loop

from monitor.demo.broker import EmbeddedBroker
from monitor.ingest.events import RankingEvent, decode_event
from monitor.ingest.schema import EVENT_SCHEMA_VERSION, MAX_GRADE
from monitor.native import DecodedEvents, speedups, speedups_built
from monitor.scoring.catalog import monitor_keys
from monitor.scoring.columns import RankedCodes
from monitor.scoring.engines import measure_matrix
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.gain import EXP, LINEAR
from monitor.scoring.scorer import Scorer
from monitor.testing.timing import best_cpu

QUERIES = 1000
JUDGED = 20
DEPTH = 100
MAX_DEPTH = 1000
NOW_MS = 1_800_000_000_000
MAX_FUTURE_MS = 300_000

Coded = tuple[list[int], bytes, list[int]]  # rows, grade codes, ranking lengths
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Grade = Annotated[int, msgspec.Meta(ge=0, le=MAX_GRADE)]


class WireEvent(msgspec.Struct, forbid_unknown_fields=False):
    """The event schema as msgspec types can say it."""

    event_id: NonEmpty
    query_id: NonEmpty
    ranking: Annotated[list[NonEmpty], msgspec.Meta(min_length=1, max_length=MAX_DEPTH)]
    event_time: int | str | None = None
    judgments: dict[str, Grade] | None = None
    segment: dict[str, str] | None = None
    schema_version: int = EVENT_SCHEMA_VERSION


def make_events(n: int, seed: int) -> tuple[EvaluationSet, list[bytes]]:
    rng = random.Random(seed)
    judgments = {
        f"q{q}": {f"d{q}-{d}": rng.randint(0, 3) for d in range(JUDGED)} for q in range(QUERIES)
    }
    values = []
    for i in range(n):
        q = rng.randrange(QUERIES)
        ranking = [f"d{q}-{d}" for d in rng.sample(range(DEPTH * 2), DEPTH)]
        event = {
            "event_id": f"e{i:09d}",
            "query_id": f"q{q}",
            "ranking": ranking,
            "event_time": NOW_MS - rng.randrange(3_600_000),
            "segment": {"model": rng.choice(("v1", "v2"))},
        }
        values.append(orjson.dumps(event))
    return EvaluationSet(judgments, None), values


def msgspec_path(scorer: Scorer, values: Sequence[bytes], timestamps: Sequence[int]) -> Coded:
    """Decode with msgspec, finish the schema's checks, look the grades up in C."""
    decoder = msgspec.json.Decoder(WireEvent)
    index = scorer.judgment_index
    assert index is not None
    rows, rankings = [], []
    for value, timestamp in zip(values, timestamps, strict=True):
        try:
            event = decoder.decode(value)
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
        if event.schema_version != EVENT_SCHEMA_VERSION:
            continue
        if len(set(event.ranking)) != len(event.ranking):
            continue
        when = event.event_time
        if when is None:
            when = timestamp
        elif not isinstance(when, int):
            continue  # an RFC 3339 string: parsed in Python (not in these events)
        if when > NOW_MS + MAX_FUTURE_MS:
            continue
        row = index.row_of(event.query_id)
        if row < 0:
            continue
        rows.append(row)
        rankings.append(event.ranking)
    codes, lengths = index.codes(rows, rankings, scorer.lookup_depth or -1)
    return rows, codes, lengths


def python_path(scorer: Scorer, values: Sequence[bytes], timestamps: Sequence[int]) -> Coded:
    index = scorer.judgment_index
    assert index is not None
    rows, rankings = [], []
    for value, timestamp in zip(values, timestamps, strict=True):
        event = decode_event(value, timestamp, now_ms=NOW_MS, max_depth=MAX_DEPTH)
        if isinstance(event, RankingEvent):
            row = index.row_of(event.query_id)
            if row >= 0:
                rows.append(row)
                rankings.append(event.ranking)
    codes, lengths = index.codes(rows, rankings, scorer.lookup_depth or -1)
    return rows, codes, lengths


def c_path(scorer: Scorer, values: Sequence[bytes], timestamps: Sequence[int]) -> Coded:
    index = scorer.judgment_index
    assert index is not None
    decoded = DecodedEvents(
        *speedups.decode_events(
            index,
            values,
            timestamps,
            now_ms=NOW_MS,
            max_depth=MAX_DEPTH,
            max_bytes=1_048_576,
            max_future_ms=MAX_FUTURE_MS,
            segment_keys=("model",),
            use_event_time=True,
            depth=scorer.lookup_depth or -1,
            grade_codes=scorer.inline_grade_codes,
        )
    )
    return decoded.rows, decoded.codes, decoded.lengths


def numpy_scores(scorer: Scorer, codes: bytes, lengths: Sequence[int], rows: Any) -> Any:
    """The numpy columns on the C decoder's codes (what `score` does without the kernel)."""
    full = np.asarray(lengths, dtype=np.int64)
    width = scorer.lookup_depth or int(full.max(initial=0))
    matrix = np.zeros((len(full), width), dtype=np.uint8)  # 0: unjudged, as the padding
    matrix[np.arange(width) < np.minimum(full, width)[:, None]] = np.frombuffer(codes, np.uint8)
    ideals = scorer._queries.take(np.asarray(rows, dtype=np.int64))
    assert scorer._tables is not None
    ranked = RankedCodes(matrix, full)
    return measure_matrix(scorer.keys, ranked, scorer._tables, ideals, scorer.idcg_zero)


def numpy_score_coded(
    scorer: Scorer, rows: Sequence[int], codes: bytes, lengths: Sequence[int]
) -> Any:
    """`Scorer.score_coded` with the numpy columns in the C kernel's place."""
    return numpy_scores(scorer, codes, lengths, np.asarray(rows, dtype=np.int64))


@contextlib.contextmanager
def measures_by(engine: str) -> Iterator[None]:
    """Score coded rankings with `engine` ("c-kernel" or "numpy") inside the block."""
    kernel = Scorer.score_coded
    if engine == "numpy":
        Scorer.score_coded = numpy_score_coded  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        Scorer.score_coded = kernel  # type: ignore[method-assign]


def end_to_end(events: int, rounds: int, seed: int) -> dict[str, list[float]]:
    """bench/stream.py's Monitor run, alternating the C kernel and the numpy columns."""
    rng = random.Random(seed)
    total = events + 1
    rates: dict[str, list[float]] = {"c-kernel": [], "numpy": []}
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker() as broker:
        workdir = Path(tmp)
        stream.write_qrels(workdir / "qrels.txt", rng)
        topic = "bench-events"
        broker.create_topic(topic, 1)
        for run in range(2 * rounds):
            broker.create_topic(f"{topic}.dlq-{run}", 1)
            broker.create_topic(f"{topic}.windows-{run}", 1)
        stream.produce(broker.bootstrap_servers, topic, events, rng)
        for run in range(2 * rounds):
            # Swap the order every round: the first run of a round may be the slower one.
            engine = ("c-kernel", "numpy")[(run + run // 2) % 2]
            config = stream.monitor_config(workdir, broker.bootstrap_servers, topic, run)
            with measures_by(engine):
                elapsed, _, _ = stream.run_monitor(config, events)
            rates[engine].append(total / elapsed)
            print(f"  round {run // 2 + 1}: {engine:<8} {rates[engine][-1]:>9,.0f} events/s")
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--stream-us", type=float, default=12.8, help="whole streaming cost per event (us)"
    )
    parser.add_argument("--end-to-end", type=int, default=0, metavar="N", help="also run N events")
    parser.add_argument("--rounds", type=int, default=3, help="end-to-end rounds per engine")
    args = parser.parse_args()
    if not speedups_built():
        raise SystemExit("the C accelerators are not built: nothing to compare")
    evaluation_set, values = make_events(args.events, args.seed)
    timestamps = [NOW_MS] * len(values)
    scorer = Scorer(evaluation_set, monitor_keys((5, 10, 20), (LINEAR, EXP)))

    decoded: dict[str, Callable[[], Coded]] = {
        "c-scanner": lambda: c_path(scorer, values, timestamps),
        "msgspec": lambda: msgspec_path(scorer, values, timestamps),
        "python": lambda: python_path(scorer, values, timestamps),
    }
    reference = decoded["c-scanner"]()
    for name, run in decoded.items():
        assert run() == reference, f"{name} decodes differently"
    rows, codes, lengths = reference
    assert len(rows) == args.events
    row_array = np.asarray(rows, dtype=np.int64)
    kernel = scorer.score_coded(rows, codes, lengths)
    columns = numpy_scores(scorer, codes, lengths, row_array)
    assert np.array_equal(kernel, columns, equal_nan=True), "kernel and numpy differ"

    n = args.events
    print(f"{n} events of {DEPTH} documents, {len(scorer.keys)} measures, best of {args.repeats}")
    times: dict[str, float] = {}
    for _ in range(2):  # alternate, keep each side's best
        for name, run in decoded.items():
            times[name] = min(times.get(name, float("inf")), best_cpu(run, args.repeats))
        times["c-kernel"] = min(
            times.get("c-kernel", float("inf")),
            best_cpu(lambda: scorer.score_coded(rows, codes, lengths), args.repeats),
        )
        times["numpy"] = min(
            times.get("numpy", float("inf")),
            best_cpu(lambda: numpy_scores(scorer, codes, lengths, row_array), args.repeats),
        )
    per = {name: seconds / n * 1e6 for name, seconds in times.items()}
    print("\ndecode and validate, grade codes (us per event):")
    for name in decoded:
        print(f"  {name:<10} {per[name]:7.2f}")
    print("\nmeasures on the codes (us per event):")
    for name in ("c-kernel", "numpy"):
        print(f"  {name:<10} {per[name]:7.2f}")
    print(f"\nagainst the whole stream's {args.stream_us:.1f} us per event (bench/stream.py):")
    for slow, fast in (("msgspec", "c-scanner"), ("python", "c-scanner"), ("numpy", "c-kernel")):
        extra = per[slow] - per[fast]
        print(
            f"  {slow} instead of {fast}: {per[slow] / per[fast]:4.2f}x the step, "
            f"{extra:+6.2f} us per event = {extra / args.stream_us:+6.1%} end to end"
        )
    if args.end_to_end:
        print(f"\nend to end, {args.end_to_end:,} events through a Monitor on Tansu:")
        rates = end_to_end(args.end_to_end, args.rounds, args.seed)
        c, numpy_rate = statistics.median(rates["c-kernel"]), statistics.median(rates["numpy"])
        print(f"  c-kernel {c:>9,.0f} events/s (median), numpy {numpy_rate:>9,.0f} events/s")
        print(f"  numpy instead of c-kernel: {c / numpy_rate - 1:+6.1%} time per event")


if __name__ == "__main__":
    main()
