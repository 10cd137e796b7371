"""`GroupDecider`: the comparisons and alert rules of a consumer group, decided once.

Members of one group each own some partitions of the events topic, and each publishes its
share of every window (`monitor.checkpoint.share`). Judged per member, each rule would run
once per member on a part of the queries: as many tests as members, each with less power,
and alerts that depend on the partition count. So one member decides for all: the owner of
the events topic's first partition. The group's assignment chooses it, and a rebalance hands
the role over when it leaves or dies.

The decider follows the windows topic (`monitor.checkpoint.windows_topic.WindowsTail`), keeps
every member's shares in a `ShareLedger` until a window is whole, merges them
(`monitor.windows.merge`: the per-query means of disjoint partitions, exactly) and runs,
on the merged windows, what a single instance runs on its own: the alert rules, the
comparisons, their records on the windows topic and their gauges. The other members publish
their shares and progress and decide nothing.

Taking over: the new decider's restore reads the windows topic's tail into its ledger. The
comparisons continue from their newest group-wide record (one that covers every partition);
the alert rules' baselines are rebuilt silently from the whole windows read back, as on a
single instance's restart, and firing alerts are handed to delivery again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from monitor.alerting.engine import AlertEngine
from monitor.checkpoint.comparisons import ComparisonPublisher
from monitor.checkpoint.restore import RecordTail
from monitor.checkpoint.share import WindowShare, WindowsRecord
from monitor.comparisons.record import ComparisonRecord
from monitor.group.ledger import ShareLedger, WholeWindow
from monitor.logs import fields
from monitor.windows.merge import merge_window_shares
from monitor.windows.summary import WindowSummary

__all__ = ["ALONE", "DECIDES", "MEMBER", "GroupDecider", "Role", "group_role"]

_log = logging.getLogger(__name__)


Role = Literal["alone", "decides", "member"]
ALONE: Role = "alone"  # owns every partition: decides on its own windows, as it finalizes them
DECIDES: Role = "decides"  # owns the first partition of several: decides for the group
MEMBER: Role = "member"  # publishes its shares and progress, decides nothing


def group_role(partitions: frozenset[int] | None, owned: frozenset[int]) -> Role:
    """This member's part in the group's decisions, from every partition of the events topic
    (None: unknown, then as if alone) and those it owns."""
    if not partitions or partitions <= owned:
        return ALONE
    return DECIDES if min(partitions) in owned else MEMBER


class GroupDecider:
    """Follows the group's records and decides each whole window once (module docstring)."""

    def __init__(
        self,
        ledger: ShareLedger,
        tail: RecordTail,
        alerts: AlertEngine,
        comparisons: ComparisonPublisher | None,
        record_comparison: Callable[[ComparisonRecord], None],
    ) -> None:
        self.ledger = ledger
        self._tail = tail
        self._alerts = alerts
        self._comparisons = comparisons
        self._record_comparison = record_comparison
        self.decided = 0  # windows decided (restored ones included)

    def read(self) -> None:
        """Take what the group published since the last read (never waits)."""
        self.ledger.take_all(self._tail.poll())

    def take(self, record: WindowsRecord) -> None:
        """A record of the restore's read-back."""
        self.ledger.take(record)

    def restore(self) -> None:
        """After the read-back: continue the comparisons from their newest group-wide
        records and rebuild the alert baselines from the whole windows, silently."""
        windows = [_merged(window) for window in self.ledger.whole(restoring=True)]
        restored: list[ComparisonRecord] = []
        if self._comparisons is not None:
            restored = self._comparisons.engine.restore(self.ledger.comparison_records())
        self._alerts.restore(summary for summaries in windows for summary in summaries)
        compared = restored + self._compare(windows)
        for record in compared:
            self._record_comparison(record)
        self._alerts.observe_comparisons(compared, 0, restoring=True)
        self.decided += len(windows)
        _log.info(
            "deciding for the group",
            extra=fields(
                partitions=sorted(self.ledger.partitions),
                windows_restored=len(windows),
                windows_waiting=self.ledger.pending,
                comparisons_restored=len(restored),
            ),
        )

    def decide(self, now_ms: int, elapsed_ms: int) -> list[WindowSummary]:
        """Decide every window now whole; returns their merged summaries."""
        windows = [_merged(window) for window in self.ledger.whole()]
        for summaries in windows:
            self._alerts.observe(summaries, now_ms, elapsed_ms=elapsed_ms)
        compared = self._compare(windows)
        for record in compared:
            self._record_comparison(record)
        self._alerts.observe_comparisons(compared, now_ms)
        self.decided += len(windows)
        return [summary for summaries in windows for summary in summaries]

    def close(self) -> None:
        self._tail.close()

    def _compare(self, windows: list[list[WindowSummary]]) -> list[ComparisonRecord]:
        """The comparisons of these merged windows, published (held and retried if the
        broker does not acknowledge them)."""
        publisher = self._comparisons
        if publisher is None:
            return []
        partitions = self.ledger.partitions
        for summaries in windows:
            publisher.add([WindowShare(summary, partitions) for summary in summaries])
        publisher.publish()
        return publisher.engine.drain()


def _merged(window: WholeWindow) -> list[WindowSummary]:
    """The window's shares merged: one summary per segment over every member's queries."""
    return merge_window_shares(share.summary for share in window.shares)
