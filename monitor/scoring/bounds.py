"""The bounds of nDCG@k over the grades nobody gave yet: the least and the most nDCG@k could be.

A ranking's top k may hold documents the evaluation set never judged. Each could get any grade
of the set's scale once judged, and its grade enters both the ranking's DCG and the query's
ideal DCG. `ndcg_lower@k` and `ndcg_upper@k` are the minimum and the maximum of nDCG@k over
every such grading: whatever grades the unjudged documents of the top k get, nDCG@k after
judging lies between them (docs/metrics.md, "Bounds"). The scale is the gains of the grades
the evaluation set uses, and of grade 0 (an unjudged document may be judged not relevant).

Neither is found by trying every grading ((levels + 1)^u of them for u unjudged documents):

- For a fixed multiset of grades, the ideal DCG is fixed, so the DCG decides: highest grades
  at the best ranks give the most, at the worst ranks the least (the rearrangement
  inequality).
- nDCG@k as a function of one document's gain x, the others fixed, is (a + w x) / I(x) with
  I convex and increasing (the gain moves up the ideal ranking as it grows): a ratio of a
  linear and a convex function, quasi-concave. Its minimum over an interval is at an end;
  over the box of all gradings, at a vertex. So the lower bound is one of u + 1 gradings: the
  worst m unjudged ranks at the highest gain, the others at the lowest.
- Its maximum may be inside (a middling grade at a low rank can beat both 0 and the highest),
  so the upper bound is found by Dinkelbach's method: the largest ratio t is where
  max over gradings of DCG - t IDCG reaches 0. For a fixed t that maximum is a dynamic
  programme over the levels, highest first, the state being how many unjudged ranks (the best
  ones) the higher levels took: O(levels x u^2) per step, a few steps.

The value reported is the chosen grading's nDCG@k summed as nDCG@k is (rank order; the ideal
in position order), so a fully judged top k gives nDCG@k bit for bit. The C kernel
(measure_kernel.c) runs the same steps in the same order, for the same bits.

    qrels a=1, z1..z6 = 0; ranking a z1 .. z6 new (new unjudged at rank 8)
    nDCG@10 = 1.0000; judged new=1: 0.8066 (new enters the ideal);  lower 0.8066, upper 1.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = ["MAX_STEPS", "Graded", "ndcg_bounds", "ndcg_lower_of", "ndcg_upper_of"]

MAX_STEPS: Final = 64  # Dinkelbach steps at most: each strictly raises t, over a finite set


@dataclass(frozen=True)
class Graded:
    """One ranking's first min(k, length) documents as the bounds read them.

    `gains`: their gains, None where unjudged; `top`: the query's highest judged gains,
    highest first (0-padded); `levels`: the scale's gains, highest first, each once;
    `rank_discounts[i]` and `ideal_discounts[i]`: log2(i + 2) for i < len(gains) and i < k;
    `when_zero`: nDCG@k when the ideal DCG is 0 (0, or NaN to leave the query out)."""

    gains: Sequence[float | None]
    top: Sequence[float]
    levels: Sequence[float]
    k: int
    rank_discounts: Sequence[float]
    ideal_discounts: Sequence[float]
    when_zero: float
    unjudged: list[int] = field(init=False)

    def __post_init__(self) -> None:
        unjudged = [i for i, gain in enumerate(self.gains) if gain is None]
        object.__setattr__(self, "unjudged", unjudged)

    def ndcg(self, assigned: Sequence[float]) -> float:
        """nDCG@k with the unjudged ranks given `assigned` (in rank order), summed as
        nDCG@k is: the DCG in rank order, the ideal (the judged gains and the assigned ones
        merged, highest first) in position order."""
        filled = [0.0 if gain is None else gain for gain in self.gains]
        for rank, gain in zip(self.unjudged, assigned, strict=True):
            filled[rank] = gain
        dcg = 0.0
        for i, value in enumerate(filled):
            dcg += value / self.rank_discounts[i]
        extra, top = sorted(assigned, reverse=True), self.top
        ideal, t, e = 0.0, 0, 0
        for i in range(self.k):
            if e < len(extra) and (t >= len(top) or extra[e] > top[t]):
                value = extra[e]
                e += 1
            else:
                value = top[t] if t < len(top) else 0.0
                t += 1
            ideal += value / self.ideal_discounts[i]
        return dcg / ideal if ideal > 0 else self.when_zero

    def filled(self) -> float:
        """nDCG@k where nothing is left to choose: every unjudged rank at the scale's gain."""
        return self.ndcg([self.levels[0] if self.levels else 0.0] * len(self.unjudged))


def ndcg_bounds(ranking: Graded) -> tuple[float, float]:
    """(lower, upper) of nDCG@k for one ranking."""
    return ndcg_lower_of(ranking), ndcg_upper_of(ranking)


def ndcg_lower_of(ranking: Graded) -> float:
    """The least nDCG@k over every grading of the ranking's unjudged documents."""
    levels, u = ranking.levels, len(ranking.unjudged)
    if not u or len(levels) < 2:
        return ranking.filled()
    m = _Tiers(ranking).least()
    return ranking.ndcg([levels[-1]] * (u - m) + [levels[0]] * m)


def ndcg_upper_of(ranking: Graded) -> float:
    """The most nDCG@k over every grading of the ranking's unjudged documents."""
    if not ranking.unjudged or len(ranking.levels) < 2:
        return ranking.filled()
    return ranking.ndcg(_Tiers(ranking).most())


