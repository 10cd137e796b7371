"""What `rankmon eval -m` asked for: trec_eval's measures in print order, and which engine
computes each value.

The measures the streaming monitor computes too (nDCG, P, recall, MAP, MRR, success, Rprec and
the counts) become the scorer's `MeasureKey`s (`keys`); the others are trec_eval families
`monitor.scoring.families` computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from monitor.errors import MeasureError
from monitor.scoring.catalog import (
    KINDS,
    OWN_FAMILY_KINDS,
    TREC_FAMILY_KINDS,
    MeasureKey,
    lookup_depth,
)
from monitor.scoring.gain import LINEAR, Gain
from monitor.trec.report import NUM_Q, RUN_ID, Column
from monitor.trec.table import Requested, request_measures

__all__ = ["MeasureSelection", "select_measures"]


@dataclass(frozen=True)
class MeasureSelection:
    """What `-m` asked for, in print order, and which engine computes each value.

    `keys[name]` is the monitor's measure key of a value the scorer computes; the
    other values' measures are in `requested` too.
    """

    requested: tuple[Requested, ...]
    keys: dict[str, MeasureKey]
    gain: Gain = LINEAR

    @property
    def run_id(self) -> bool:
        return any(r.name == RUN_ID for r in self.requested)

    @property
    def num_q(self) -> bool:
        return any(r.name == NUM_Q for r in self.requested)

    @property
    def columns(self) -> tuple[Column, ...]:
        """Every value to print but runid and num_q, in print order."""
        return tuple(
            Column(name, r.measure.summary, r.measure.per_query, r.measure.count)
            for r in self.requested
            if r.measure.engine != "meta"
            for name in r.value_names
        )

    @property
    def names(self) -> tuple[str, ...]:
        """trec_eval's names of the values (`ndcg_cut_10`, `P_5`, `gm_map`, ...)."""
        return tuple(column.name for column in self.columns)

    @property
    def engine_only(self) -> bool:
        """True when the scorer computes every value (no per-document family)."""
        return bool(self.keys) and not self.family_requests

    @property
    def family_requests(self) -> list[Requested]:
        """The requested measures `monitor.scoring.families` computes (not the scorer)."""
        return [
            r
            for r in self.requested
            if r.measure.engine != "meta" and not set(r.value_names) <= set(self.keys)
        ]

    @property
    def lookup_depth(self) -> int | None:
        """How many leading documents of each ranking the scorer's keys read; None: all."""
        return lookup_depth(self.keys.values())

    def not_averaged(self) -> list[str]:
        """The values that are no per-query mean (counts, geometric means, relstring): they
        cannot be compared or explained query by query."""
        return [c.name for c in self.columns if c.count or c.summary != "mean" or not c.per_query]


def select_measures(names: Sequence[str], gain: Gain = LINEAR) -> MeasureSelection:
    """Parse trec_eval `-m` names (and the groups); unknown ones raise MeasureError.

    `gain` applies to `ndcg` and `ndcg_cut` (trec_eval's own gain is the grade itself).
    """
    requested = request_measures(names)
    keys: dict[str, MeasureKey] = {}
    for r in requested:
        if not _by_monitor(r):
            if r.name == "ndcg" and gain != LINEAR:
                raise MeasureError(
                    f"-m ndcg.{r.params.text} sets the gains itself: it cannot be combined "
                    f"with --gain {gain}"
                )
            continue
        keys.update(zip(r.value_names, _monitor_keys(r, gain), strict=True))
    return MeasureSelection(requested, keys, gain)


def _by_monitor(requested: Requested) -> bool:
    # A measure a kind computes, but not with trec_eval's own gain pairs (`ndcg.1=3,2=9`):
    # those are `monitor.scoring.families`'.
    with_pairs = requested.measure.params == "pairs" and requested.params.text is not None
    return requested.measure.engine == "monitor" and not with_pairs


def _monitor_keys(requested: Requested, gain: Gain) -> list[MeasureKey]:
    if requested.measure.keyed:  # a measure trec_eval lacks, named by its key
        return [MeasureKey.parse(requested.name)]
    kind = TREC_FAMILY_KINDS.get(requested.name) or OWN_FAMILY_KINDS[requested.name]
    gain_of_kind = gain if KINDS[kind].gain else None
    if requested.measure.params == "cutoffs":
        return [MeasureKey(kind, int(k), gain_of_kind) for k in requested.params.numbers]
    return [MeasureKey(kind, None, gain_of_kind)]
