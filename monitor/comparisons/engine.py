"""`ComparisonEngine`: every configured comparison on every finalized window.

Per window (all the segments' summaries of it) and comparison, per measure:

1. pair the units both sides served (`pairing.pair_window`);
2. no verdict (NaN, with a note) below `min_queries` common units or under the coverage or
   judged@k floors;
3. otherwise the paired statistics (`monitor.stats.paired_comparison`: t interval, sign-flip
   permutation p-value, effect size) and, for windows that do not overlap the last one
   taken and start at or after `since`, each unit's difference into its moments
   (`monitor.stats.query_units`) and one more step of the live-traffic sequence
   (`MixtureSequence.add_window`); a changed definition starts them again, and so does a new
   evaluation-set version, unless it is the judging loop's next one (`carries`): then they
   go on. Both sides of a window are scored with its one version, so with no difference
   between them every window's differences have mean 0 whatever the version, and the
   sequence's false-alarm bound holds over the versions; starting it again at each of the
   loop's versions gave it a fresh chance each time (bench/validity.py, scenario 8). A
   person's reload (another file) starts it again, and the log says so;
4. the design of the window (`replay` when at least half its common units were compared in
   an earlier window, for `design: auto`) and the intervals: on these units (`set_*`) and
   in the population (`population_*`: the fixed-set interval in a replay, the sequence on
   live traffic), at the comparison's confidence; alerts take them at the family's level
   (`MeasureComparison.decision`), the family being every comparison's measures.

A window at or before the newest one a comparison has seen (after a restore: the newest
published) is skipped, so a replay after a crash counts no window twice.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

from monitor.comparisons.pairing import Pairing, pair_window
from monitor.comparisons.record import ComparisonRecord, MeasureComparison
from monitor.comparisons.settings import ComparisonConfig
from monitor.logs import fields
from monitor.stats.paired import PairedResult, paired_comparison
from monitor.stats.query_units import UnitMoments, add_difference, fixed_set_intervals
from monitor.stats.sequence import MixtureSequence, SequenceState
from monitor.windows.summary import WindowSummary

__all__ = ["ComparisonEngine", "FinalizedShare"]

_log = logging.getLogger(__name__)

# A finalized summary and the partitions its events came from (None: unknown).
FinalizedShare = tuple[WindowSummary, frozenset[int] | None]


@dataclass
class _Track:
    """One comparison's measure: its sequence and units, for the fingerprint and version
    they hold, and the design of the newest window taken."""

    fingerprint: str
    version: str
    state: SequenceState
    units: Mapping[str, UnitMoments] = field(default_factory=dict)  # replaced, never changed
    design: str = "live"


class ComparisonEngine:
    """Holds each comparison's sequences; `observe` the finalized windows, oldest first."""

    def __init__(self, comparisons: Sequence[ComparisonConfig], *, own_pools: bool = False) -> None:
        self.comparisons = tuple(comparisons)
        # `judgments.inline: fill` scores each event against its own pool (the evaluation
        # set plus that event's inline grades): the two sides of a query are normalised by
        # different ideal rankings, so their difference is not candidate - baseline.
        self.own_pools = own_pools
        self.family = max(1, sum(len(c.measures) for c in self.comparisons))
        self._tracks: dict[tuple[str, str], _Track] = {}
        # Whether a new evaluation-set version is the judging loop's next one of the old
        # (`JudgedRescore.lineage`): the sequences carry on across it. None: none does.
        self.carries: Callable[[str, str], bool] | None = None
        self._newest: dict[str, int] = {}  # comparison -> newest window start seen
        self._fresh: list[ComparisonRecord] = []

    def observe(self, finalized: Iterable[FinalizedShare]) -> list[ComparisonRecord]:
        """The records of the windows among `finalized` (kept for `drain` too)."""
        if not self.comparisons:
            return []
        records: list[ComparisonRecord] = []
        ordered = sorted(finalized, key=lambda item: (item[0].end_ms, item[0].start_ms))
        for (window, start, end), group in groupby(ordered, _window_of):
            shares = list(group)
            summaries = [summary for summary, _ in shares]
            partitions = _union(parts for _, parts in shares)
            for comparison in self.comparisons:
                if self._newest.get(comparison.name, -1) >= start:
                    continue
                self._newest[comparison.name] = start
                measures = tuple(
                    self._measure(comparison, measure, summaries, start, end)
                    for measure in comparison.measures
                )
                records.append(
                    ComparisonRecord(comparison.name, window, start, end, measures, partitions)
                )
        self._fresh += records
        return records

    def drain(self) -> list[ComparisonRecord]:
        """The records observed since the last drain (the service sets gauges and alerts)."""
        fresh, self._fresh = self._fresh, []
        return fresh

    def restore(self, records: Iterable[ComparisonRecord]) -> list[ComparisonRecord]:
        """Continue from the newest record of each comparison (read back from the windows
        topic before a replay), forgetting what was computed since; returns those used."""
        self._tracks.clear()
        self._newest.clear()
        self._fresh = []
        newest: dict[str, ComparisonRecord] = {}
        for record in records:
            if record.name not in newest or record.start_ms > newest[record.name].start_ms:
                newest[record.name] = record
        configured = {c.name: c for c in self.comparisons}
        used = []
        for name, record in newest.items():
            comparison = configured.get(name)
            if comparison is None:
                continue
            self._newest[name] = record.start_ms
            for measure in record.measures:
                if measure.fingerprint == comparison.fingerprint(measure.measure):
                    track = _Track(
                        measure.fingerprint,
                        measure.version,
                        measure.sequence,
                        measure.units,
                        measure.design,
                    )
                    self._tracks[(name, measure.measure)] = track
            used.append(record)
        return used

    def _measure(
        self,
        comparison: ComparisonConfig,
        measure: str,
        summaries: Sequence[WindowSummary],
        start: int,
        end: int,
    ) -> MeasureComparison:
        pairing = pair_window(summaries, comparison, measure)
        version = pairing.version if pairing else summaries[0].evaluation_set_version
        track = self._track(comparison, measure, version)
        sequence = MixtureSequence(comparison.alpha, comparison.tau)
        result, note = _paired(comparison, pairing, own_pools=self.own_pools)
        if (
            pairing is not None
            and result.queries
            and not note
            and start >= comparison.since_ms
            and start >= track.state.last_end_ms
        ):
            track.design = _design(comparison.design, track.units, pairing.units)
            track.state = sequence.add_window(
                track.state,
                pairing.differences,
                start_ms=start,
                end_ms=end,
                burn_in=comparison.burn_in,
            )
            # a new mapping per window taken: the records keep theirs, unchanged, unshared
            units = dict(track.units)
            for unit, difference in zip(pairing.units, pairing.differences.tolist(), strict=True):
                add_difference(units, unit, difference)
            track.units = units
        lower, upper = sequence.interval(track.state)
        fixed = fixed_set_intervals(track.units, comparison.alpha)
        if track.design == "replay":
            population = fixed.population_lower, fixed.population_upper
        else:
            population = lower, upper
        if note:
            _log.debug(
                "comparison without a verdict",
                extra=fields(comparison=comparison.name, measure=measure, why=note),
            )
        return MeasureComparison(
            measure=measure,
            result=result,
            baseline_mean=pairing.baseline_mean if pairing and not note else float("nan"),
            candidate_mean=pairing.candidate_mean if pairing and not note else float("nan"),
            version=version,
            note=note,
            sequence=track.state,
            sequence_lower=lower,
            sequence_upper=upper,
            fingerprint=track.fingerprint,
            design=track.design,
            units=track.units,
            set_lower=fixed.set_lower,
            set_upper=fixed.set_upper,
            population_lower=population[0],
            population_upper=population[1],
            replay_stderr=fixed.replay_stderr,
            min_detectable=fixed.min_detectable,
            alpha=comparison.alpha,
            family=self.family,
            tau=comparison.tau,
        )

    def _track(self, comparison: ComparisonConfig, measure: str, version: str) -> _Track:
        fingerprint = comparison.fingerprint(measure)
        track = self._tracks.get((comparison.name, measure))
        if track is not None and track.fingerprint == fingerprint and track.version != version:
            if self.carries is not None and self.carries(track.version, version):
                track.version = version  # the judging loop's next judgments: it goes on
                return track
            _log.info(
                "a new evaluation set: the comparison's sequence starts again",
                extra=fields(
                    comparison=comparison.name, measure=measure, old=track.version, new=version
                ),
            )
        if track is None or track.fingerprint != fingerprint or track.version != version:
            track = _Track(fingerprint, version, SequenceState())
            self._tracks[(comparison.name, measure)] = track
        return track


