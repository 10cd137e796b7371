"""`SharedPairs`: the to-judge topic shared by the judge workers of one consumer group.

Each partition is read by one worker of the group (`judge.group_id`; by default
`rankmon-judge-<source>`), from its beginning whenever it is assigned; nothing is committed.
A pair is keyed as `["q", "d"]`, so all of its records are on one partition: two workers of
the group never ask the same pair, and a worker that leaves hands its partitions to the
others, who read them from the beginning and skip what the source graded (each worker reads
the judgments topic whole, and to its end again at each new assignment). Only while the
group rebalances can a pair in flight on the worker that left be asked once more; its second
judgment is the same source's and replaces the first (docs/judging.md).

`catch_up(take)` waits for an assignment and hands `take` every record of the assigned
partitions up to their ends now; `poll()` what came since, a rebalance's new partitions from
their beginnings. A worker with no partition (more workers than partitions) has nothing to do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from typing import Any, Final

from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from monitor.judging.topics import POLL_MAX_RECORDS, fetched_records, read_to_end
from monitor.kafka.bootstrap import KafkaUnavailableError, bootstrap_reachable
from monitor.kafka.consumer import SourceRecord
from monitor.kafka.options import consumer_options
from monitor.kafka.settings import KafkaConfig
from monitor.logs import fields

__all__ = ["SharedPairs"]

_log = logging.getLogger(__name__)

JOIN_WAIT_MS: Final = 15_000  # a rebalance's join, polled until it ends, at most


class _FromTheBeginning(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, shared: SharedPairs) -> None:
        self.shared = shared

    def on_partitions_revoked(self, revoked: Collection[TopicPartition]) -> None:
        self.shared.assigned = set()
        self.shared.on_assign(0)

    def on_partitions_assigned(self, assigned: Collection[TopicPartition]) -> None:
        self.shared.assigned = set(assigned)
        self.shared.reassigned = True
        self.shared.on_assign(len(assigned))
        if assigned and self.shared.consumer is not None:
            self.shared.consumer.seek_to_beginning(*assigned)
        _log.info(
            "judge partitions assigned",
            extra=fields(topic=self.shared.topic, partitions=sorted(p.partition for p in assigned)),
        )


class SharedPairs:
    """The to-judge topic, split among the workers of `group_id` (module docstring)."""

    def __init__(
        self,
        kafka: KafkaConfig,
        topic: str,
        group_id: str,
        timeout_s: float = 60.0,
        on_assign: Callable[[int], None] = lambda partitions: None,
    ) -> None:
        """`on_assign(n)`: the group gave this worker `n` partitions (0: none, or revoked)."""
        self.on_assign = on_assign
        options = dict(consumer_options(kafka))
        options.update(group_id=group_id, enable_auto_commit=False, auto_offset_reset="earliest")
        # A heartbeat well within the session (as the event consumer's): one every half
        # session let a rebalance's join end, with Tansu, in a join again, over and over.
        session_ms = int(options.get("session_timeout_ms", 10_000))
        options["heartbeat_interval_ms"] = max(100, session_ms // 6)
        self._options: dict[str, Any] = options
        self._servers = list(kafka.bootstrap_servers)
        self.topic = topic
        self.group_id = group_id
        self._timeout_s = timeout_s
        self.consumer: Any = None
        self.assigned: set[TopicPartition] = set()
        # Set when the group assigned partitions; the worker clears it once it has read the
        # judgments written up to then (`run_judge`): a partition taken over is read from its
        # beginning, and its pairs the other worker graded must not be asked again.
        self.reassigned = False

    def catch_up(self, take: Callable[[SourceRecord], None]) -> None:
        """Join the group and hand `take` the assigned partitions' records to their ends now;
        `KafkaUnavailableError` if the broker or the group cannot be reached in time."""
        self.close()
        if not bootstrap_reachable(self._servers):
            raise KafkaUnavailableError(f"no Kafka bootstrap server reachable at {self._servers}")
        try:
            self.consumer = KafkaConsumer(**self._options)
            self.consumer.subscribe([self.topic], listener=_FromTheBeginning(self))
            deadline = time.monotonic() + self._timeout_s
            while not self.consumer.assignment():
                if time.monotonic() > deadline:
                    raise KafkaUnavailableError(
                        f"group {self.group_id} gave this worker no partition of {self.topic} "
                        f"in {self._timeout_s:g}s (does the topic exist?)"
                    )
                for record in fetched_records(self.consumer.poll(timeout_ms=200)):
                    take(record)
            assigned = sorted(self.consumer.assignment(), key=lambda tp: tp.partition)
            read_to_end(self.consumer, assigned, take, self.topic, self._timeout_s)
        except KafkaError as error:
            self.close()
            raise KafkaUnavailableError(f"cannot read {self.topic}: {error}") from error
        except KafkaUnavailableError:
            self.close()
            raise

    def poll(self) -> list[SourceRecord]:
        """The records since the last call: 100 ms at most, unless a rebalance began (then
        until it ends, `JOIN_WAIT_MS` at most)."""
        if self.consumer is None:
            return []
        # A rebalance that begins in a poll is ended by polling on, without a pause: a join
        # whose answer comes while no poll waits is begun again (kafka-python, seen with
        # Tansu, which holds a join half the session timeout), so a worker pausing between
        # batches or while idle would never hold a partition again.
        try:
            records = fetched_records(
                self.consumer.poll(timeout_ms=100, max_records=POLL_MAX_RECORDS)
            )
            deadline = time.monotonic() + JOIN_WAIT_MS / 1000
            while not self.assigned and time.monotonic() < deadline:
                records += fetched_records(
                    self.consumer.poll(timeout_ms=500, max_records=POLL_MAX_RECORDS)
                )
        except KafkaError as error:
            _log.warning("cannot read %s now", self.topic, extra=fields(error=str(error)))
            return []
        return records

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close(autocommit=False)
            self.consumer = None
        self.assigned = set()
