"""Calibration of the comparison gate: false significance, coverage, family-wise false alarms
under continuous monitoring, and detection delay.

    .venv/bin/python bench/gate.py                 # the README's figures (about 2 minutes)
    .venv/bin/python bench/gate.py --quick         # fewer repetitions

Per-query differences candidate - baseline are drawn like real nDCG@10 differences: half of
the queries unchanged (exactly 0), the other half moved by Uniform(-0.4, 0.4), plus the true
difference (the mean of the distribution). A window holds 300 queries.

1. Per-window test (`monitor.stats.paired_comparison`, what each window's
   `rankmon_comparison_p_value` and interval are): over >= 2,000 windows without a true
   difference, the share with p < 0.05 (the level; expected within level + 2 standard
   errors), and over >= 2,000 windows with a true difference of +0.01 the share of 95 %
   intervals holding it (expected 95 +- 1.5 %).
2. Always-valid sequence (`monitor.stats.sequence.MixtureSequence`, what the `comparison`
   alert condition uses): >= 500 simulated days of 8,640 ten-second windows without a true
   difference, each day one sequence looked at after every window; the share of days on
   which it ever rejects "no difference" at alpha = 0.05 (family-wise false alarms, expected
   within alpha + 2 standard errors), next to the same for the per-window test looked at
   every window (what a naive gate does). Each window's mean and standard error are drawn
   from their sampling distribution for 300 queries of the distribution above (normal mean,
   scaled chi-square variance): 4.3 million windows of 300 queries each would take an hour.
3. Detection: a true +2 % nDCG@10 difference (0.014 on a base of 0.70) on 300 queries: the
   number of windows until the always-valid interval lies above 0, median and worst over
   the runs (each run at most one simulated day).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from monitor.stats.paired import paired_comparison
from monitor.stats.sequence import MixtureSequence, SequenceState

QUERIES = 300
LEVEL = 0.05
WINDOWS_PER_DAY = 8_640
HALF_WIDTH = 0.4  # the moved half: Uniform(-0.4, 0.4)
SD = math.sqrt(0.5 * (2 * HALF_WIDTH) ** 2 / 12)  # sd of a per-query difference around its mean


def differences(rng: np.random.Generator, n: int, true: float) -> np.ndarray:
    moved = rng.random(n) < 0.5
    d = np.where(moved, rng.uniform(-HALF_WIDTH, HALF_WIDTH, n), 0.0)
    return d + true  # mean `true`: the unchanged half moves by it too (a uniform shift)


def per_window(rng: np.random.Generator, windows: int) -> None:
    started = time.perf_counter()
    significant = sum(
        paired_comparison(differences(rng, QUERIES, 0.0)).p_value < LEVEL for _ in range(windows)
    )
    rate = significant / windows
    se = math.sqrt(LEVEL * (1 - LEVEL) / windows)
    print(f"per-window test, {windows} windows without a difference: p < {LEVEL} in "
          f"{rate:.2%} (level {LEVEL:.0%}, limit {LEVEL + 2 * se:.2%}) "
          f"{'ok' if rate <= LEVEL + 2 * se else 'OVER'}")  # fmt: skip
    true = 0.01
    covered = 0
    for _ in range(windows):
        result = paired_comparison(differences(rng, QUERIES, true), test="t")
        covered += result.ci_lower <= true <= result.ci_upper
    share = covered / windows
    print(f"95 % interval, {windows} windows with a true difference of +{true}: holds it in "
          f"{share:.2%} (expected 95 +- 1.5 %) {'ok' if abs(share - 0.95) <= 0.015 else 'OFF'}"
          f"  [{time.perf_counter() - started:.0f} s]")  # fmt: skip


def window_statistics(
    rng: np.random.Generator, shape: tuple[int, ...], true: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each window's mean and standard error, drawn from their sampling distribution."""
    means = true + rng.standard_normal(shape) * SD / math.sqrt(QUERIES)
    variances = SD**2 * rng.chisquare(QUERIES - 1, shape) / (QUERIES - 1)
    return means, np.sqrt(variances / QUERIES)


def always_valid(rng: np.random.Generator, days: int) -> None:
    started = time.perf_counter()
    sequence = MixtureSequence(alpha=LEVEL)
    ever = np.zeros(days, dtype=bool)
    naive = np.zeros(days, dtype=bool)
    precision = np.zeros(days)
    weighted = np.zeros(days)
    threshold = -math.log(LEVEL)  # reject when log L(0) >= log(1 / alpha)
    critical = 1.96
    chunk = 96
    for _ in range(0, WINDOWS_PER_DAY, chunk):
        means, stderrs = window_statistics(rng, (chunk, days), 0.0)
        weights = 1.0 / stderrs**2
        p_cum = precision + np.cumsum(weights, axis=0)
        s_cum = weighted + np.cumsum(means * weights, axis=0)
        ever |= (sequence.log_likelihood_ratios(p_cum, s_cum) >= threshold).any(axis=0)
        naive |= (np.abs(means / stderrs) > critical).any(axis=0)
        precision, weighted = p_cum[-1], s_cum[-1]
    # the vectorised sums agree with the sequence the service keeps, window by window
    check = SequenceState()
    means, stderrs = window_statistics(np.random.default_rng(1), (50,), 0.0)
    for w, (x, s) in enumerate(zip(means, stderrs, strict=True)):
        check = sequence.add(check, float(x), float(s), start_ms=w * 10, end_ms=w * 10 + 10)
    assert math.isclose(check.precision, float(np.sum(1 / stderrs**2)), rel_tol=1e-12)
    rate = float(ever.mean())
    se = math.sqrt(LEVEL * (1 - LEVEL) / days)
    print(f"always-valid sequence, {days} days x {WINDOWS_PER_DAY} windows without a "
          f"difference: a false alarm on {rate:.2%} of days (alpha {LEVEL:.0%}, limit "
          f"{LEVEL + 2 * se:.2%}) {'ok' if rate <= LEVEL + 2 * se else 'OVER'}; the per-window "
          f"test looked at every window: {naive.mean():.1%} of days"
          f"  [{time.perf_counter() - started:.0f} s]")  # fmt: skip


def detection(rng: np.random.Generator, runs: int) -> None:
    started = time.perf_counter()
    true = 0.02 * 0.70
    sequence = MixtureSequence(alpha=LEVEL)
    delays = []
    for _ in range(runs):
        state = SequenceState()
        means, stderrs = window_statistics(rng, (WINDOWS_PER_DAY,), true)
        for w in range(WINDOWS_PER_DAY):
            state = sequence.add(
                state, float(means[w]), float(stderrs[w]), start_ms=w, end_ms=w + 1
            )
            if sequence.interval(state)[0] > 0:
                delays.append(w + 1)
                break
        else:
            delays.append(WINDOWS_PER_DAY + 1)
    found = [d for d in delays if d <= WINDOWS_PER_DAY]
    print(f"detection of a true +2 % nDCG@10 (+{true:.3f}) on {QUERIES} queries, {runs} runs: "
          f"detected in {len(found)}/{runs}; windows until the always-valid interval is above 0: "
          f"median {int(np.median(delays))}, worst {max(delays)} (per-window standard error "
          f"{SD / math.sqrt(QUERIES):.4f})  [{time.perf_counter() - started:.0f} s]")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer windows, days and runs")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    windows, days, runs = (500, 100, 100) if args.quick else (2_000, 500, 500)
    per_window(rng, windows)
    always_valid(rng, days)
    detection(rng, runs)


if __name__ == "__main__":
    main()
