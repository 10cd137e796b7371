"""`GroupPart`: this instance's part in its consumer group's decisions, tick by tick.

The service asks for the role at each rebalance (`group_role`) and calls, each tick, `decide`
with the windows it finalized and `report` after its publish:

| role | decide | report |
|---|---|---|
| `alone` | the alert rules and comparisons on its own windows (it owns every partition) | nothing |
| `decides` | the group's whole windows, from the windows topic (`GroupDecider`) | its progress |
| `member` | nothing | its progress |

A member that stops deciding forgets its alerts and comparisons: their series leave its
/metrics, and it stops re-sending its firing alerts, which the new decider restores and sends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from monitor.alerting.delivery import AlertDelivery
from monitor.alerting.engine import AlertEngine
from monitor.checkpoint.comparisons import ComparisonPublisher
from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.protocol import Checkpoint, Retry
from monitor.checkpoint.publisher import ProgressPublisher
from monitor.checkpoint.restore import ShareReader
from monitor.checkpoint.share import WindowsRecord
from monitor.comparisons.engine import ComparisonEngine
from monitor.export.exporter import Exporter
from monitor.group.decider import ALONE, DECIDES, MEMBER, GroupDecider, Role
from monitor.group.ledger import ShareLedger
from monitor.ingest.handoff import RejectSink
from monitor.limits import DEFAULT_LIMITS, RecordLimits
from monitor.windows.summary import WindowSummary

__all__ = ["WINDOWS_OUTCOME", "GroupPart"]

WINDOWS_OUTCOME = "windows"  # the dead-letter outcome of a refused windows-topic record


class GroupPart:
    """Holds the role, the progress publisher and, when deciding, the `GroupDecider`."""

    def __init__(
        self,
        *,
        alerts: AlertEngine,
        delivery: AlertDelivery,
        exporter: Exporter,
        comparisons: ComparisonEngine,
        comparison_records: ComparisonPublisher | None,
        checkpoint: Checkpoint,
        progress: ProgressPublisher,
        windows_topic: ShareReader,
        retry: Retry,
        limits: RecordLimits = DEFAULT_LIMITS,
        now_ms: Callable[[], int] | None = None,
        dead_letters: RejectSink | None = None,
    ) -> None:
        """`limits` and `now_ms`: what the group's progress records are held to; a refused
        one is counted and sent to `dead_letters`."""
        self.role: Role = ALONE
        self._limits = limits
        self._now_ms = now_ms
        self._dead_letters = dead_letters
        self.decider: GroupDecider | None = None
        self._fresh = False  # the decider has not restored from the windows topic yet
        self._alerts = alerts
        self._delivery = delivery
        self._exporter = exporter
        self._comparisons = comparisons
        self._comparison_records = comparison_records
        self._checkpoint = checkpoint
        self._progress = progress
        self._windows_topic = windows_topic
        self._retry = retry

    def take(self, role: Role, partitions: frozenset[int], now_elapsed_ms: int) -> bool:
        """Become `role`; `partitions`: every partition of the events topic. False: stopping
        before the windows topic could be followed."""
        before, self.role = self.role, role
        self._checkpoint.compare_locally = role == ALONE
        self._progress.forget()
        if role == before and (role != DECIDES or self.decider is not None):
            return True
        if self.decider is not None and role != DECIDES:
            self.decider.close()
            self.decider = None
        if role == MEMBER:
            self._alerts.reset(now_elapsed_ms)
            self._delivery.hand_over()
            self._exporter.stand_down()
            self._comparisons.restore([])
            if self._comparison_records is not None:
                self._comparison_records.drop()
        if role == DECIDES and self.decider is None:
            return self._retry(lambda: self._follow(partitions), "follow the windows topic")
        return True

    def restoring(self) -> Callable[[WindowsRecord], None] | None:
        """What sees the records of the assignment's restore: a decider new to the role."""
        return self.decider.take if self._fresh and self.decider is not None else None

    def restore(self) -> None:
        """After the assignment's restore: a decider new to the role continues from it."""
        if self._fresh and self.decider is not None:
            self.decider.restore()
        self._fresh = False

    def read(self) -> None:
        """Between ticks: the decider takes what the group published (never waits)."""
        if self.decider is not None:
            self.decider.read()

    def decide(self, summaries: Sequence[WindowSummary], now_ms: int, elapsed_ms: int) -> None:
        """A tick's decisions (module docstring), and the stale rules where this decides."""
        if self.role == ALONE:
            self._alerts.observe(summaries, now_ms, elapsed_ms=elapsed_ms)
            compared = self._comparisons.drain()
            for record in compared:
                self._exporter.latest.record_comparison(record)
            self._alerts.observe_comparisons(compared, now_ms)
        elif self.decider is not None:  # it read the topic in the step that runs this tick
            self.decider.decide(now_ms, elapsed_ms)
        if self.role != MEMBER:
            self._alerts.tick(now_ms, elapsed_ms=elapsed_ms)

    def report(
        self, owned: frozenset[int], watermark_ms: int | None, quiet: bool, now_ms: int
    ) -> None:
        """In a group, what this member has finalized, for the decider: sent only after the
        publish acknowledged every share it names."""
        acked = self._checkpoint.take_acked()
        if self.role == ALONE:
            return
        self._progress.published(acked)
        if self._checkpoint.published:
            self._progress.report(owned, watermark_ms, quiet, now_ms)

    def close(self) -> None:
        if self.decider is not None:
            self.decider.close()
            self.decider = None

    def _refuse(self, record: ProgressRecord, reason: str) -> None:
        """A progress record refused for its time: counted, and dead-lettered."""
        self._exporter.count_refused("windows", reason)
        if self._dead_letters is not None and record.read_from is not None:
            detail = f"progress record at_ms {record.at_ms} refused for an event's limits"
            self._dead_letters.reject(record.read_from, WINDOWS_OUTCOME, reason, detail)

    def _follow(self, partitions: frozenset[int]) -> bool:
        self.decider = GroupDecider(
            ShareLedger(
                partitions,
                limits=self._limits,
                now_ms=self._now_ms,
                refused=self._refuse,
                forced=self._exporter.control.count_forced_decision,
            ),
            self._windows_topic.tail(),
            self._alerts,
            self._comparison_records,
            self._exporter.latest.record_comparison,
        )
        self._fresh = True
        return True
