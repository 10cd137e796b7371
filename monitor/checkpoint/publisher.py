"""`SharePublisher`: finalized window shares on their way to the windows topic.

Shares wait here until the broker acknowledged them, so that the offsets commit that passes
their windows can follow (docs/recovery.md). Two rules keep a share from being
published where it should not:

- while the consumer sees no broker, nothing is tried (a flush would block for its whole
  timeout); the shares stay held for the next tick;
- a fence comes first: committing offsets that pass no held window (the safe offsets from
  before the finalize) fails if the group has moved on, a rebalance running or this member's
  generation gone. A new owner may then be counting the same partitions, so the shares stay
  held until the rebalance reaches this member, which drops them and replays its partitions.

A share handed to the producer stays with it (the producer resends what was not acknowledged),
and it stays held here too, with the fence of the oldest held share, until a flush acknowledges
it: a window finalized meanwhile must not bring a fence that passes it. Held shares are
therefore either still to send or sent and waiting for an ack; the next `publish()` sends the
first and flushes again for the second, so no share is sent twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from itertools import groupby
from typing import Protocol

from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.share import SHARE_HEADERS, WindowShare, group_headers, publish_shares
from monitor.checkpoint.steps import StepHook, ignore_step
from monitor.kafka.bootstrap import KafkaUnavailableError
from monitor.kafka.producer import RecordSink
from monitor.logs import fields

__all__ = ["GroupMember", "ProgressPublisher", "SharePublisher"]

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
        producer: RecordSink,
        topic: str,
        source: GroupMember,
        max_record_bytes: int = 1_048_576,
        step: StepHook = ignore_step,
        *,
        trimmed: Callable[[str], None] | None = None,
        group: str | None = None,
    ) -> None:
        self._producer = producer
        self._trimmed = trimmed  # told each part a share went without to fit one record
        self._group = group  # stamped on each share: the consumer group (deployment)
        self._max_record_bytes = max_record_bytes
        self._topic = topic
        self._source = source
        self._step = step
        self._unsent: list[WindowShare] = []
        self._unacked: list[WindowShare] = []  # handed to the producer, not acknowledged yet
        self._fence: Mapping[int, int] = {}
        self._acked: list[str] = []  # keys acknowledged since `take_acked`

    @property
    def held(self) -> list[WindowShare]:
        """The shares not acknowledged yet, oldest first: nothing is committed past them."""
        return self._unacked + self._unsent

    def add(self, shares: Iterable[WindowShare], fence: Mapping[int, int]) -> None:
        """Hold shares until `publish()` succeeds; `fence`: offsets that pass none of them
        (the safe offsets from before their finalize), kept from the oldest held share."""
        shares = list(shares)
        if shares and not self.held:
            self._fence = fence
        self._unsent.extend(shares)

    def holds_any(self, partitions: frozenset[int]) -> bool:
        """Whether a held share has events of these partitions (shares cannot be split)."""
        return any(s.partitions is None or s.partitions & partitions for s in self.held)

    def drop(self) -> None:
        """Forget the held shares: their windows are being replayed."""
        self._unsent, self._unacked = [], []

    def take_acked(self) -> list[str]:
        """The keys of the shares acknowledged since the last call, in publish order."""
        acked, self._acked = self._acked, []
        return acked

    def publish(self) -> bool:
        """Publish the held shares and flush the dead letters; True once all are acked.

        False: nothing may be committed past the held shares (they stay held, and so does
        the fence of the oldest)."""
        if not self._source.broker_up:
            return False
        if self.held and not self._source.commit(self._fence):
            return False
        shares, self._unsent = self._unsent, []
        # Window by window, oldest first: after a failure (or a crash) the topic holds whole
        # windows. An empty publish still flushes what an earlier one sent, the dead letters.
        parts = _by_window(shares) or [[]]
        for index, part in enumerate(parts):
            self._unacked.extend(part)
            try:
                dropped = publish_shares(
                    self._producer, self._topic, part, self._max_record_bytes, self._group
                )
            except KafkaUnavailableError as error:
                self._unsent = [share for later in parts[index + 1 :] for share in later]
                _log.warning(
                    "publish failed; nothing committed until it succeeds",
                    extra=fields(error=str(error), windows=len(self.held)),
                )
                return False
            self._acked += [share.key.decode() for share in self._unacked]
            self._unacked = []  # the flush acknowledged everything sent so far
            if self._trimmed is not None:
                for name in dropped:
                    self._trimmed(name)
            if part:
                self._step("after-window-publish")
        if shares:
            self._step("after-publish")
        return True


def _by_window(shares: list[WindowShare]) -> list[list[WindowShare]]:
    """The shares in runs of one window each (size and bounds), in their order."""
    return [list(run) for _, run in groupby(shares, _window_of)]


def _window_of(share: WindowShare) -> tuple[str, int, int]:
    return share.summary.window, share.summary.start_ms, share.summary.end_ms


class ProgressPublisher:
    """Sends this member's progress record after a tick, when it says something new."""

    def __init__(
        self, producer: RecordSink, topic: str, source: GroupMember, *, group: str | None = None
    ) -> None:
        self._producer = producer
        self._topic = topic
        self._source = source
        self._headers = [*SHARE_HEADERS, *group_headers(group)]
        self._last: tuple[frozenset[int], int | None, bool] | None = None
        self._shares: list[str] = []  # acknowledged, not yet named in a sent record

    def published(self, keys: Iterable[str]) -> None:
        """Shares the broker acknowledged: the next record names them."""
        self._shares += keys

    def forget(self) -> None:
        """After a rebalance: the next record is sent whatever it says."""
        self._last = None

    def report(
        self, partitions: frozenset[int], closed_through_ms: int | None, quiet: bool, at_ms: int
    ) -> ProgressRecord | None:
        """Send the progress record if it differs from the last one sent; the record, or
        None when nothing was sent (nothing new, or the broker not answering)."""
        state = (partitions, closed_through_ms, quiet)
        if (state == self._last and not self._shares) or not self._source.broker_up:
            return None
        record = ProgressRecord(partitions, closed_through_ms, quiet, at_ms, tuple(self._shares))
        try:
            self._producer.send(self._topic, record.key, record.to_json(), self._headers)
            self._producer.flush()
        except KafkaUnavailableError as error:
            _log.warning(
                "progress record not acknowledged; sent again", extra=fields(error=str(error))
            )
            return None
        self._last, self._shares = state, []
        return record
