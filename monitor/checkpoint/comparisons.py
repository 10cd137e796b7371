"""`ComparisonPublisher`: a tick's comparison records on their way to the windows topic.

They go out *before* the window shares of the same tick, and the shares wait for them: if
the records are not acknowledged, the shares are not published either, and nothing is
committed. After a crash anywhere in between, the replay meets windows whose comparison
record may already be on the topic; the engine restored from that record skips them
(`ComparisonEngine.observe`), so a window is never counted twice in a sequence, and a
window whose record was not acknowledged is computed again.

A record carries each measure's per-query moments, which grow with the evaluation set
(about 50 bytes a query and measure). One that does not fit `kafka.max_record_bytes` (even
gzip-compressed) goes without them and is counted
(`rankmon_window_shares_trimmed_total{dropped="comparison_units"}`): the live state keeps
them, and only a restart from that record starts the per-query moments afresh. A record the
broker refuses for its size would otherwise hold every window, and every commit, for good.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from monitor.checkpoint.publisher import GroupMember
from monitor.checkpoint.share import RECORD_OVERHEAD_BYTES, WindowShare, group_headers
from monitor.comparisons.engine import ComparisonEngine
from monitor.comparisons.record import ComparisonRecord
from monitor.kafka.bootstrap import KafkaUnavailableError
from monitor.kafka.producer import RecordSink
from monitor.logs import fields

__all__ = ["ComparisonPublisher"]

_log = logging.getLogger(__name__)

HEADERS = [("content-type", b"application/json")]


class ComparisonPublisher:
    """Computes a tick's comparisons from its finalized shares and publishes them."""

    def __init__(
        self,
        engine: ComparisonEngine,
        producer: RecordSink,
        topic: str,
        source: GroupMember,
        *,
        group: str | None = None,
        max_record_bytes: int = 1_000_000,
        trimmed: Callable[[str], None] | None = None,
    ) -> None:
        self.engine = engine
        self._budget = max_record_bytes - RECORD_OVERHEAD_BYTES
        self._trimmed = trimmed
        self._headers = [*HEADERS, *group_headers(group)]
        self._producer = producer
        self._topic = topic
        self._source = source
        self._held: list[ComparisonRecord] = []

    @property
    def held(self) -> int:
        """Records not acknowledged yet."""
        return len(self._held)

    def add(self, finalized: Sequence[WindowShare]) -> None:
        """The comparisons of the finalized windows, held until `publish` succeeds."""
        self._held += self.engine.observe((s.summary, s.partitions) for s in finalized)

    def drop(self) -> None:
        """Forget the held records: their windows are being replayed."""
        self._held = []

    def publish(self) -> bool:
        """Send every held record and wait for the acks; True when none is left held."""
        if not self._held:
            return True
        if not self._source.broker_up:
            return False
        for record in self._held:
            self._producer.send(self._topic, record.key, self._fitted(record), self._headers)
        try:
            self._producer.flush()
        except KafkaUnavailableError as error:
            _log.warning(
                "comparison records not acknowledged; windows held until they are",
                extra=fields(error=str(error), records=len(self._held)),
            )
            return False
        self._held = []
        return True

    def _fitted(self, record: ComparisonRecord) -> bytes:
        """The record's value, without its per-query moments when they do not fit."""
        value = record.to_json()
        if len(value) <= self._budget or len(zlib.compress(value, 6)) <= self._budget:
            return value
        bare = replace(record, measures=tuple(replace(m, units={}) for m in record.measures))
        _log.warning(
            "comparison record too large for one record: published without its per-query "
            "moments (a restart starts them afresh)",
            extra=fields(key=record.key.decode()[:200], json_bytes=len(value)),
        )
        if self._trimmed is not None:
            self._trimmed("comparison_units")
        return bare.to_json()
