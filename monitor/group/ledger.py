"""`ShareLedger`: which windows the whole group has finalized, from the windows topic.

The deciding member (`monitor.group.decider`) reads every record the group publishes: window
shares, each member's progress (`monitor.checkpoint.progress`) and comparison records. A
window is whole, and can be decided once over all queries, when

- every partition of the events topic has a final word on it: the newest progress record
  covering the partition closes the window (its watermark passed the window's end, or the
  member is quiet), and
- every share a progress record named for the window has been read (a windows topic of
  several partitions may deliver a share after the progress record that names it).

Windows are handed out whole and in order (oldest end first); a window after one still
waiting waits too, so the alert rules see each segment's windows in order, as on one
instance. If more than `max_pending` windows wait (a member that never reports: an old
version, a partition stuck), the oldest is decided with what it has, and the log names the
partitions without a final word: memory stays bounded and decisions keep coming.

A progress record is held to the limits of an event (`monitor.limits`): one whose `at_ms`
is past the clock plus `events.max_future`, or past its record timestamp plus
`windows.max_clock_skew`, is refused: logged, counted by `refused`, and handed to the
`refused` callback (the service dead-letters it). Taken, it would stand as its partitions'
newest record until honest ones caught up with its claimed time: every window forced, a
`max_pending`-window lag, for as long as the claim reached.

After a restart the ledger is filled from the topic's tail (`restoring=True`): there, a
window whose shares cover every partition also counts as whole (a single instance's, or one
whose progress records are older than the tail read), and every window up to the newest
whole one is handed out, for the silent restore of the alert baselines.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from monitor.checkpoint.progress import ProgressRecord, share_start
from monitor.checkpoint.share import WindowShare, WindowsRecord
from monitor.comparisons.record import ComparisonRecord
from monitor.limits import DEFAULT_LIMITS, RecordLimits
from monitor.logs import fields

__all__ = ["DEFAULT_MAX_PENDING", "ShareLedger", "WholeWindow"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_PENDING = 32  # windows waiting for a final word before the oldest is forced

WindowId = tuple[str, int]  # (window label, start ms): what a share's key begins with


@dataclass
class WholeWindow:
    """One window's shares, every segment, from every member; `missing`: partitions that
    gave no final word (a forced window only)."""

    start_ms: int
    end_ms: int
    shares: list[WindowShare] = field(default_factory=list)
    missing: frozenset[int] = frozenset()


def _window_of_key(key: str) -> WindowId:
    return share_start(key)


class ShareLedger:
    """Collects the group's records; `whole()` hands out the windows every member finished."""

    def __init__(
        self,
        partitions: frozenset[int],
        *,
        max_pending: int = DEFAULT_MAX_PENDING,
        limits: RecordLimits = DEFAULT_LIMITS,
        now_ms: Callable[[], int] | None = None,
        refused: Callable[[ProgressRecord, str], None] | None = None,
        forced: Callable[[str], None] | None = None,
    ):
        """`now_ms`: the clock a progress record's time is held to (None: not held);
        `refused(record, reason)` is told of each refused record, `forced(reason)` of each
        window decided without every member's final word: `partition_silent` (a partition
        without a final word on it) or `share_unread` (a share named but not read)."""
        self.partitions = partitions  # every partition of the events topic
        self.max_pending = max_pending
        self._limits = limits
        self._now_ms = now_ms
        self._refused = refused
        self._forced = forced
        self.refused = 0  # progress records refused for their time
        self._progress: dict[int, ProgressRecord] = {}  # newest per events partition
        self._shares: dict[WindowId, dict[bytes, WindowShare]] = {}
        self._expected: dict[WindowId, set[bytes]] = {}
        self._decided: tuple[int, int] | None = None  # (end, start) of the newest handed out
        self._comparisons: dict[str, ComparisonRecord] = {}
        self.late_shares = 0  # shares read after their window was decided

    def take(self, record: WindowsRecord) -> None:
        """One record read from the windows topic, in any order."""
        if isinstance(record, ProgressRecord):
            self._take_progress(record)
        elif isinstance(record, ComparisonRecord):
            if record.partitions is not None and record.partitions >= self.partitions:
                newest = self._comparisons.get(record.name)
                if newest is None or record.start_ms > newest.start_ms:
                    self._comparisons[record.name] = record
        else:
            self._take_share(record)

    def take_all(self, records: Iterable[WindowsRecord]) -> None:
        for record in records:
            self.take(record)

    def comparison_records(self) -> list[ComparisonRecord]:
        """The newest group-wide record of each comparison (one that covers every partition)."""
        return sorted(self._comparisons.values(), key=lambda record: record.name)

    @property
    def pending(self) -> int:
        """Windows read but not yet whole."""
        return len(self._shares)

    def whole(self, *, restoring: bool = False) -> list[WholeWindow]:
        """The windows now whole, oldest first, each handed out once (module docstring)."""
        ordered = sorted((self._span(window), window) for window in self._shares)
        if restoring:
            newest = max(
                (i for i, (span, window) in enumerate(ordered) if self._whole(window, span, True)),
                default=-1,
            )
            return [self._hand_out(window, span) for span, window in ordered[: newest + 1]]
        ready: list[WholeWindow] = []
        for index, (span, window) in enumerate(ordered):
            if not self._waits_behind(window, span[1]) and self._whole(window, span, False):
                ready.append(self._hand_out(window, span))
            elif len(ordered) - index > self.max_pending:
                ready.append(self._hand_out(window, span, forced=True))
            else:
                break
        return ready

    def _waits_behind(self, window: WindowId, start: int) -> bool:
        """Whether a window starting no later still waits for a share named to it."""
        return any(
            keys and other != window and other[1] <= start for other, keys in self._expected.items()
        )

    def _span(self, window: WindowId) -> tuple[int, int]:
        share = next(iter(self._shares[window].values()))
        return share.summary.end_ms, share.summary.start_ms

    def _whole(self, window: WindowId, span: tuple[int, int], restoring: bool) -> bool:
        if self._expected.get(window):
            return False
        if not self._unclosed(span[0]):
            return True
        if not restoring:
            return False
        covered: set[int] = set()
        for share in self._shares[window].values():
            if share.partitions is None:
                return True
            covered |= share.partitions
        return covered >= self.partitions

    def _hand_out(
        self, window: WindowId, span: tuple[int, int], forced: bool = False
    ) -> WholeWindow:
        end, start = span
        shares = list(self._shares.pop(window).values())
        unread = self._expected.pop(window, set())
        missing = self._unclosed(end) if forced else frozenset()
        if forced:
            if self._forced is not None:
                self._forced("partition_silent" if missing else "share_unread")
            _log.warning(
                "window decided without every member's final word: too many windows waiting",
                extra=fields(
                    window=shares[0].summary.window,
                    start_ms=start,
                    partitions_without_final_word=sorted(missing),
                    shares_not_read=len(unread),
                    waiting=len(self._shares) + 1,
                ),
            )
        self._decided = max(self._decided or span, span)
        for done in [w for w in self._expected if w[1] <= start]:
            del self._expected[done]
        return WholeWindow(start, end, shares, missing)

    def _unclosed(self, end_ms: int) -> frozenset[int]:
        """The partitions whose newest progress record does not close a window ending then."""
        return frozenset(
            p
            for p in self.partitions
            if p not in self._progress or not self._progress[p].closes(end_ms)
        )

    def _take_progress(self, record: ProgressRecord) -> None:
        if self._now_ms is not None and self._refuse(record, self._now_ms()):
            return
        for partition in record.partitions & self.partitions:
            newest = self._progress.get(partition)
            if newest is None or record.at_ms >= newest.at_ms:
                self._progress[partition] = record
        for key in record.shares:
            encoded = key.encode()
            window = _window_of_key(key)
            if encoded in self._shares.get(window, {}) or self._is_decided_start(window):
                continue
            self._expected.setdefault(window, set()).add(encoded)

    def _refuse(self, record: ProgressRecord, now_ms: int) -> bool:
        """Whether the record claims the future, in its own time or a window it names
        (a window named ahead would wait for a share that never comes); if so it is refused:
        counted, logged and handed to the `refused` callback."""
        limits = self._limits
        refusal = limits.time_refusal(record.at_ms, record.record_ms, now_ms)
        if refusal is not None:
            refusal = f"its time is {refusal}"
        elif any(share_start(key)[1] > now_ms + limits.max_future_ms for key in record.shares):
            refusal = "it names a window past events.max_future ahead of now"
        else:
            return False
        self.refused += 1
        if self._refused is not None:
            self._refused(record, "progress_in_future")
        _log.warning(
            "progress record refused: %s",
            refusal,
            extra=fields(key=record.key.decode()[:200], at_ms=record.at_ms),
        )
        return True

    def _take_share(self, share: WindowShare) -> None:
        summary = share.summary
        window = (summary.window, summary.start_ms)
        if self._is_decided_start(window):
            self.late_shares += 1
            _log.debug("share of a decided window", extra=fields(key=share.key.decode()[:200]))
            return
        self._shares.setdefault(window, {})[share.key] = share
        expected = self._expected.get(window)
        if expected is not None:
            expected.discard(share.key)

    def _is_decided_start(self, window: WindowId) -> bool:
        """Whether the window starts no later than the newest one handed out."""
        return self._decided is not None and window[1] <= self._decided[1]
