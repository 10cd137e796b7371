"""A replay's window-to-window noise, beside the between-query standard error: zero for a
deterministic ranker, the noise's own size for a noisy one, and exported per segment."""

from __future__ import annotations

import math

import numpy as np
import pytest

from monitor.config.loader import Config
from monitor.stats.replay_noise import replay_stderr
from tests.support.fakes import FakeProducer
from tests.unit.test_comparisons_service import Loop, config, serve  # noqa: F401 (a fixture)


def test_a_deterministic_replay_has_no_replay_noise() -> None:
    values = {f"q{i}": 0.1 * (i % 9) for i in range(300)}
    assert replay_stderr(values, dict(values)) == 0.0
    assert math.isnan(replay_stderr({"q1": 0.5}, {"q1": 0.5}))  # too few to say


def test_a_noisy_replay_shows_its_noise_and_not_the_spread_of_the_queries() -> None:
    rng = np.random.default_rng(4)
    quality = rng.uniform(0.1, 0.9, 3000)  # the between-query spread: sd 0.23
    noise = 0.05
    estimates = []
    for _ in range(200):
        before = {f"q{i}": float(q + rng.normal(0, noise)) for i, q in enumerate(quality)}
        after = {f"q{i}": float(q + rng.normal(0, noise)) for i, q in enumerate(quality)}
        estimates.append(replay_stderr(before, after))
    truth = noise / math.sqrt(3000)
    assert float(np.mean(estimates)) == pytest.approx(truth, rel=0.02)
    between = float(np.std(quality, ddof=1)) / math.sqrt(3000)
    assert between > 4 * truth


def test_each_segments_replay_noise_is_exported_beside_its_stderr(config: Config) -> None:  # noqa: F811
    loop = Loop(config, FakeProducer())
    serve(loop, range(3))
    loop.clock.advance(200_000)
    loop.run_for(7_000)
    samples = {
        (sample.name, sample.labels["model"]): sample.value
        for family in loop.registry.collect()
        for sample in family.samples
        if sample.name in ("rankmon_ndcg_replay_stderr", "rankmon_ndcg_stderr")
        and sample.labels.get("k") == "10"
    }
    # every window serves the same rankings: no noise from window to window
    assert samples[("rankmon_ndcg_replay_stderr", "v1")] == 0.0
    assert samples[("rankmon_ndcg_replay_stderr", "v2")] == 0.0
    assert ("rankmon_ndcg_stderr", "v1") in samples
    loop.monitor.close()
