"""The configured windows topic: read back on assignment, followed by the group's decider.

`WindowsTopic.read` hands a restore the tail it needs (`monitor.checkpoint.share_reader`);
`WindowsTopic.tail` follows the topic from about its end for the member that decides for the
group (`monitor.group`): a plain consumer (no group, nothing committed) assigned every
partition of the topic, polled without waiting on the service's loop. It starts where the
topic ends when it is made, before the restore reads back, so nothing published between the
two is missed (what both see is taken twice, which the decider allows).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaError

from monitor.checkpoint.restore import RecordTail
from monitor.checkpoint.share import GroupFilter, WindowsRecord, parse_records
from monitor.checkpoint.share_reader import RestoreNeeds, read_shares, topic_consumer
from monitor.kafka.bootstrap import KafkaUnavailableError
from monitor.kafka.options import reader_options
from monitor.kafka.settings import KafkaConfig
from monitor.logs import fields

__all__ = ["WindowsTail", "WindowsTopic"]

_log = logging.getLogger(__name__)

TAIL_MAX_RECORDS = 500  # per poll: the loop keeps its pace whatever the backlog


class WindowsTopic:
    """Reads the configured windows topic back, with the event consumer's connection options."""

    def __init__(self, kafka: KafkaConfig, timeout_s: float = 10.0) -> None:
        self._options = reader_options(kafka)
        self._kafka = kafka
        self._timeout_s = timeout_s
        self.foreign: dict[str, int] = {}  # records of other groups ignored, by group
        self._warned = False

    def read(
        self, take: Callable[[WindowsRecord], None], needs: RestoreNeeds | None = None
    ) -> None:
        """Hand the shares (and comparison records) the restore `needs` (default: all) to
        `take`, as read, in offset order; `KafkaUnavailableError` if the topic cannot be read
        now (`take` may have seen some)."""
        read_shares(
            bootstrap_servers=list(self._kafka.bootstrap_servers),
            topic=self._kafka.windows_topic,
            client_id=f"{self._kafka.client_id}-restore",
            timeout_s=self._timeout_s,
            take=take,
            needs=needs,
            group=self._kafka.group_id,
            foreign=self.foreign,
            **self._options,
        )
        self._warn_foreign()

    def tail(self) -> RecordTail:
        """A follower of the topic from about its end now (`WindowsTail`);
        `KafkaUnavailableError` if the broker does not answer."""
        return WindowsTail(
            bootstrap_servers=list(self._kafka.bootstrap_servers),
            topic=self._kafka.windows_topic,
            client_id=f"{self._kafka.client_id}-decider",
            only=GroupFilter(self._kafka.group_id, self.foreign),
            options=self._options,
        )

    def _warn_foreign(self) -> None:
        if self.foreign and not self._warned:
            self._warned = True
            _log.error(
                "the windows topic holds records of another deployment: ignored, not restored. "
                "Give each deployment (consumer group) its own kafka.windows_topic and "
                "kafka.dead_letter_topic",
                extra=fields(
                    topic=self._kafka.windows_topic,
                    group=self._kafka.group_id,
                    other_groups=",".join(sorted(self.foreign))[:400],
                    records=sum(self.foreign.values()),
                ),
            )


class WindowsTail:
    """Follows every partition of the windows topic from its end at construction."""

    def __init__(
        self,
        *,
        bootstrap_servers: Sequence[str],
        topic: str,
        client_id: str,
        only: GroupFilter,
        options: Mapping[str, Any],
    ) -> None:
        self._only = only
        self._consumer = topic_consumer(bootstrap_servers, client_id, f"follow {topic}", options)
        try:
            partitions = [
                TopicPartition(topic, p)
                for p in sorted(self._consumer.partitions_for_topic(topic) or ())
            ]
            self._consumer.assign(partitions)
            self._consumer.seek_to_end(*partitions)
            for tp in partitions:  # resolve the end now: a lazy seek would skip what comes
                self._consumer.position(tp, timeout_ms=10_000)
        except KafkaError as error:
            self.close()  # the caller retries with a new tail: this one's sockets go now
            raise KafkaUnavailableError(f"cannot follow {topic}: {error}") from error

    def poll(self) -> list[WindowsRecord]:
        """The records published since the last poll (those fetched already; never waits)."""
        try:
            fetched = self._consumer.poll(timeout_ms=0, max_records=TAIL_MAX_RECORDS)
        except KafkaError as error:
            _log.warning("cannot read the windows topic now", extra=fields(error=str(error)))
            return []
        records: list[WindowsRecord] = []
        for tp in sorted(fetched):
            records += parse_records(self._only.records(fetched[tp]))
        return records

    def close(self) -> None:
        self._consumer.close(autocommit=False)
