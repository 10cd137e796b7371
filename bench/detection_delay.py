"""Detection delay of the full service on the demo's scenario, next to its lower bound.

    .venv/bin/python bench/detection_delay.py            # 3 runs of the real demo
    .venv/bin/python bench/detection_delay.py --runs 1

Each run is `rankmon demo` in-process (embedded Tansu broker, synthetic ranker at 100 events/s,
the real `Monitor` with 10 s windows, 2 s lateness, a 2 s tick, and the rule `ndcg10-floor`:
nDCG@10 below 0.6, `for: 1`). Model v1 degrades 20 s after start, at an arbitrary point of its
window. The delay is the wall time from the drop to the first `firing` state.

Lower bound, for a drop at offset `o` into its (epoch-aligned) window of length `size`: the
window must end, the watermark must pass its end (`allowed_lateness`) and a tick must come
(0 .. `interval`), plus `for - 1` more windows (0 here). If the window the drop falls in is
already below the floor (the drop came early in it), that is `size - o + lateness (+ tick)`;
otherwise the first window wholly after the drop fires, one `size` later. The figures are the
moment the demo's view saw the alert, up to 0.25 s after the engine fired it.
"""

from __future__ import annotations

import argparse

from monitor.demo.run import DemoOptions, run_demo
from monitor.demo.scenario import Scenario
from monitor.values import parse_duration


def one_run(seed: int, duration_s: float) -> tuple[float, float, float, float] | None:
    """(delay, partial-window bound, whole-window bound, tick) in seconds; None: no alert."""
    scenario = Scenario()
    outcome = run_demo(
        DemoOptions(duration_s=duration_s, seed=seed, live=False, scenario=scenario),
        lambda line: None,
    )
    fired = [c.at_ms for c in outcome.transcript.alert_changes if c.state == "firing"]
    if not fired:
        return None
    size_ms = parse_duration(scenario.window).ms
    lateness_ms = parse_duration(scenario.allowed_lateness).ms
    tick_ms = parse_duration(scenario.tick).ms
    offset_ms = outcome.degrade_at_ms % size_ms
    partial = (size_ms - offset_ms + lateness_ms) / 1000
    delay = (min(fired) - outcome.degrade_at_ms) / 1000
    return delay, partial, partial + size_ms / 1000, tick_ms / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=60.0)
    args = parser.parse_args()
    print("run  delay after drop   bound: drop's window | first whole window (+ tick)")
    for run in range(args.runs):
        measured = one_run(seed=42 + run, duration_s=args.duration)
        if measured is None:
            print(f"{run:>3}  no alert within {args.duration:.0f} s")
            continue
        delay, partial, whole, tick = measured
        print(
            f"{run:>3}  {delay:8.1f} s          {partial:.1f}-{partial + tick:.1f} s"
            f" | {whole:.1f}-{whole + tick:.1f} s"
        )


if __name__ == "__main__":
    main()