class _Tiers:
    """The programme of the upper bound. Its tiers are every gain of the scale and every other
    positive gain among the query's first k judged ones (an inline grade's), which no
    unjudged document can take but which the assigned ones may pass in the ideal. A grading
    is a count per tier, the best unjudged ranks to the highest tier: `parts` gives its DCG
    and ideal DCG, `programme` the counts maximising DCG - t IDCG, and `most` runs
    Dinkelbach's method over them."""

    def __init__(self, ranking: Graded) -> None:
        levels, top, k = ranking.levels, ranking.top, ranking.k
        scale = set(levels)
        self.tiers = sorted(scale | {value for value in top[:k] if value > 0}, reverse=True)
        self.assignable = [tier in scale for tier in self.tiers]
        self.lowest = self.tiers.index(levels[-1])  # the last tier an unjudged one may take
        self.highest = self.tiers.index(levels[0])
        self.u, self.k, self.when_zero = len(ranking.unjudged), k, ranking.when_zero
        n = len(self.tiers)
        self.by_rank = [0.0] * (self.u + 1)  # prefix sums of the unjudged ranks' weights
        for j, rank in enumerate(ranking.unjudged):
            self.by_rank[j + 1] = self.by_rank[j] + 1.0 / ranking.rank_discounts[rank]
        self.by_place = [0.0] * (k + 1)  # prefix sums of the ideal's position weights
        for i in range(k):
            self.by_place[i + 1] = self.by_place[i] + 1.0 / ranking.ideal_discounts[i]
        self.judged_dcg = 0.0
        for i, gain in enumerate(ranking.gains):
            if gain is not None:
                self.judged_dcg += gain / ranking.rank_discounts[i]
        self.above = [0] * n  # judged gains of the first k above each tier, and at it
        self.at = [0] * n
        for value in top[:k]:
            for tier in range(n):
                if value == self.tiers[tier]:
                    self.at[tier] += 1
                    break
        for tier in range(1, n):
            self.above[tier] = self.above[tier - 1] + self.at[tier - 1]

    def two(self, m: int) -> list[int]:
        """The counts of m unjudged documents at the highest gain, the rest at the lowest."""
        counts = [0] * len(self.tiers)
        counts[self.highest] += m
        counts[self.lowest] += self.u - m
        return counts

    def least(self) -> int:
        """How many unjudged documents, at the worst ranks, get the highest gain (the others
        the lowest) in the grading of the least nDCG@k: one of these u + 1 is."""
        by_rank, u = self.by_rank, self.u
        high, low = self.tiers[self.highest], self.tiers[self.lowest]
        best, chosen = math.nan, 0
        for m in range(u + 1):
            _, ideal = self.parts(self.two(m))
            dcg = self.judged_dcg + low * (by_rank[u - m] - by_rank[0])
            dcg += high * (by_rank[u] - by_rank[u - m])
            value = dcg / ideal if ideal > 0 else self.when_zero
            if math.isnan(best) or value < best:
                best, chosen = value, m
        return chosen

    def most(self) -> list[float]:
        """The assigned gains, in rank order, of the grading of the largest nDCG@k: from the
        best of the u + 1 gradings of the best m ranks at the highest gain (the rest at the
        lowest), Dinkelbach's steps until none raises it."""
        counts, t = self.two(0), -math.inf
        for m in range(self.u + 1):
            dcg, ideal = self.parts(self.two(m))
            if ideal > 0 and dcg / ideal > t:
                counts, t = self.two(m), dcg / ideal
        for _ in range(MAX_STEPS if t > -math.inf else 0):
            best = self.programme(t)
            new_dcg, new_ideal = self.parts(best)
            if new_ideal <= 0 or new_dcg / new_ideal <= t:
                break
            counts, t = best, new_dcg / new_ideal
        return [tier for tier, count in zip(self.tiers, counts, strict=True) for _ in range(count)]

    def parts(self, counts: Sequence[int]) -> tuple[float, float]:
        by_rank, by_place, k = self.by_rank, self.by_place, self.k
        dcg, ideal, taken = self.judged_dcg, 0.0, 0
        for tier, gain in enumerate(self.tiers):
            c, start = counts[tier], self.above[tier] + taken
            dcg += gain * (by_rank[taken + c] - by_rank[taken])
            ideal += gain * (by_place[min(k, start + self.at[tier] + c)] - by_place[min(k, start)])
            taken += c
        return dcg, ideal

    def programme(self, t: float) -> list[int]:
        """The counts per tier (summing to u) maximising DCG - t IDCG (the judged DCG left
        out: a constant), by tiers from the lowest up, the state being how many of the best
        unjudged ranks the tiers above take."""
        by_rank, by_place, k, n, u = self.by_rank, self.by_place, self.k, len(self.tiers), self.u
        after = [0.0] * (u + 1)  # best value of the tiers below, by ranks taken above them
        choices: list[list[int]] = []
        for tier in range(n - 1, -1, -1):
            gain, here = self.tiers[tier], [0.0] * (u + 1)
            chosen = [0] * (u + 1)
            # Above the highest gain an unjudged document may take, none is taken yet.
            for taken in range(u + 1 if tier > self.highest else 1):
                start = self.above[tier] + taken
                low, high = 0, u - taken  # how many this tier may take
                if not self.assignable[tier] or tier > self.lowest:
                    high = 0
                elif tier == self.lowest:
                    low = high  # the lowest gain takes every rank left
                best, pick = -math.inf, 0
                for c in range(low, high + 1):
                    value = gain * (by_rank[taken + c] - by_rank[taken]) - t * gain * (
                        by_place[min(k, start + self.at[tier] + c)] - by_place[min(k, start)]
                    )
                    value += after[taken + c]
                    if value > best:
                        best, pick = value, c
                here[taken], chosen[taken] = best, pick
            after = here
            choices.append(chosen)
        choices.reverse()
        counts, taken = [0] * n, 0
        for tier in range(n):
            counts[tier] = choices[tier][taken]
            taken += counts[tier]
        return counts
