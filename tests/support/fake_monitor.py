"""The Monitor on fakes the tests share: a fake clock, event stream, producer and windows
topic, a config and qrels written to a directory; events sent as a producer sends them, and
every window finalized (`finalize_all`).

```python
with on_fakes(tmp_path, CONFIG, qrels_lines) as run:
    run.send({"event_id": "e1", "query_id": "q1", "ranking": ["d1"], "event_time": T0 + 1})
    run.finalize()
    run.monitor.snapshot().alerts
```
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson

from monitor.config.loader import load_config
from monitor.judging.topics import RecordFeed
from monitor.service import Monitor, MonitorIo
from monitor.testing.clock import FakeClock
from tests.support.fakes import FakeProducer, FakeStream, FakeWindowsTopic, finalize_all

__all__ = ["T0", "OnFakes", "on_fakes"]

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@dataclass
class OnFakes:
    """A monitor on fakes and the fakes it runs on."""

    monitor: Monitor
    clock: FakeClock
    stream: FakeStream
    producer: FakeProducer

    def send(self, *events: Mapping[str, object], partition: int = 0) -> None:
        """Events onto the stream, each stamped with its `event_time` (or the clock's now)."""
        for event in events:
            time = event.get("event_time", self.clock.now_ms())
            stamp = time if isinstance(time, int) else self.clock.now_ms()
            self.stream.append(partition, orjson.dumps(event), stamp)

    def finalize(self) -> None:
        """Take in what the stream holds and finalize every window (`finalize_all`)."""
        finalize_all(self.monitor, self.clock)


@contextmanager
def on_fakes(
    directory: Path,
    config: str,
    qrels: Iterable[str],
    *,
    start_ms: int = T0,
    judging_feeds: tuple[RecordFeed, RecordFeed] | None = None,
) -> Iterator[OnFakes]:
    """A monitor of `config` (YAML text, its evaluation set at `qrels.txt`) over the qrels
    lines, on fakes, closed at the end."""
    (directory / "qrels.txt").write_text("".join(qrels))
    (directory / "rankmon.yaml").write_text(config)
    producer, clock, stream = FakeProducer(), FakeClock(start_ms), FakeStream("events")
    monitor = Monitor(
        load_config(directory / "rankmon.yaml", environ={}),
        io=MonitorIo(
            clock=clock,
            source=stream,
            producer=producer,
            windows_topic=FakeWindowsTopic(producer, "events.windows"),
            judging_feeds=judging_feeds,
        ),
    )
    try:
        yield OnFakes(monitor, clock, stream, producer)
    finally:
        monitor.close()
