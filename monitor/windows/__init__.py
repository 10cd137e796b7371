"""Windows: scored events in event-time windows, one `WindowSummary` per window and segment.

Enters: each poll's scored events (columns: event ids, query rows, event times, partitions,
offsets, raw segment values, measure rows). Leaves: when the watermark (or a quiet stream)
passes a window, its `WindowSummary` per segment label; the offsets that are safe to commit;
the marks of windows already published, so a replay skips them.
"""

from __future__ import annotations

from monitor.windows.engine import EventWindows
from monitor.windows.segments import SegmentLabeler
from monitor.windows.spec import WindowSpec
from monitor.windows.summary import Segment, WindowSummary

__all__ = ["EventWindows", "Segment", "SegmentLabeler", "WindowSpec", "WindowSummary"]
