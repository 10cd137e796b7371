"""Calibration and detection delay of rankmon's alerting, printed as figures.

    .venv/bin/python bench/alerts.py [--quick]

1. False-alarm rate of the `drop` rule's paired test on stable simulated streams (per-query
   noise, no change), at significance 0.01 and 0.05: the share of evaluated windows the
   test alone calls bad (relative: 0), and with the 5% magnitude gate as configured; each
   checked against its bound, the level plus two binomial standard errors.
2. Windows until a drop of 3%, 5% and 10% of every query's quality is detected (1 = the
   first window after the drop) at significance 0.01; the 5% and 10% drops are checked
   against what docs/alerting.md states (every stream within 2 windows, and within 1).
3. A lasting drop (10% of every query's quality for 20 windows, then recovery) through the
   real `AlertEngine`: how long a `pinned` drop rule fires (checked: through all 20 windows
   on every stream, resolved within keep_firing_for + 2 windows of the recovery), next to a
   trailing-median rule, which takes the drop in as the new normal.
4. Detection delay on the demo's scenario (10 s windows, 2 s lateness, a tick every 2 s, v1
   falling from nDCG@10 ~0.82 to ~0.47 at a window boundary) through the real
   `EventWindows` and `AlertEngine` on a simulated clock, next to its lower bound
   window + lateness + tick + (for - 1) windows; every run is checked to fall within it.

Exits 1 when a checked figure misses its bound (the lines say `MISSED`).
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import numpy as np

from monitor.alerting import AlertEngine, AlertingConfig, Status
from monitor.alerting.conditions import Drop
from monitor.alerting.rules import AlertRule
from monitor.alerting.state import Evidence
from monitor.config.alerts import parse_alerting_config
from monitor.testing.alert_simulation import (
    StreamModel,
    drop_verdicts,
    false_alarm_bound,
    simulate_windows,
    windows_to_detection,
)
from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows
from monitor.windows.scored import ScoredEvents
from monitor.windows.spec import WindowSpec

MODEL = StreamModel(queries=200, events_per_query=3.0, noise=0.15)
MEASURE = "ndcg@10:linear"


def drop_rule(significance: float, relative: float) -> AlertRule:
    condition = Drop(relative, None, 12, significance, 30, None)
    return AlertRule("drop", 0, "warning", MEASURE, condition, None, 1, 0, None)


# Drop size -> the most windows any stream may take to detect it (docs/alerting.md).
DETECTION_CLAIMS = {0.05: 2, 0.10: 1}


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def false_alarms(seeds: int, windows: int) -> bool:
    print(
        f"1. false alarms on stable streams ({MODEL.queries} queries, ~{MODEL.events_per_query}"
        f" events/query/window, {seeds} streams x {windows} windows)"
    )
    met = True
    for significance in (0.01, 0.05):
        for relative in (0.0, 0.05):
            rule = drop_rule(significance, relative)
            flags = [
                v.evidence is Evidence.BAD
                for s in range(seeds)
                for v in drop_verdicts(rule, MODEL, windows, seed=s)
                if v.evidence is not Evidence.UNKNOWN
            ]
            rate = sum(flags) / len(flags)
            bound = false_alarm_bound(significance, len(flags))
            gate = "test alone" if relative == 0 else "test + 5% gate"
            print(
                f"   level {significance:.2f}, {gate:<15} {rate:.4f} of {len(flags)} windows;"
                f" bound (level + 2 SE) {bound:.4f}: {verdict(rate <= bound)}"
            )
            met = met and rate <= bound
    return met


def detection(seeds: int) -> bool:
    print(f"2. windows until detection at level 0.01 ({seeds} streams, drop after 15 windows)")
    met = True
    for size in (0.03, 0.05, 0.10):
        print(
            f"   drop {size:.0%} of quality: headline nDCG drops {headline_drop(size, seeds):.1%}"
        )
        for relative in (0.0, 0.02):
            rule = drop_rule(0.01, relative)
            delays = [
                windows_to_detection(
                    drop_verdicts(rule, MODEL, 25, seed=1000 + seed, drop_at=15, drop=size), 15
                )
                for seed in range(seeds)
            ]
            found = [d for d in delays if d is not None]
            gate = "test alone" if relative == 0 else "test + 2% gate"
            worst = max(found) if found else "-"
            median = statistics.median(found) if found else "-"
            line = (
                f"   drop {size:.0%}, {gate:<15} detected {len(found)}/{seeds},"
                f" median {median} window(s), worst {worst}"
            )
            claim = DETECTION_CLAIMS.get(size)
            if claim is not None:
                ok = len(found) == seeds and max(found) <= claim
                line += f"; claim: all within {claim}: {verdict(ok)}"
                met = met and ok
            print(line)
    return met


def headline_drop(size: float, seeds: int) -> float:
    """The drop of the window mean a quality drop gives (clipping at 0 and 1 softens it)."""
    changes = []
    for seed in range(seeds):
        summaries = simulate_windows(MODEL, 25, seed=1000 + seed, drop_at=15, drop=size)
        values = [s.means[MEASURE] for s in summaries]
        changes.append(1 - statistics.mean(values[15:]) / statistics.mean(values[:15]))
    return statistics.mean(changes)


LASTING = {"drop_at": 15, "recover_at": 35, "windows": 45, "keep_firing_for": 2}


def lasting_drop(seeds: int) -> bool:
    drop_at, recover_at = LASTING["drop_at"], LASTING["recover_at"]
    keep = LASTING["keep_firing_for"]
    print(
        f"3. a lasting drop: 10% of quality from window {drop_at} to {recover_at - 1}"
        f" ({seeds} streams; relative 5%, level 0.01, keep_firing_for {keep})"
    )
    met = True
    for pinned in (True, False):
        firing_through, resolved_after = [], []
        for seed in range(seeds):
            statuses = lasting_run(seed, pinned)
            during = statuses[drop_at:recover_at]
            firing_through.append(during.index(False) if False in during else len(during))
            if pinned:
                after = statuses[recover_at:]
                resolved_after.append(after.index(False) + 1 if False in after else None)
        if pinned:
            ok = all(n == recover_at - drop_at for n in firing_through) and all(
                r is not None and r <= keep + 2 for r in resolved_after
            )
            found = [r for r in resolved_after if r is not None]
            span = f"{min(found)}-{max(found)}" if found else "-"
            print(
                f"   pinned:   fired through all {recover_at - drop_at} windows on"
                f" {firing_through.count(recover_at - drop_at)}/{seeds} streams; resolved on"
                f" window {span} after recovery ({len(found)}/{seeds}): {verdict(ok)}"
            )
            met = met and ok
        else:
            print(
                f"   trailing: resolved during the drop after {min(firing_through)}-"
                f"{max(firing_through)} windows (median {statistics.median(firing_through)})"
            )
    return met


def lasting_run(seed: int, pinned: bool) -> list[bool]:
    """Whether the drop rule is firing after each window of one lasting-drop stream."""
    summaries = simulate_windows(
        MODEL,
        LASTING["windows"],
        seed=1000 + seed,
        drop_at=LASTING["drop_at"],
        drop=0.10,
        recover_at=LASTING["recover_at"],
    )
    drop: dict[str, Any] = {"relative": 0.05, "baseline_windows": 12, "min_queries": 30}
    if pinned:
        before = summaries[: LASTING["drop_at"]]
        drop["pinned"] = round(statistics.median(s.means[MEASURE] for s in before), 3)
    keep = LASTING["keep_firing_for"]
    rule = {"name": "drop", "measure": "ndcg@10", "drop": drop, "keep_firing_for": keep}
    config = parse_alerting_config(
        {"rules": [rule], "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=[],
        window="5m",
    )
    engine = AlertEngine(config, start_ms=0)
    firing = []
    for summary in summaries:
        engine.observe([summary], summary.end_ms)
        alert = engine.find("drop", ())
        firing.append(alert is not None and alert.status is Status.FIRING)
    return firing


class DemoStream:
    """The demo's two model versions as scored events, 100 events/s, on a simulated clock."""

    def __init__(self, seed: int, drop_at_ms: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.quality = {
            "v1": self.rng.uniform(0.7, 0.95, 200),
            "v2": self.rng.uniform(0.6, 0.85, 200),
        }
        self.drop_at_ms = drop_at_ms
        self.offset = 0

    def batch(self, since_ms: int, until_ms: int) -> ScoredEvents:
        n = (until_ms - since_ms) // 10  # 100 events per second
        times = np.sort(self.rng.integers(since_ms, until_ms, n))
        models = self.rng.choice(["v1", "v2"], n)
        queries = self.rng.integers(0, 200, n)
        base = np.array([self.quality[m][q] for m, q in zip(models, queries, strict=True)])
        # v1 degrades at the drop: about 0.82 -> 0.47 nDCG@10, as in the demo.
        base = np.where((models == "v1") & (times >= self.drop_at_ms), base * 0.57, base)
        scores = np.clip(base + self.rng.normal(0, 0.15, n), 0, 1)
        offsets = list(range(self.offset, self.offset + n))
        self.offset += n
        return ScoredEvents(
            partitions=[0] * n,
            offsets=offsets,
            event_times_ms=times.tolist(),
            event_ids=[f"e{o}" for o in offsets],
            query_ids=[f"q{q}" for q in queries],
            segments=[(("model", str(m)),) for m in models],
            measures=scores.reshape(-1, 1),
        )


WINDOW_MS, LATENESS_MS, TICK_MS = 10_000, 2_000, 2_000
DEMO_RULES: list[dict[str, Any]] = [
    {"name": "floor", "measure": "ndcg@10", "severity": "critical", "below": 0.6},
    {
        "name": "drop",
        "measure": "ndcg@10",
        "drop": {"relative": 0.05, "baseline_windows": 12, "significance": 0.01, "min_queries": 30},
    },
]


def demo_run(config: AlertingConfig, seed: int) -> dict[str, float]:
    """Seconds from the drop until each rule fired for model v1, in one simulated run."""
    t0, drop_at = 1_700_000_000_000, 1_700_000_200_000
    clock = FakeClock(t0 + 900 + 100 * seed)  # ticks out of phase with window ends
    spec = WindowSpec(WINDOW_MS, WINDOW_MS, allowed_lateness_ms=LATENESS_MS, label="10s")
    windows = EventWindows(spec, [MEASURE], clock, version="demo", set_queries=200)
    engine = AlertEngine(config, start_ms=clock.now_ms())
    stream, last = DemoStream(seed, drop_at), t0
    fired: dict[str, float] = {}
    while clock.now_ms() < drop_at + 60_000 and len(fired) < len(DEMO_RULES):
        clock.advance(TICK_MS)
        windows.add_events(stream.batch(last, clock.now_ms()))
        last = clock.now_ms()
        for t in engine.observe(windows.finalize(), clock.now_ms()):
            if t.change.after is Status.FIRING and dict(t.segment)["model"] == "v1":
                fired.setdefault(t.rule.name, (clock.now_ms() - drop_at) / 1000)
    return fired


def demo_delay(seeds: int) -> bool:
    print(
        "4. detection delay, demo scenario (10s windows, 2s lateness, 2s tick, drop at a"
        " window boundary; simulated clock through EventWindows + AlertEngine)"
    )
    config = parse_alerting_config(
        {"rules": DEMO_RULES, "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=["model"],
        window="10s",
    )
    runs = [demo_run(config, seed) for seed in range(seeds)]
    low, high = (WINDOW_MS + LATENESS_MS) / 1000, (WINDOW_MS + LATENESS_MS + TICK_MS) / 1000
    met = True
    for rule in DEMO_RULES:
        found = [run[rule["name"]] for run in runs if rule["name"] in run]
        # Every run fires on the first window wholly after the drop: within the bound.
        ok = len(found) == seeds and all(low <= delay <= high for delay in found)
        print(
            f"   {rule['name']:<6} fired {len(found)}/{seeds} runs, delay median"
            f" {statistics.median(found):.1f}s, range {min(found):.1f}-{max(found):.1f}s;"
            f" lower bound {low:.0f}-{high:.0f}s (window 10s + lateness 2s + tick 0-2s"
            f" + (for-1) x window 0s): {verdict(ok)}"
        )
        met = met and ok
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer streams (a few seconds)")
    args = parser.parse_args()
    seeds = 4 if args.quick else 20
    checks = [
        false_alarms(seeds, 100),
        detection(seeds),
        lasting_drop(seeds),
        demo_delay(3 if args.quick else 10),
    ]
    return 0 if all(checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
