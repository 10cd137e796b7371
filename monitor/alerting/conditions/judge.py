"""`judge`: a model judge stopped agreeing with the people, or its correction moved.

Judged on the judging loop's audit (docs/judging.md): the pairs a model and a person both
graded, per model source (`llm:<model>@<prompt>`), over its newest `judging.audit_pairs`
pairs (`monitor.stats.judges.judge_reading`). Bad when, for any source with at least
`min_pairs` of them:

- its quadratic weighted kappa is under `min_kappa` at level `significance` (its upper
  confidence bound, from a jackknife standard error, is under it: it no longer grades as the
  people do), or
- its bias (mean model grade minus human grade) moved by more than `max_shift` grades from
  its reference (the source's first `judging.audit_pairs` audit pairs), with a two-sample
  test p under `significance`: a judge upgrade or a prompt change under the same source name
  moves the measure as much as a ranker change would, and this says it was the judge. It
  keeps firing while the bias stays moved: give the new judge or prompt a source name of
  its own, which starts an audit of its own.

Unknown until a source has `min_pairs` audit pairs (the shift: `min_pairs` in its reference
too, apart from the newest). bench/judges.py measures its false alerts and its delay
(docs/judging.md).

```yaml
- name: judge-drift
  judge: {min_kappa: 0.4, max_shift: 0.25, significance: 0.0001, min_pairs: 100}
```
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Self

from monitor.alerting.conditions.base import (
    Condition,
    Role,
    RuleContext,
    Verdict,
    fraction,
    refuse_measure,
)
from monitor.alerting.state import Evidence
from monitor.sections import ConfigSection, as_int, as_number
from monitor.stats.judges import JudgeReading
from monitor.windows.summary import Segment

__all__ = ["Judge"]


@dataclass(frozen=True)
class Judge(Condition):
    """Bad when a model judge's kappa falls under `min_kappa` or its bias moves by more than
    `max_shift` grades at level `significance` (module docstring)."""

    key = "judge"
    budgeted = True
    role = Role.JUDGE
    has_measure = False
    explains_a_window = False
    takes_streaks = False
    holds_small_windows = False

    min_kappa: float = 0.4
    max_shift: float = 0.25
    significance: float = 0.0001
    min_pairs: int = 100

    @classmethod
    def parse(cls, rule: ConfigSection, context: RuleContext) -> Self:
        if not context.judging:
            raise rule.error(cls.key, "needs the judging loop's audit: set judging.enabled")
        section = rule.section(cls.key)
        condition = cls(
            min_kappa=section.get("min_kappa", as_number(-1.0, 1.0), 0.4),
            max_shift=section.get("max_shift", as_number(0.0), 0.25),
            significance=section.get("significance", fraction, 0.0001),
            min_pairs=section.get("min_pairs", as_int(2, 1_000_000), 100),
        )
        section.finish()
        return condition

    def measure(self, rule: ConfigSection, context: RuleContext) -> str:
        refuse_measure(rule, "judge")
        return "judge"

    def segment(self, rule: ConfigSection, context: RuleContext) -> Segment | None:
        if rule.has("segment"):
            raise rule.error("segment", "judge rules watch the judging loop's audit, no segment")
        return None

    def render(self) -> dict[str, Any]:
        return {
            "min_kappa": self.min_kappa,
            "max_shift": self.max_shift,
            "significance": self.significance,
            "min_pairs": self.min_pairs,
        }

    def restore_windows(self, streaks: int) -> int:
        return 0

    def on_judges(self, readings: Sequence[JudgeReading], *, level: float | None = None) -> Verdict:
        """The verdict on every model source's newest reading; under the false-page budget
        each of its two tests per source runs at `level` / (2 x sources) where that is
        stricter than `significance`."""
        judged = [r for r in readings if r.pairs >= self.min_pairs]
        if not judged:
            most = max((r.pairs for r in readings), default=0)
            note = f"no model judge has {self.min_pairs} audit pairs yet (most: {most})"
            return Verdict(Evidence.UNKNOWN, math.nan, note=note)
        at = self.significance
        if level is not None:
            at = min(at, level / (2 * len(judged)))
        problems = [problem for r in judged if (problem := self._problem(r, at))]
        worst = min(judged, key=lambda r: (math.isnan(r.kappa), r.kappa))
        fine = "; ".join(
            f"{r.source}: kappa {r.kappa:.3f}, bias {r.bias:+.3f} over {r.pairs} pairs"
            for r in judged
        )
        return Verdict(
            Evidence.BAD if problems else Evidence.GOOD,
            worst.kappa,
            self.min_kappa,
            note="; ".join(problems) if problems else fine,
        )

    def _problem(self, reading: JudgeReading, significance: float) -> str:
        """What is wrong with one source's reading at `significance` ("" if nothing)."""
        said = []
        upper = reading.kappa + NormalDist().inv_cdf(1.0 - significance) * reading.kappa_stderr
        if upper < self.min_kappa:
            said.append(
                f"kappa {reading.kappa:.3f} (at most {upper:.3f} at level "
                f"{significance:.2g}) < {self.min_kappa:g} over its newest "
                f"{reading.pairs} audit pairs"
            )
        if (
            reading.before >= self.min_pairs
            and abs(reading.shift) > self.max_shift
            and reading.shift_p < significance
        ):
            said.append(
                f"bias moved {reading.shift:+.3f} grades ({reading.previous_bias:+.3f} -> "
                f"{reading.bias:+.3f} from its first audit pairs, p {reading.shift_p:.2g}): "
                "the judge changed, not "
                "the ranker"
            )
        return f"{reading.source}: {', '.join(said)}" if said else ""

    def alert_segment(self, rule_segment: Segment | None, segment: Segment) -> Segment:
        return ()

    def summary(self, measure: str) -> str:
        return (
            f"a model judge's kappa with the people under {self.min_kappa:g}, or its bias "
            f"moved by more than {self.max_shift:g} grades"
        )

    def left_out(self, *, ungated: bool) -> str:
        return "judge, judged on the judging loop's audit pairs in rankmon"
