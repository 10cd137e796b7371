"""`Gain`: how much a document of a given grade is worth to DCG.

Three kinds (docs/metric-conventions.md section 4):

- `linear` (trec_eval's default, Järvelin & Kekäläinen): gain(g) = g for g > 0, else 0.
- `exp` (Burges et al.): gain(g) = 2^g - 1 for g > 0, else 0. Not a trec_eval default; equal to
  trec_eval on qrels remapped 1 -> 1, 2 -> 3, 3 -> 7, and to ranx's `ndcg_burges`.
- an explicit map `{grade: gain}` for grades >= 0 (e.g. `{1: 1, 2: 3, 3: 7}`); a grade >= 0
  the map does not name gains its linear value, as in trec_eval's `gain_init.c`.

A negative grade (judged, but "unjudged" by trec_eval's convention) and a document that is not
in the evaluation set (`None`) always gain 0, whatever the kind. The scorer's array form
is `monitor.scoring.columns.gain_values`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["EXP", "LINEAR", "Gain"]

_NAMED: Final = ("linear", "exp")


@dataclass(frozen=True)
class Gain:
    """A grade -> gain rule; `name` is the label value (`linear`, `exp`, or `1=1,2=3,3=7`)."""

    name: str
    table: tuple[tuple[int, float], ...] = ()

    def __post_init__(self) -> None:
        if self.name in _NAMED:
            if self.table:
                raise ValueError(f"gain {self.name!r} takes no table")
            return
        for grade, gain in self.table:
            if grade < 0 or not math.isfinite(gain) or gain < 0:
                raise ValueError(
                    f"gain map entry {grade}={gain}: grades and gains must be >= 0 and finite"
                )
        if not self.table or self.name != _map_name(self.table):
            raise ValueError(f"unknown gain {self.name!r}: use linear, exp or a grade->gain map")

    @classmethod
    def parse(cls, spec: str | Mapping[int, float] | Gain) -> Gain:
        """`"linear"`, `"exp"`, `"1=1,2=3,3=7"` or a mapping `{1: 1, 2: 3, 3: 7}`."""
        if isinstance(spec, Gain):
            return spec
        if isinstance(spec, str):
            if spec in _NAMED:
                return cls(spec)
            return cls._from_pairs(_parse_map_text(spec))
        return cls._from_pairs((int(g), float(v)) for g, v in spec.items())

    @classmethod
    def _from_pairs(cls, pairs: Iterable[tuple[int, float]]) -> Gain:
        table = tuple(sorted(pairs))
        if len({grade for grade, _ in table}) != len(table):
            raise ValueError("gain map names a grade twice")
        return cls(_map_name(table), table)

    def __str__(self) -> str:
        return self.name

    def of(self, grade: int | None) -> float:
        """The gain of one document; `None` (not in the evaluation set) gains 0."""
        if grade is None or grade < 0:
            return 0.0
        if self.name == "linear":
            return float(grade)
        if self.name == "exp":
            return float(2.0**grade - 1.0)
        return dict(self.table).get(grade, float(grade))


def _map_name(table: tuple[tuple[int, float], ...]) -> str:
    # Integral gains print without ".0"; others print exactly, so the name parses back.
    return ",".join(
        f"{grade}={int(gain) if gain.is_integer() else repr(gain)}" for grade, gain in table
    )


def _parse_map_text(text: str) -> list[tuple[int, float]]:
    pairs = []
    for item in text.split(","):
        grade, sep, gain = item.partition("=")
        try:
            if not sep:
                raise ValueError
            pairs.append((int(grade), float(gain)))
        except ValueError:
            raise ValueError(
                f"unknown gain {text!r}: use linear, exp or a grade->gain map like 1=1,2=3,3=7"
            ) from None
    return pairs


LINEAR: Final = Gain("linear")
EXP: Final = Gain("exp")
