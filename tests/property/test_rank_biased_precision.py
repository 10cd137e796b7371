"""RBP@k and its residual as the stream computes them (`rbp@k:p=P`, `rbp_residual@k:p=P`,
`monitor.scoring.columns`), against trec_eval's own `rbp` and `rbp_resid` (rankmon eval's
trec_eval-exact families, held to trec_eval 10's outputs) on the ranking cut at k, bit for bit
on both engines, over trec_eval's test files; and as a user names, streams, exports and
alerts on them (`metrics.measures`). The tests over the whole measure table (the oracle's,
the alert rules') take them in without a line."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from monitor.cli import main
from monitor.config.loader import load_config
from monitor.errors import ConfigError, MeasureError
from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.scorer import Scorer
from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import Run as TrecRun
from monitor.trec.runfile import read_run
from monitor.trec.selection import select_measures
from tests.support.fake_monitor import T0, on_fakes
from tests.unit.test_rules_over_the_measure_table import CONFIG, QUERIES

CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "trec_eval"


def trec_values(evaluation_set: EvaluationSet, run: TrecRun, p: float) -> dict[str, list[float]]:
    """trec_eval's rbp and rbp_resid per query (the run's queries the set judges, sorted)."""
    selection = select_measures([f"rbp.p={p}", f"rbp_resid.p={p}"])
    report = evaluate_run(evaluation_set, run, selection)
    return {name: [float(v) for v in report.values[name]] for name in report.names}


@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
@pytest.mark.parametrize("k", [1, 5, 10, 50])
@pytest.mark.parametrize("speedups", [False, True])
def test_streamed_rbp_and_its_residual_are_trec_evals_on_the_ranking_cut_at_k(
    k: int, p: float, speedups: bool
) -> None:
    evaluation_set = load_evaluation_set(CONFORMANCE / "qrels.test")
    full = read_run(CONFORMANCE / "results.test")
    cut = TrecRun(full.path, full.tag, {q: r[:k] for q, r in full.rankings.items()})
    expected = trec_values(evaluation_set, cut, p)
    queries = sorted(q for q in full.rankings if q in evaluation_set)
    keys = [MeasureKey.parse(f"rbp@{k}:p={p}"), MeasureKey.parse(f"rbp_residual@{k}:p={p}")]
    scorer = Scorer(evaluation_set, keys, speedups=speedups)
    values = scorer.score(queries, [full.rankings[q] for q in queries])
    rbp_name, resid_name = (f"rbp_p={p}", f"rbp_resid_p={p}")
    assert list(values[:, 0]) == expected[rbp_name]
    assert list(values[:, 1]) == expected[resid_name]
    if k >= 50:  # the files leave documents of the deeper ranks unjudged
        assert any(v > 0 for v in expected[resid_name])


@pytest.mark.parametrize("name", ["rbp@10", "rbp@10:p=0.8", "rbp_10:p=.80", "rbp@10:p=8e-1"])
def test_every_name_of_rbp_at_10_is_one_key_with_persistence_as_a_parameter(name: str) -> None:
    key = MeasureKey.parse(name)
    assert str(key) == "rbp@10:p=0.8" and key.params == (("p", 0.8),)
    for bad, problem in (("rbp@10:q=1", "takes no parameter 'q'"), ("rbp@5:p=2", "in [0, 1]")):
        with pytest.raises(MeasureError, match=re.escape(problem)):
            MeasureKey.parse(bad)


def test_a_rule_on_rbp_is_refused_until_metrics_measures_streams_it(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q0 0 best0 3\n")
    (tmp_path / "rankmon.yaml").write_text(CONFIG.format(measure="rbp@10", streamed=""))
    with pytest.raises(ConfigError, match=r"not streamed: name it in metrics\.measures"):
        load_config(tmp_path / "rankmon.yaml", environ={})


def test_streamed_rbp_is_exported_with_its_persistence_as_a_label(tmp_path: Path) -> None:
    lines = [f"q{i} 0 best{i} 3\nq{i} 0 good{i} 1\n" for i in range(QUERIES)]
    config = CONFIG.format(measure="rbp@5:p=0.5", streamed="'rbp@5:p=.5', rbp_residual@5")
    with on_fakes(tmp_path, config, lines) as run:
        for i in range(QUERIES):
            ranking = [f"best{i}", "unjudged", f"good{i}"]
            run.send({"event_id": f"e{i}", "query_id": f"q{i}", "event_time": T0 + 100 + i,
                      "ranking": ranking})  # fmt: skip
        run.finalize()
        monitor = run.monitor
        labels = {"window": "10s", "version": monitor.snapshot().evaluation_set_version}
        rbp = monitor.registry.get_sample_value("rankmon_rbp", {"k": "5", "p": "0.5", **labels})
        residual = monitor.registry.get_sample_value(
            "rankmon_rbp_residual", {"k": "5", "p": "0.8", **labels}
        )
        # gains 3/3, 0 (unjudged), 1/3 at p 0.5: 0.5 * (1 + 0.25 / 3); at p 0.8 the unjudged
        # second document could add (1 - 0.8) * 0.8, and what lies past the third 0.8^3
        assert rbp == pytest.approx(0.5 * (1 + 0.25 / 3))
        assert residual == pytest.approx((1 - 0.8) * 0.8 + 0.8**3)


def test_rankmon_eval_prints_rbp_at_10_as_trec_eval_computes_it_on_the_run_cut_at_10(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels, run = CONFORMANCE / "qrels.test", CONFORMANCE / "results.test"
    cut = tmp_path / "results.cut10"  # each query's first 10 in trec_eval's order
    cut.write_text(
        "".join(
            f"{query} Q0 {doc} {rank} {100 - rank} cut\n"
            for query, ranking in read_run(run).rankings.items()
            for rank, doc in enumerate(ranking[:10], start=1)
        )
    )

    def evaluated(*arguments: str) -> dict[str, dict[str, float]]:
        assert main(["eval", "--format", "json", "-q", *arguments]) == 0
        return dict(orjson.loads(capsys.readouterr().out)["per_query"])

    ours = evaluated("-m", "rbp@10:p=0.8", "-m", "rbp_residual@10", str(qrels), str(run))
    trec = evaluated("-m", "rbp.p=0.8", "-m", "rbp_resid.p=0.8", str(qrels), str(cut))
    assert {q: v["rbp@10:p=0.8"] for q, v in ours.items()} == {
        q: v["rbp_p=0.8"] for q, v in trec.items()
    }
    assert {q: v["rbp_residual@10:p=0.8"] for q, v in ours.items()} == {
        q: v["rbp_resid_p=0.8"] for q, v in trec.items()
    }
