"""The `metrics` settings, declared once (`monitor.declare`): cutoffs, gains, relevance level
and the limits on rankings.

Each gain is a `monitor.scoring.gain.Gain` and its name is the `gain` label value: `linear`
(trec_eval: gain = grade), `exp` (2^grade - 1), or a grade -> gain map, written as a
mapping or as text; its label is the text form:

    gains: [linear, {1: 1, 2: 5, 3: 10}]     # labels "linear" and "1=1,2=5,3=10"

A grade the map does not name gains its linear value, as in trec_eval's gain_init.c.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from monitor.declare import setting
from monitor.errors import MeasureError
from monitor.scoring.catalog import MeasureKey, monitor_keys
from monitor.scoring.columns import IdcgZero
from monitor.scoring.gain import EXP, LINEAR, Gain
from monitor.sections import as_choice, as_int, as_int_list, as_str_list

__all__ = ["MAX_GRADE", "MetricsConfig"]

# The highest grade: of an inline judgment, and so the highest relevance level. A negative
# one (trec_eval's "unjudged") says nothing an absent one does not.
MAX_GRADE: Final = 1000


def _gains(value: Any) -> tuple[Gain, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a non-empty list of gains, got {value!r}")
    gains = tuple(_gain(item) for item in value)
    names = [gain.name for gain in gains]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"lists the gain {name!r} more than once")
    return gains


def _gain(item: Any) -> Gain:
    if isinstance(item, Mapping):
        for grade, gain in item.items():
            if isinstance(grade, bool) or not isinstance(grade, int):
                raise ValueError(f"a gain map's grades are integers, got {grade!r}")
            if isinstance(gain, bool) or not isinstance(gain, int | float):
                raise ValueError(f"the gain of grade {grade} must be a number, got {gain!r}")
        return Gain.parse(item)
    if isinstance(item, str):
        return Gain.parse(item)  # ValueError names the gain and the valid forms
    raise ValueError(f"unknown gain {item!r}: use linear, exp or a grade->gain map")


def _gain_names(gains: tuple[Gain, ...]) -> list[str]:
    return [gain.name for gain in gains]


def _measures(value: Any) -> tuple[MeasureKey, ...]:
    """Measure names, each parsed (`MeasureKey.parse`): a list, or one name."""
    if value in (None, "", []):
        return ()
    keys = []
    for name in as_str_list(value):
        try:
            keys.append(MeasureKey.parse(name))
        except MeasureError as error:
            raise ValueError(str(error)) from None
    return tuple(keys)


def _idcg_zero(value: object) -> IdcgZero:
    """`zero` (trec_eval: the query scores 0 and counts) or `exclude` (left out of the means)."""
    choice = as_choice("zero", "exclude")(value)  # raises on anything else
    return "exclude" if choice == "exclude" else "zero"


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """What is measured on each ranking.

    `relevance_level`: the grade from which a document counts as relevant for precision,
    recall, MRR and MAP (not nDCG; docs/metric-conventions.md N7). `idcg_zero`: a query whose ideal
    DCG is 0 scores 0 ("zero", trec_eval) or is left out of the means ("exclude").
    `min_queries`: a window with fewer queries reports that instead of a mean. (How deep a
    ranking may be is ingest's: `events.max_depth`.)
    """

    cutoffs: tuple[int, ...] = setting(
        (5, 10, 20), read=as_int_list(1, 1_000_000), doc="the k of nDCG@k, precision@k, ..."
    )
    gains: tuple[Gain, ...] = setting(
        (LINEAR, EXP),
        read=_gains,
        write=_gain_names,
        doc="nDCG's gains: linear, exp or a grade -> gain map; each is a `gain` label",
    )
    relevance_level: int = setting(
        1, read=as_int(1, MAX_GRADE), doc="the grade from which a document is relevant"
    )
    idcg_zero: IdcgZero = setting(
        "zero", read=_idcg_zero, doc="a query with no ideal DCG scores 0 (zero) or is left out"
    )
    min_queries: int = setting(
        1, read=as_int(1, 10_000_000), doc="a window with fewer queries reports no mean"
    )
    measures: tuple[MeasureKey, ...] = setting(
        (),
        read=_measures,
        write=lambda keys: [str(key) for key in keys],
        doc="more measures to stream, export and alert on: rbp@10:p=0.8, bpref, set_F:beta=0.5",
    )
    gain_names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "gain_names", tuple(gain.name for gain in self.gains))

    def keys(self) -> list[MeasureKey]:
        """Every measure the stream computes: the table's stream kinds at the cutoffs and
        gains (`monitor_keys`), then `measures` not among them, in the order written."""
        keys = monitor_keys(self.cutoffs, self.gains)
        named = {str(key) for key in keys}
        for key in self.measures:
            if str(key) not in named:
                named.add(str(key))
                keys.append(key)
        return keys
