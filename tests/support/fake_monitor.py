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
from prometheus_client import CollectorRegistry

from monitor.checkpoint.steps import StepHook, ignore_step
from monitor.config.loader import Config, load_config
from monitor.judging.topics import RecordFeed
from monitor.service import Monitor, MonitorIo
from monitor.testing.clock import FakeClock
from tests.support.fakes import (
    FakeProducer,
    FakeServer,
    FakeStream,
    FakeWindowsTopic,
    finalize_all,
)

__all__ = ["T0", "OnFakes", "monitor_on", "on_fakes"]

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


def monitor_on(
    config: Config,
    clock: FakeClock,
    stream: FakeStream,
    producer: FakeProducer,
    *,
    windows_topic: str | None = None,
    registry: CollectorRegistry | None = None,
    server: FakeServer | None = None,
    step_hook: StepHook = ignore_step,
    judging_feeds: tuple[RecordFeed, RecordFeed] | None = None,
) -> Monitor:
    """A monitor of `config` on these fakes (not started), its windows topic read back from
    `producer` (`windows_topic`: the config's topic + `.windows` unless named). For tests whose
    fakes outlive one monitor (a restart, a crash, a group); `on_fakes` makes them all."""
    return Monitor(
        config,
        io=MonitorIo(
            clock=clock,
            registry=registry,
            step_hook=step_hook,
            source=stream,
            producer=producer,
            windows_topic=FakeWindowsTopic(
                producer, windows_topic or f"{config.kafka.topic}.windows"
            ),
            server=server,
            judging_feeds=judging_feeds,
        ),
    )


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
    config_read = load_config(directory / "rankmon.yaml", environ={})
    monitor = monitor_on(config_read, clock, stream, producer, judging_feeds=judging_feeds)
    try:
        yield OnFakes(monitor, clock, stream, producer)
    finally:
        monitor.close()
