"""`EventWindows` against a plain reference: one event at a time, dicts and lists, no numpy.

The reference is the module docstring's rules written the slow, obvious way. Random streams
(several partitions, out of order, duplicates, stragglers, two segments, a mid-stream
evaluation-set reload) cut into random batches must give the same outcomes per event and the
same summaries, bit for bit. The reload takes effect at the start after the newest open
window: events before it keep the old version, and no window holds two.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from monitor.windows.spec import WindowSpec
from monitor.windows.watermark import NO_WATERMARK
from tests.unit.test_windows import Ev, add, windows

Cell = tuple[str, tuple[tuple[str, str], ...], str]  # (version, segment, query)
NO_RELOAD = 1 << 62


class Reference:
    """The rules, event by event."""

    def __init__(self, spec: WindowSpec, partitions: int) -> None:
        self.spec = spec
        self.latest = dict.fromkeys(range(partitions), NO_WATERMARK)
        self.watermark = NO_WATERMARK
        self.seen: dict[str, int] = {}  # event id -> pane
        self.windows: dict[int, dict[Cell, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.versions = ("v1", "v1")
        self.boundary = NO_RELOAD  # events from here on: versions[1]

    def reload(self, version: str) -> None:
        if version == self.versions[1]:
            return
        spec = self.spec
        if self.windows:
            self.boundary = max(self.windows) + spec.hop_ms
        elif self.watermark > NO_WATERMARK:
            oldest_closed = self.watermark - spec.size_ms
            self.boundary = oldest_closed - oldest_closed % spec.hop_ms + spec.hop_ms
        else:
            self.boundary = -NO_RELOAD
        self.versions = (self.versions[1], version)

    def add(self, event: Ev) -> str:
        spec = self.spec
        self.latest[event.partition] = max(self.latest[event.partition], event.time)
        lowest = min(self.latest.values()) - spec.allowed_lateness_ms
        self.watermark = max(self.watermark, lowest)
        pane = spec.pane_of(event.time)
        newer = event.time >= self.boundary
        version = self.versions[newer]
        starts = [
            s
            for s in spec.starts_of(event.time)
            if s + spec.size_ms > self.watermark and (s >= self.boundary) == newer
        ]
        if not starts:
            return "late"
        if event.id in self.seen:
            return "duplicate"
        self.seen[event.id] = pane
        for start in starts:
            self.windows[start][(version, event.segment, event.query)].append(event.score)
        return "accepted"

    def finalize(self) -> list[tuple[int, str, tuple[tuple[str, str], ...], int, dict[str, float]]]:
        size, out = self.spec.size_ms, []
        for start in sorted(s for s in self.windows if s + size <= self.watermark):
            cells = self.windows.pop(start)
            for version, segment in sorted({(v, s) for v, s, _ in cells}):
                scores = {
                    q: v for (ver, seg, q), v in cells.items() if (ver, seg) == (version, segment)
                }
                means = {q: _running_sum(v) / len(v) for q, v in scores.items()}
                events = sum(len(v) for v in scores.values())
                out.append((start, version, segment, events, means))
        self.seen = {i: p for i, p in self.seen.items() if p + size > self.watermark}
        return out


def _running_sum(values: list[float]) -> float:
    total = 0.0
    for value in values:  # in stream order, as the aggregate adds
        total += value
    return total


def random_stream(rng: random.Random, partitions: int) -> list[Ev]:
    events, offsets = [], [0] * partitions
    for n in range(400):
        partition = rng.randrange(partitions)
        time = n * 2 + rng.randrange(-15, 3) - (300 if rng.random() < 0.04 else 0)
        event_id = f"e{rng.randrange(n + 1)}" if rng.random() < 0.08 else f"e{n}"
        segment = (("model", rng.choice("ab")),)
        score = rng.choice((0.1, 0.2, 0.3, 0.7))
        query = f"q{partition}-{rng.randrange(3)}"  # records keyed by query id, as produced
        events.append(Ev(time, event_id, query, partition, offsets[partition], score, segment))
        offsets[partition] += 1
    return events


@pytest.mark.parametrize("hop", [40, 10])
@pytest.mark.parametrize("seed", range(12))
def test_windows_agree_with_the_event_by_event_reference(seed: int, hop: int) -> None:
    rng = random.Random(seed)
    monitor, _ = windows(size=40, hop=hop, lateness=rng.choice((0, 5, 20)))
    reference = Reference(monitor.spec, partitions=3)
    monitor.assign(range(3))
    stream = random_stream(rng, partitions=3)
    position = 0
    while position < len(stream):
        cut = stream[position : position + rng.randrange(1, 60)]
        version = "v1" if position < 200 else "v2"
        reference.reload(version)
        admission = add(monitor, *cut, version=version)
        expected = [reference.add(event) for event in cut]
        outcome = ["accepted"] * len(cut)
        for row in admission.late:
            outcome[row] = "late"
        for row in admission.duplicates:
            outcome[row] = "duplicate"
        assert outcome == expected
        got = [
            (s.start_ms, s.evaluation_set_version, s.segment, s.events, s.query_means)
            for s in monitor.finalize()
        ]
        want = [
            (start, version, segment, events, {q: m for q, m in sorted(means.items())})
            for start, version, segment, events, means in reference.finalize()
        ]
        assert [(g[:4], {q: m["ndcg@10:linear"] for q, m in g[4].items()}) for g in got] == [
            (w[:4], w[4]) for w in want
        ]
        position += len(cut)
