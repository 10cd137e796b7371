"""The `comparisons:` config section: segment-versus-segment comparisons on every window.

```yaml
comparisons:
  - name: v2-vs-v1            # the `comparison` label
    baseline: {model: v1}     # segment filters (keys of segments.keys)
    candidate: {model: v2}
    measures: [ndcg@10]       # default: every headline measure (nDCG@k per gain, MRR, MAP)
    confidence: 0.95          # of the intervals; 1 - confidence is the tests' level
    min_queries: 30           # fewer common queries: no verdict (default 10)
    min_coverage: 0.0         # either side's coverage under it: no verdict
    min_judged: 0.5           # either side's judged@k (k the measure's cutoff) under it
    tau: 0.02                 # the always-valid sequence's mixture scale (docs/alerting.md)
    design: auto              # replay | live | auto (replay when most queries repeat)
    burn_in: 50               # live: per-query differences before the sequence's first verdict
    since: 2026-12-01T00:00:00Z   # the sequence counts windows from here (a reset)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.comparisons.settings import ComparisonConfig
from monitor.declare import read_settings, write_settings
from monitor.errors import MeasureError
from monitor.scoring.catalog import KINDS, MeasureKey, resolve_key
from monitor.sections import (
    ConfigSection,
    as_str,
    as_str_list,
    describe,
)
from monitor.windows.segment_filter import read_segment_filter

__all__ = ["read_comparisons", "render_comparisons"]


def read_comparisons(
    section: ConfigSection,
    *,
    measures: Sequence[MeasureKey],
    segment_keys: Sequence[str],
) -> tuple[ComparisonConfig, ...]:
    """Every comparison of the list, checked against what the monitor computes."""
    known = [str(key) for key in measures]  # in order: the first gain first
    headline = tuple(
        str(key)
        for key in measures
        if KINDS[key.kind].headline
        and KINDS[key.kind].gauge
        and (key.k or not KINDS[key.kind].cutoff)
    )
    comparisons = []
    names: set[str] = set()
    for item in section.sections("comparisons"):
        name = item.get("name", as_str)
        if name in names:
            raise item.error("name", f"another comparison is named {describe(name)}")
        names.add(name)
        labelled = item.labelled(f"comparison '{name}': ")
        baseline = read_segment_filter(labelled, "baseline", segment_keys, required=True) or ()
        candidate = read_segment_filter(labelled, "candidate", segment_keys, required=True) or ()
        if baseline == candidate:
            raise labelled.error("candidate", "is the same segment filter as the baseline")
        wanted = labelled.get("measures", as_str_list, headline)
        keys = tuple(_measure(labelled, text, known) for text in wanted)
        comparison = read_settings(
            ComparisonConfig,
            labelled,
            name=name,
            baseline=baseline,
            candidate=candidate,
            measures=keys,
        )
        comparisons.append(comparison)
    return tuple(comparisons)


def _measure(section: ConfigSection, text: str, known: Sequence[str]) -> str:
    try:
        key = resolve_key(text, known)
    except MeasureError as error:
        raise section.error("measures", str(error)) from None
    if key is None or KINDS[MeasureKey.parse(key).kind].gauge is None:
        raise section.error(
            "measures",
            f"{describe(text)} is not a measure the monitor exports ({', '.join(sorted(known))})",
        )
    return key


def render_comparisons(comparisons: Sequence[ComparisonConfig]) -> list[dict[str, Any]]:
    """The effective comparisons, every default written out (`check-config`)."""
    return [
        {
            "name": c.name,
            "baseline": dict(c.baseline),
            "candidate": dict(c.candidate),
            "measures": list(c.measures),
            **write_settings(c),
        }
        for c in comparisons
    ]
