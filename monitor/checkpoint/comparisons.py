"""`ComparisonPublisher`: a tick's comparison records on their way to the windows topic.

They go out *before* the window shares of the same tick, and the shares wait for them: if
the records are not acknowledged, the shares are not published either, and nothing is
committed. After a crash anywhere in between, the replay meets windows whose comparison
record may already be on the topic; the engine restored from that record skips them
(`ComparisonEngine.observe`), so a window is never counted twice in a sequence, and a
window whose record was not acknowledged is computed again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from monitor.checkpoint.publisher import GroupMember
from monitor.checkpoint.shares import WindowShare, group_headers
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
        group: str | None = None,
    ) -> None:
        self.engine = engine
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
            self._producer.send(self._topic, record.key, record.to_json(), self._headers)
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
