"""The `comparisons:` section and the `comparison` alert condition: defaults, and one line
naming the key for every mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.alerting.conditions import Comparison
from monitor.alerting.engine import AlertEngine
from monitor.comparisons.record import ComparisonRecord, MeasureComparison
from monitor.config.loader import Config, load_config
from monitor.errors import ConfigError
from monitor.stats.paired import PairedResult
from monitor.stats.sequence import SequenceState

BASE = """
kafka: {topic: events}
evaluation_set: {path: qrels.txt}
segments: {keys: [model, market]}
metrics: {cutoffs: [5, 10], gains: [exp, linear]}
"""


def load(tmp_path: Path, extra: str) -> Config:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "c.yaml").write_text(BASE + extra)
    return load_config(tmp_path / "c.yaml", environ={})


def test_a_comparison_takes_every_headline_measure_and_sane_defaults(tmp_path: Path) -> None:
    config = load(
        tmp_path, "comparisons:\n  - {name: c, baseline: {model: v1}, candidate: {model: v2}}\n"
    )
    (comparison,) = config.comparisons
    assert set(comparison.measures) == {
        "ndcg@5:exp", "ndcg@5:linear", "ndcg@10:exp", "ndcg@10:linear", "mrr", "map",
    }  # fmt: skip
    assert (comparison.confidence, comparison.min_queries, comparison.tau) == (0.95, 10, 0.02)
    assert comparison.paired_keys == {"model"}


def test_a_measure_without_gain_takes_the_first_configured_gain(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "comparisons:\n  - {name: c, baseline: {model: v1}, candidate: {model: v2}, "
        "measures: [ndcg@10, precision@5], since: '2026-12-01T00:00:00Z'}\n",
    )
    (comparison,) = config.comparisons
    assert comparison.measures == ("ndcg@10:exp", "precision@5")
    assert comparison.since_ms == 1_796_083_200_000


SIDES = "baseline: {model: v1}, candidate: {model: v2}"


@pytest.mark.parametrize(
    ("entry", "key", "words"),
    [
        ("baseline: {team: a}, candidate: {model: v2}", "baseline.team", "segment key"),
        ("baseline: {model: v1}, candidate: {model: v1}", "candidate", "same segment"),
        (f"{SIDES}, measures: [ndcg@20]", "measures", "not a measure"),
        (f"{SIDES}, confidence: 1.0", "confidence", "[0.5, 1)"),
        (f"{SIDES}, since: 1796083200", "since", "ISO 8601"),
        (f"{SIDES}, confidense: 0.9", "confidense", "did you mean"),
        ("candidate: {model: v2}", "baseline", "required"),
    ],
)
def test_a_bad_comparison_is_one_error_naming_its_key(
    tmp_path: Path, entry: str, key: str, words: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, f"comparisons:\n  - {{name: c, {entry}}}\n")
    assert raised.value.key == f"comparisons[0].{key}"
    assert words in str(raised.value)


def test_a_comparison_rule_names_a_configured_comparison_and_one_of_its_measures(
    tmp_path: Path,
) -> None:
    comparisons = f"comparisons:\n  - {{name: c, {SIDES}, measures: [ndcg@10, mrr]}}\n"
    rule = "alerts:\n  rules:\n    - {name: worse, comparison: {name: c, margin: 0.01}}\n"
    config = load(tmp_path, comparisons + rule)
    (parsed,) = config.alerts.rules
    assert parsed.condition == Comparison("c", "worse", 0.01)
    assert parsed.measure == "ndcg@10:exp" and parsed.segment == (("model", "v2"),)

    for bad, key in (
        ("{name: w, comparison: {name: nope}}", "alerts.rules[0].comparison.name"),
        ("{name: w, measure: map, comparison: {name: c}}", "alerts.rules[0].measure"),
        ("{name: w, segment: {model: v2}, comparison: {name: c}}", "alerts.rules[0].segment"),
        (
            "{name: w, comparison: {name: c, direction: sideways}}",
            "alerts.rules[0].comparison.direction",
        ),
    ):
        with pytest.raises(ConfigError) as raised:
            load(tmp_path, comparisons + f"alerts:\n  rules:\n    - {bad}\n")
        assert raised.value.key == key, bad


def test_a_comparison_alert_links_to_the_candidate_against_the_baseline_segment(
    tmp_path: Path,
) -> None:
    config = load(
        tmp_path,
        'export: {external_url: "https://rankmon.example.com"}\n'
        f"comparisons:\n  - {{name: c, {SIDES}, measures: [ndcg@10]}}\n"
        "alerts:\n  log: false\n  rules:\n    - {name: worse, comparison: {name: c}}\n",
    )
    engine = AlertEngine(config.alerts, start_ms=0)
    worse = MeasureComparison(
        "ndcg@10:exp",
        PairedResult(30, -0.05, 0.01, -0.07, -0.03, 0.001, -0.9),
        0.7,
        0.65,
        "e1",
        sequence=SequenceState(windows=3, precision=3e4, weighted_sum=-1500.0),
        sequence_lower=-0.07,
        sequence_upper=-0.03,
    )
    record = ComparisonRecord("c", "5m", 600_000, 900_000, (worse,))
    (transition,) = engine.observe_comparisons([record], 1_000_000)
    assert transition.message is not None
    url = transition.message.generator_url
    assert url == (
        "https://rankmon.example.com/explain?segment=model%3Dv2&measure=ndcg%4010%3Aexp"
        "&window=600000&segment_against=model%3Dv1"
    )