OWN_POOLS_NOTE = (
    "judgments.inline: fill scores each event against its own judgment pool, so the two "
    "sides of a query are normalised by different ideal rankings: no verdict"
)


def _design(configured: str, seen: Mapping[str, UnitMoments], units: Sequence[str]) -> str:
    """The window's design: as configured, or for `auto` replay when at least half of its
    units were compared before."""
    if configured != "auto":
        return configured
    repeats = sum(1 for unit in units if unit in seen)
    return "replay" if units and 2 * repeats >= len(units) else "live"


def _paired(
    comparison: ComparisonConfig, pairing: Pairing | None, *, own_pools: bool
) -> tuple[PairedResult, str]:
    """The window's statistics, or no verdict and why (`own_pools`: `OWN_POOLS_NOTE`)."""
    if pairing is None:
        return PairedResult.undefined(), "one side served no query in this window"
    n = int(pairing.differences.size)
    if n < max(2, comparison.min_queries):
        return PairedResult.undefined(
            n
        ), f"only {n} common queries (min_queries {comparison.min_queries})"
    if pairing.coverage < comparison.min_coverage:
        note = f"coverage {pairing.coverage:.0%} under min_coverage {comparison.min_coverage:.0%}"
        return PairedResult.undefined(n), note
    if math.isfinite(pairing.judged) and pairing.judged < comparison.min_judged:
        note = f"judged@k {pairing.judged:.0%} under min_judged {comparison.min_judged:.0%}"
        return PairedResult.undefined(n), note
    if own_pools:
        return PairedResult.undefined(n), OWN_POOLS_NOTE
    result = paired_comparison(
        pairing.differences,
        test="permutation",
        confidence=comparison.confidence,
        draws=comparison.draws,
    )
    return result, ""


def _window_of(item: FinalizedShare) -> tuple[str, int, int]:
    summary = item[0]
    return summary.window, summary.start_ms, summary.end_ms


def _union(partitions: Iterable[frozenset[int] | None]) -> frozenset[int] | None:
    merged: set[int] = set()
    for parts in partitions:
        if parts is None:
            return None
        merged |= parts
    return frozenset(merged)
