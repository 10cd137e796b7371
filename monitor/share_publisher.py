"""`SharePublisher`: finalized window shares on their way to the windows topic.

Shares wait here until the broker acknowledged them, so that the offsets commit that passes
their windows can follow (DESIGN.md "Not losing data"). Two rules keep a share from being
published where it should not:

- while the consumer sees no broker, nothing is tried (a flush would block for its whole
  timeout); the shares stay held for the next tick;
- a fence comes first: committing offsets that pass no held window (the safe offsets from
  before the finalize) fails if the group has moved on, a rebalance running or this member's
  generation gone. A new owner may then be counting the same partitions, so the shares stay
  held until the rebalance reaches this member, which drops them and replays its partitions.

A share handed to the producer stays with it: the producer resends what was not acknowledged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Protocol

from monitor.bootstrap import KafkaUnavailableError
from monitor.crashpoints import CrashPoints
from monitor.logs import fields
from monitor.producer import RecordProducer
from monitor.recovery import WindowShare, publish_shares

__all__ = ["GroupMember", "SharePublisher"]

_log = logging.getLogger(__name__)


class GroupMember(Protocol):
    """What the publisher needs of the consumer (`EventSource`): its view of the broker and
    a commit that fails when the group has moved on."""

    @property
    def broker_up(self) -> bool: ...

    def commit(self, offsets: Mapping[int, int]) -> bool: ...


class SharePublisher:
    """Holds finalized shares and publishes them behind the commit fence."""

    def __init__(
        self,
        producer: RecordProducer,
        topic: str,
        source: GroupMember,
        crash: CrashPoints,
        max_record_bytes: int = 1_048_576,
    ) -> None:
        self._producer = producer
        self._max_record_bytes = max_record_bytes
        self._topic = topic
        self._source = source
        self._crash = crash
        self.held: list[WindowShare] = []
        self._fence: Mapping[int, int] = {}

    def add(self, shares: Iterable[WindowShare], fence: Mapping[int, int]) -> None:
        """Hold shares until `publish()` succeeds; `fence`: offsets that pass none of them
        (the safe offsets from before their finalize), kept from the oldest held share."""
        shares = list(shares)
        if shares and not self.held:
            self._fence = fence
        self.held.extend(shares)

    def holds_any(self, partitions: frozenset[int]) -> bool:
        """Whether a held share has events of these partitions (shares cannot be split)."""
        return any(s.partitions is None or s.partitions & partitions for s in self.held)

    def drop(self) -> None:
        """Forget the held shares: their windows are being replayed."""
        self.held = []

    def publish(self) -> bool:
        """Publish the held shares and flush the dead letters; True once all are acked."""
        if not self._source.broker_up:
            return False
        if self.held and not self._source.commit(self._fence):
            return False
        shares, self.held = self.held, []
        # A test's crash point may cut the finalize in two (`monitor.crashpoints`).
        first = len(shares) // 2 if self._crash.armed("mid-finalize") else len(shares)
        parts = [shares[:first], shares[first:]]  # the second is empty unless cut
        for index, part in enumerate(parts):
            try:
                publish_shares(self._producer, self._topic, part, self._max_record_bytes)
            except KafkaUnavailableError as error:
                self.held = [share for later in parts[index + 1 :] for share in later]
                _log.warning(
                    "publish failed; nothing committed until it succeeds",
                    extra=fields(error=str(error), windows=len(shares)),
                )
                return False
            if shares:
                self._crash.reach(("mid-finalize", "after-publish")[index])
        return True
