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

import datetime as dt
from collections.abc import Sequence
from typing import Any

from monitor.comparisons.settings import (
    DEFAULT_MIN_JUDGED,
    DEFAULT_MIN_QUERIES,
    DESIGNS,
    ComparisonConfig,
)
from monitor.errors import MeasureError
from monitor.scoring.catalog import KINDS, MeasureKey, resolve_key
from monitor.sections import (
    ConfigSection,
    as_choice,
    as_int,
    as_number,
    as_positive_number,
    as_str,
    as_str_list,
    describe,
)
from monitor.stats.sequence import DEFAULT_BURN_IN
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
        comparison = ComparisonConfig(
            name=name,
            baseline=baseline,
            candidate=candidate,
            measures=keys,
            confidence=labelled.get("confidence", _open_unit, 0.95),
            min_queries=labelled.get("min_queries", as_int(2), DEFAULT_MIN_QUERIES),
            min_coverage=labelled.get("min_coverage", as_number(0.0, 1.0), 0.0),
            min_judged=labelled.get("min_judged", as_number(0.0, 1.0), DEFAULT_MIN_JUDGED),
            tau=labelled.get("tau", as_positive_number, 0.02),
            design=labelled.get("design", as_choice(*DESIGNS), "auto"),
            burn_in=labelled.get("burn_in", as_int(2), DEFAULT_BURN_IN),
            since_ms=labelled.get("since", _timestamp_ms, 0),
        )
        labelled.finish()
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


def _open_unit(value: Any) -> float:
    number = as_number(0.0, 1.0)(value)
    if not 0.5 <= number < 1.0:
        raise ValueError(f"must be in [0.5, 1), got {describe(value)}")
    return number


def _timestamp_ms(value: Any) -> int:
    """An ISO 8601 time with its zone (YAML may have parsed it already)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"expected an ISO 8601 time such as 2026-12-01T00:00:00Z, got {describe(value)}"
            ) from None
    if not isinstance(value, dt.datetime):
        raise ValueError(
            f"expected an ISO 8601 time such as 2026-12-01T00:00:00Z, got {describe(value)}"
        )
    if value.tzinfo is None:
        raise ValueError("needs a time zone (e.g. a trailing Z for UTC)")
    return int(value.timestamp() * 1000)


def render_comparisons(comparisons: Sequence[ComparisonConfig]) -> list[dict[str, Any]]:
    """The effective comparisons, every default written out (`check-config`)."""
    return [
        {
            "name": c.name,
            "baseline": dict(c.baseline),
            "candidate": dict(c.candidate),
            "measures": list(c.measures),
            "confidence": c.confidence,
            "min_queries": c.min_queries,
            "min_coverage": c.min_coverage,
            "min_judged": c.min_judged,
            "tau": c.tau,
            "design": c.design,
            "burn_in": c.burn_in,
            "since": None
            if not c.since_ms
            else dt.datetime.fromtimestamp(c.since_ms / 1000, dt.UTC)
            .isoformat()
            .replace("+00:00", "Z"),
        }
        for c in comparisons
    ]
