"""What an assigned instance learns from the windows topic's shares (`ShareRestore`).

Whenever a partition is assigned to it (the first assignment included), the instance reads
the topic's tail back (`monitor.checkpoint.share_reader.read_shares`) and:

- marks every share as published, for its partitions (`EventWindows.mark_published`): the
  replay from the committed offsets then skips the events and summaries already published,
  by this instance before a crash or by the partition's previous owner; a replayed event of a
  published window at or past the through offset came after the window closed: it is late
  again (and dead-lettered again, in case that was lost in the crash). The offsets are in a
  header, not the value: the value is what an uninterrupted run publishes, byte for byte;
- restores the alert baselines from the shares whose partitions it now owns entirely: those
  are the windows its own alert engine would have seen. Another instance's share is a
  different population of queries and would make a false baseline.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Protocol

from monitor.checkpoint.progress import ProgressRecord
from monitor.checkpoint.share import WindowsRecord
from monitor.checkpoint.share_reader import RestoreNeeds
from monitor.comparisons.record import ComparisonRecord
from monitor.windows.engine import EventWindows
from monitor.windows.segments import LabelState
from monitor.windows.spec import NO_BOUNDARY, Epoch, WindowSpec, align_up
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["RecordTail", "ShareReader", "ShareRestore"]


class RecordTail(Protocol):
    """Follows the windows topic from where it began (`monitor.checkpoint.tail`)."""

    def poll(self) -> list[WindowsRecord]: ...

    def close(self) -> None: ...


class ShareReader(Protocol):
    """Reads shares back for a restore, and follows the topic for the group's decider:
    `WindowsTopic`, or a fake in tests."""

    def read(
        self, take: Callable[[WindowsRecord], None], needs: RestoreNeeds | None = None
    ) -> None: ...

    def tail(self) -> RecordTail: ...


class ShareRestore:
    """Takes shares one by one as they are read back: marks each published and keeps, per
    segment, the newest `keep` owned ones for the alert restore.

    It also learns, from the shares of partitions now owned, what the replay continues from:
    the window spec they were published with (`epochs`: windows.size or hop changed across
    the restart) and the segment labels of the newest one (`label_state`).

    A share with its per-query means weighs about 130 KB for 300 queries: holding the whole
    topic at once grew a restarted soak instance by 60 MB, in proportion to the topic's size.
    Alert baselines need only their last windows, and only the measures their rules watch:
    with `measures`, a kept summary's per-query means are cut down to those.
    """

    def __init__(
        self,
        windows: EventWindows,
        owned: Collection[int],
        keep: int = 64,
        measures: Collection[str] | None = None,
    ) -> None:
        self._windows = windows
        self._owned = frozenset(owned)
        self._keep = keep
        self._measures = None if measures is None else frozenset(measures)
        self.read = 0
        # per segment, the newest `keep` owned summaries (a min-heap on the start: shares
        # may come in any order)
        self._own: dict[Segment, list[tuple[int, int, WindowSummary]]] = {}
        self._arrival = itertools.count()
        # (size, hop) -> (newest start, window label), over shares touching owned partitions
        self._specs: dict[tuple[int, int], tuple[int, str]] = {}
        self._newest: tuple[int, LabelState | None] | None = None
        self._comparisons: dict[str, ComparisonRecord] = {}

    def take(self, share: WindowsRecord) -> None:
        """Mark one share published; keep it for the alerts if this instance owns it. Of
        the comparison records, keep the newest owned one of each comparison; progress
        records are for the group's decider (`monitor.group`)."""
        if isinstance(share, ProgressRecord):
            return
        if isinstance(share, ComparisonRecord):
            newest = self._comparisons.get(share.name)
            if share.owned_by(self._owned) and (newest is None or share.start_ms > newest.start_ms):
                self._comparisons[share.name] = share
            return
        summary = share.summary
        self._windows.mark_published(summary, share.partitions, share.through)
        self.read += 1
        if share.partitions is None or share.partitions & self._owned:
            self._learn(summary)
        if self._keep and share.owned_by(self._owned):
            kept = self._own.setdefault(summary.segment, [])
            item = (summary.start_ms, next(self._arrival), self._cut(summary))
            if len(kept) < self._keep:
                heapq.heappush(kept, item)
            elif item[0] >= kept[0][0]:
                heapq.heapreplace(kept, item)

    def _learn(self, summary: WindowSummary) -> None:
        spec = (summary.end_ms - summary.start_ms, summary.hop)
        newest, _ = self._specs.get(spec, (summary.start_ms, ""))
        self._specs[spec] = (max(newest, summary.start_ms), summary.window)
        if self._newest is None or summary.start_ms > self._newest[0]:
            labels = summary.segment_labels
            self._newest = (summary.start_ms, LabelState.from_json(labels) if labels else None)

    def label_state(self) -> LabelState | None:
        """The segment labels after the newest window published for an owned partition."""
        return None if self._newest is None else self._newest[1]

    def epochs(self, current: Epoch) -> list[Epoch]:
        """The epochs the replay windows events by: `current` alone, unless the newest window
        published for an owned partition had another size or hop. Then that spec holds the
        events until the first start of `current`'s spec after its newest window, and
        `current` from there (`monitor.windows.spec.Epoch`)."""
        if not self._specs:
            return [current]
        spec = current.spec
        (size, hop), (start, label) = max(self._specs.items(), key=lambda item: item[1][0])
        if (size, hop) == (spec.size_ms, spec.hop_ms):
            return [current]
        before = WindowSpec(size, hop, spec.allowed_lateness_ms, spec.idle_timeout_ms, label=label)
        boundary = align_up(start + hop, spec.hop_ms)
        return [
            Epoch(NO_BOUNDARY, before, current.version, current.set_queries),
            Epoch(boundary, spec, current.version, current.set_queries),
        ]

    def _cut(self, summary: WindowSummary) -> WindowSummary:
        keep = self._measures
        if keep is None:
            return summary
        query_means = {
            query: {k: means[k] for k in keep if k in means}
            for query, means in summary.query_means.items()
        }
        return replace(summary, query_means=query_means)

    def comparison_records(self) -> list[ComparisonRecord]:
        """The newest owned record of each comparison, for `ComparisonEngine.restore`."""
        return sorted(self._comparisons.values(), key=lambda record: record.name)

    def owned_summaries(self) -> list[WindowSummary]:
        """The kept summaries, oldest window first, for `AlertEngine.restore`."""
        kept = sorted(item for items in self._own.values() for item in items)
        return [summary for _, _, summary in kept]
