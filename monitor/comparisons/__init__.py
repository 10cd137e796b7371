"""Segment-versus-segment comparisons on every finalized window (the deployment gate).

Enters: the finalized summaries of a tick with their partitions (`ComparisonEngine.observe`),
and on restart the newest comparison records read back from the windows topic.
Leaves: one `ComparisonRecord` per comparison and window (paired delta, interval, p-value,
effect size, common queries per measure, and the always-valid sequence), which the
checkpoint publishes to the windows topic before the window's shares, the exporter turns
into `rankmon_comparison_*` gauges and the alert rules' `comparison` condition judges.
"""

from monitor.comparisons.engine import ComparisonEngine, FinalizedShare
from monitor.comparisons.pairing import Pairing, matches, pair_window
from monitor.comparisons.record import ComparisonRecord, MeasureComparison
from monitor.comparisons.settings import ComparisonConfig

__all__ = [
    "ComparisonConfig",
    "ComparisonEngine",
    "ComparisonRecord",
    "FinalizedShare",
    "MeasureComparison",
    "Pairing",
    "matches",
    "pair_window",
]
