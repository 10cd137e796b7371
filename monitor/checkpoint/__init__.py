"""Checkpoint: window shares on the windows topic, and what a restart learns from them.

Enters: finalized `WindowSummary`s of this instance's partitions. Leaves: one share record
per window, segment and partition set on the windows topic (published before the commit
that passes the window), and on assignment the restore: marks of published windows, label
states, epochs, and the shares the alert rules need (`merge`).
"""

from __future__ import annotations

from monitor.checkpoint.publisher import SharePublisher
from monitor.checkpoint.restore import ShareRestore
from monitor.checkpoint.share import WindowShare
from monitor.checkpoint.share_reader import read_shares

__all__ = ["SharePublisher", "ShareRestore", "WindowShare", "read_shares"]
