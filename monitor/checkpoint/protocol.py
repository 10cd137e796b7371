"""The commit protocol in one place: what may be committed, when, and what a restart reads.

`Checkpoint` owns the steps between the windows and Kafka. A tick, in this order:

1. **fence**: the offsets safe to commit *before* the finalize, which pass none of the
   records of the windows about to close;
2. **finalize**: the closed windows become `WindowShare`s, each with the partitions its
   events came from and the offsets read through on each (`finalize`);
3. **publish**: first the comparison records of the finalized windows (when comparisons are
   configured: `ComparisonPublisher`), then the shares go to the windows topic window by
   window, oldest first, behind
   the fence of the oldest held share, and with them the dead letters are flushed
   (`SharePublisher`); a share stays held until the broker acknowledges it;
4. **commit**: only when nothing is held, the offsets now safe (`commit`, at the tick's end).

On an assignment that makes the partitions replay, `restore` reads the windows topic's tail
back first: what was published is marked (the replay skips it, so nothing is counted twice),
the window specs and evaluation-set epochs of the published windows and the segment labels
of the newest go on, and the owned shares come back for the alert baselines.

The steps are reported to a `StepHook` (`monitor.checkpoint.steps`); nothing here depends on
what it does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from monitor.checkpoint.comparisons import ComparisonPublisher
from monitor.checkpoint.publisher import GroupMember, SharePublisher
from monitor.checkpoint.restore import ShareReader, ShareRestore
from monitor.checkpoint.share import WindowShare, WindowsRecord
from monitor.checkpoint.share_reader import RestoreNeeds
from monitor.checkpoint.steps import StepHook, ignore_step
from monitor.kafka.consumer import SourceRecord
from monitor.logs import fields
from monitor.windows.engine import EventWindows
from monitor.windows.spec import Epoch
from monitor.windows.summary import WindowSummary

__all__ = ["Checkpoint", "CommittingMember", "Retry"]

_log = logging.getLogger(__name__)

# Call the attempt until it returns True (with backoff); False if the service is stopping.
Retry = Callable[[Callable[[], bool], str], bool]


class CommittingMember(GroupMember, Protocol):
    """The consumer as the protocol sees it: commits, and where the group has committed."""

    def committed(self, partitions: Iterable[int]) -> Mapping[int, int | None]: ...


class Checkpoint:
    """Fence, finalize, publish, commit; restore on assignment (see the module docstring)."""

    def __init__(
        self,
        windows: EventWindows,
        publisher: SharePublisher,
        member: CommittingMember,
        windows_topic: ShareReader,
        *,
        hop_ms: int,
        step: StepHook = ignore_step,
        comparisons: ComparisonPublisher | None = None,
    ) -> None:
        self._windows = windows
        self._comparisons = comparisons
        self._publisher = publisher
        self._member = member
        self._windows_topic = windows_topic
        self._hop_ms = hop_ms
        self._step = step
        self._read_through: dict[int, int] = {}  # partition -> next offset taken in
        self._published = False  # the last publish acknowledged everything held
        self._finalized = False  # the last tick finalized a window
        # False while another member of the group decides (`monitor.group`): the comparisons
        # of this member's shares alone would be about part of the queries.
        self.compare_locally = True

    @property
    def held(self) -> int:
        """Shares not acknowledged yet: nothing is committed past the oldest of them."""
        return len(self._publisher.held)

    def took_in(self, records: Sequence[SourceRecord]) -> None:
        """A poll's records are in the windows: their offsets are read through."""
        self._read_through.update((r.partition, r.offset + 1) for r in records)
        self._step("after-intake")

    def finalize(self, quiet_ms: int | None, floor_ms: int | None = None) -> list[WindowSummary]:
        """Steps 1 to 3: fence, finalize (on processing time `quiet_ms` when the stream is
        quiet; up to `floor_ms` when every owned partition ended a replay), publish. Returns
        the finalized summaries, published or still held."""
        fence = self._windows.safe_offsets()  # before finalize: committing it passes nothing
        through = self._read_through
        finalized = [
            WindowShare(summary, parts, {p: through[p] for p in parts if p in through})
            for summary, parts in self._windows.finalize_with_partitions(quiet_ms, floor_ms)
        ]
        self._publisher.add(finalized, fence)
        compared = True
        if self._comparisons is not None and self.compare_locally:
            self._comparisons.add(finalized)
            compared = self._comparisons.publish()
        self._published = compared and self._publisher.publish()
        self._finalized = bool(finalized)
        return [share.summary for share in finalized]

    @property
    def published(self) -> bool:
        """Whether the last publish acknowledged everything held."""
        return self._published

    def take_acked(self) -> list[str]:
        """The keys of the shares acknowledged since the last call (`SharePublisher`)."""
        return self._publisher.take_acked()

    def commit(self) -> None:
        """Step 4: commit the safe offsets if the last publish acknowledged everything."""
        if self._published:
            self._member.commit(self._windows.safe_offsets())
            if self._finalized:
                self._step("after-commit")

    def must_replay(self, leaving: frozenset[int]) -> bool:
        """Whether a held share has events of leaving partitions (shares cannot be split)."""
        return self._publisher.holds_any(leaving)

    def forget(self, partitions: Iterable[int], *, replay: bool) -> None:
        """Partitions whose state was dropped; `replay`: every held share is replayed too."""
        for partition in partitions:
            self._read_through.pop(partition, None)
        if replay:
            self._publisher.drop()
            if self._comparisons is not None:
                self._comparisons.drop()

    def restore(
        self,
        owned: frozenset[int],
        newest: Epoch,
        retry: Retry,
        *,
        keep: int,
        measures: frozenset[str],
        also: Callable[[WindowsRecord], None] | None = None,
    ) -> ShareRestore | None:
        """Read the windows topic back before `owned` replays (None: stopping first).

        How far back is what a replay from the committed offsets can meet and what the alert
        rules look back on (`RestoreNeeds`, `keep` windows of `measures`), whatever the
        topic's retention. Replaying without the marks would publish windows twice: the read
        is retried until the topic answers. `also` sees every record read too (the group's
        decider: `monitor.group`)."""
        read_back: list[ShareRestore] = []  # the attempt that read the whole tail

        def read() -> bool:
            # Marks of a failed read stay true; the kept summaries start over.
            attempt = ShareRestore(self._windows, owned, keep, measures)
            needs = RestoreNeeds(self._member.committed(owned), keep, self._hop_ms)
            self._windows_topic.read(
                attempt.take if also is None else _tee(attempt.take, also), needs
            )
            read_back.append(attempt)
            return True

        if not retry(read, "read the windows topic"):
            return None
        restore = read_back[-1]
        self._continue_after(restore, newest)
        return restore

    def close(self) -> None:
        """On shutdown: publish what is held and, if all of it is acknowledged, commit."""
        compared = self._comparisons is None or self._comparisons.publish()
        if compared and self._publisher.publish():
            self._member.commit(self._windows.safe_offsets())

    def _continue_after(self, restore: ShareRestore, newest: Epoch) -> None:
        """The replay goes on from what the windows topic says: the window spec of the
        published windows until the configured one takes over (a resize across a restart),
        the newest evaluation set for every epoch, the segment labels of the newest window."""
        epochs = restore.epochs(newest)
        if self._windows.open_windows:  # cannot happen after a full revoke; keep what runs
            epochs = list(self._windows.windower.epochs)
        self._windows.set_epochs(epochs)
        if len(epochs) > 1:
            _log.warning(
                "windows topic has windows of another size or hop: they go on until the "
                "configured ones take over",
                extra=fields(
                    published_window=epochs[0].spec.label,
                    published_hop_ms=epochs[0].spec.hop_ms,
                    window=epochs[-1].spec.label,
                    from_event_time_ms=epochs[-1].from_ms,
                ),
            )
        labels = restore.label_state()
        if labels is not None and self._windows.labeler is not None:
            self._windows.labeler.restore(labels)


def _tee(
    first: Callable[[WindowsRecord], None], second: Callable[[WindowsRecord], None]
) -> Callable[[WindowsRecord], None]:
    def both(record: WindowsRecord) -> None:
        first(record)
        second(record)

    return both
