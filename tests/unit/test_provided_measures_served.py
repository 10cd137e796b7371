"""A trec_eval measure named in `metrics.measures` goes the whole way a streamed measure goes:
the monitor computes it per event, exports its window mean (rankmon eval's mean of the same
rankings) under its lower-case series, pages on a rule over it, renders that rule for
Prometheus, and draws it on the quality dashboard; and a service that does not stream it
declares none of its series."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest

from monitor.alerting.render import render_prometheus_rules
from monitor.config.loader import load_config
from monitor.dashboards import build_dashboards, expressions, load_spec
from monitor.errors import ConfigError
from monitor.scoring.evalset import EvaluationSet
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import Run
from monitor.trec.selection import select_measures
from tests.support.fake_monitor import T0, on_fakes
from tests.unit.test_rules_over_the_measure_table import CONFIG

QUERIES = 30


def judgments(i: int) -> dict[str, int]:
    """Graded judgments, one pooled but unjudged document (a negative grade)."""
    return {f"a{i}": 3, f"b{i}": 1, f"c{i}": 0, f"d{i}": 0, f"e{i}": -1}


def ranking(i: int) -> tuple[str, ...]:
    """Relevant documents at ranks that differ by query, behind nonrelevant and unjudged ones."""
    head = [f"c{i}", f"x{i}", f"e{i}", f"d{i}"][: i % 4]
    return (*head, f"b{i}", f"y{i}", f"a{i}")


def scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        match[1]: float(match[2])
        for match in re.finditer(r"^(rankmon_[a-z_]+\{[^}]*\}) (\S+)$", text, re.MULTILINE)
    }


def only(samples: dict[str, float], series: str, label: str = "") -> float:
    (value,) = [v for name, v in samples.items() if name.startswith(series + "{") and label in name]
    return value


def test_a_provided_measure_is_streamed_exported_alerted_on_rendered_and_drawn(
    tmp_path: Path,
) -> None:
    grades = {f"q{i}": judgments(i) for i in range(QUERIES)}
    lines = [f"{q} 0 {doc} {grade}\n" for q, docs in grades.items() for doc, grade in docs.items()]
    measures = 'bpref, "set_F:beta=0.5", relative_P@10'
    config = CONFIG.format(measure="bpref", streamed=measures).replace("below: 0.5", "below: 0.9")
    with on_fakes(tmp_path, config, lines) as run:
        run.monitor.start()
        run.send(
            *(
                {"event_id": f"e{i}", "query_id": f"q{i}", "ranking": list(ranking(i)),
                 "event_time": T0 + 100 + i}
                for i in range(QUERIES)
            )
        )  # fmt: skip
        run.finalize()
        samples = scrape(run.monitor.metrics_url)
        firing = [a.rule.name for a in run.monitor.snapshot().alerts if a.status.value == "firing"]

    rankings = {f"q{i}": ranking(i) for i in range(QUERIES)}
    report = evaluate_run(
        EvaluationSet.from_judgments(grades),
        Run("run", "tag", rankings),
        select_measures(["bpref", "set_F.0.5", "relative_P.10"]),
    )
    expected = {name: float(value) for name, value in report.summary.items()}
    assert only(samples, "rankmon_bpref") == pytest.approx(expected["bpref"], rel=1e-12)
    assert only(samples, "rankmon_set_f", 'beta="0.5"') == pytest.approx(
        expected["set_F_0.5"], rel=1e-12
    )
    assert only(samples, "rankmon_relative_p", 'k="10"') == pytest.approx(
        expected["relative_P_10"], rel=1e-12
    )
    assert expected["bpref"] < 0.9
    assert firing == ["floor"]

    loaded = load_config(tmp_path / "rankmon.yaml", environ={})
    rendered = render_prometheus_rules(loaded.alerts)
    assert "record: job:rankmon_bpref:mean" in rendered
    assert "(job:rankmon_bpref:mean < 0.9)" in rendered.split("alert: floor")[1]
    quality = build_dashboards(load_spec(tmp_path / "rankmon.yaml"))[0]
    assert any("rankmon_bpref_sum_of_query_means" in expr for expr in expressions(quality))


def test_a_service_that_does_not_stream_a_provided_measure_declares_none_of_its_series(
    tmp_path: Path,
) -> None:
    config = CONFIG.format(measure="ndcg@10", streamed="")
    with on_fakes(tmp_path, config, ["q0 0 a0 1\n"]) as run:
        run.monitor.start()
        with urllib.request.urlopen(run.monitor.metrics_url, timeout=5) as response:
            text = response.read().decode()
    declared = set(re.findall(r"^# TYPE (\S+) ", text, flags=re.MULTILINE))
    assert "rankmon_ndcg" in declared
    assert not {"rankmon_bpref", "rankmon_set_f", "rankmon_infap"} & declared


def test_rules_on_any_row_of_the_table_are_drawn_with_their_parameters(tmp_path: Path) -> None:
    # Names with underscores and capitals and keys with parameters: each rule's panel reads
    # its own series, its cutoff, gain and parameters matched.
    rules = (
        '    - {name: upper, measure: "ndcg_upper@10", below: 0.5}\n'
        '    - {name: rbp, measure: "rbp@10:p=0.9", below: 0.5}\n'
        '    - {name: f, measure: "set_F:beta=0.5", below: 0.5}\n'
    )
    config = CONFIG.format(measure="ndcg@10", streamed='"rbp@10:p=0.9", "set_F:beta=0.5"')
    (tmp_path / "rankmon.yaml").write_text(config + rules)
    (tmp_path / "qrels.txt").write_text("q0 0 a0 1\n")
    quality = build_dashboards(load_spec(tmp_path / "rankmon.yaml"))[0]
    drawn = [expr for expr in expressions(quality) if "sum_of_query_means{" in expr]
    for series, matchers in (
        ("rankmon_ndcg_upper", ('k="10"', 'gain="linear"')),
        ("rankmon_rbp", ('k="10"', 'p="0.9"')),
        ("rankmon_set_f", ('beta="0.5"',)),
    ):
        assert any(
            f"{series}_sum_of_query_means{{" in expr and all(m in expr for m in matchers)
            for expr in drawn
        ), series


def test_a_trec_eval_measure_the_stream_cannot_hold_is_refused_naming_what_to_stream(
    tmp_path: Path,
) -> None:
    (tmp_path / "qrels.txt").write_text("q0 0 a0 1\n")
    for name, instead in (("gm_map", "stream map"), ("rbp_resid", "rbp_residual@k:p=P")):
        (tmp_path / "rankmon.yaml").write_text(CONFIG.format(measure="ndcg@10", streamed=name))
        with pytest.raises(ConfigError, match=r"metrics\.measures") as refused:
            load_config(tmp_path / "rankmon.yaml", environ={})
        assert "cannot be streamed" in str(refused.value)
        assert instead in str(refused.value)
