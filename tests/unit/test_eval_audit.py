"""`rankmon eval QRELS RUN --audit HUMAN_QRELS`: QRELS is a model's judgments, the audit a
human's of a random sample of the queries. Each mean measure is also printed corrected by the
audit (PPI++ with its 95 % interval), and the judge's agreement as a weighted kappa; the
values are `monitor.stats.judges`' on the per-query values `rankmon eval -q` prints."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.stats.judges import ppi_mean, weighted_kappa

QUERIES, DOCS = 60, 12


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A human truth, a judge that grades one higher where it can, a run, an audit of 20."""
    rng = random.Random(4)
    human = {f"q{q}": {f"d{q}.{d}": rng.choice([0, 0, 1, 2, 3]) for d in range(DOCS)}
             for q in range(QUERIES)}  # fmt: skip
    model = {q: {d: min(3, g + (rng.random() < 0.6)) for d, g in docs.items()}
             for q, docs in human.items()}  # fmt: skip
    audited = sorted(rng.sample(sorted(human), 20))

    def qrels(grades: dict[str, dict[str, int]], queries: list[str]) -> str:
        return "".join(f"{q} 0 {d} {g}\n" for q in queries for d, g in grades[q].items())

    paths = {name: tmp_path / name for name in ("model.qrels", "human.qrels", "run")}
    paths["model.qrels"].write_text(qrels(model, sorted(model)))
    paths["human.qrels"].write_text(qrels(human, audited))
    lines = []
    for q, docs in human.items():
        ranked = rng.sample(sorted(docs), DOCS)
        lines += [f"{q} Q0 {d} {r} {DOCS - r} run\n" for r, d in enumerate(ranked)]
    paths["run"].write_text("".join(lines))
    return paths


def evaluate(capsys: pytest.CaptureFixture[str], *arguments: str) -> dict[str, object]:
    assert main(["eval", *arguments, "--format", "json"]) == 0
    loaded: dict[str, object] = json.loads(capsys.readouterr().out)
    return loaded


def test_the_audit_corrects_each_mean_measure_with_ppi_and_gives_the_judges_kappa(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    model, human, run = (str(files[n]) for n in ("model.qrels", "human.qrels", "run"))
    measures = ["-m", "ndcg_cut.10", "-m", "P.5"]
    audited = evaluate(capsys, model, run, *measures, "--audit", human)["audit"]
    by_model = evaluate(capsys, model, run, *measures)["per_query"]
    by_human = evaluate(capsys, human, run, *measures)["per_query"]
    assert isinstance(audited, dict) and isinstance(by_model, dict) and isinstance(by_human, dict)
    assert (audited["queries"], audited["model_only_queries"]) == (20, 40)
    for name in ("ndcg_cut_10", "P_5"):
        expected = ppi_mean(
            [by_human[q][name] for q in by_human],
            [by_model[q][name] for q in by_human],
            [by_model[q][name] for q in by_model if q not in by_human],
        )
        got = audited["measures"][name]
        assert (got["estimate"], got["lower"], got["upper"]) == pytest.approx(
            (expected.estimate, expected.lower, expected.upper)
        )
    # the judge runs high: the corrected nDCG@10 is below the model-judged one
    summary = evaluate(capsys, model, run, *measures)["all"]
    assert isinstance(summary, dict)
    assert audited["measures"]["ndcg_cut_10"]["estimate"] < summary["ndcg_cut_10"]
    rows = [line.split() for line in files["human.qrels"].read_text().splitlines()]
    judged = [line.split() for line in files["model.qrels"].read_text().splitlines()]
    model_grades = {(q, d): int(g) for q, _, d, g in judged}
    kappa = weighted_kappa(
        [int(g) for _, _, _, g in rows], [model_grades[(q, d)] for q, _, d, _ in rows], (0, 1, 2, 3)
    )
    assert audited["kappa"] == pytest.approx(kappa) and audited["judged_pairs"] == 20 * DOCS


def test_the_audit_lines_follow_trec_eval_s_summary(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    model, human, run = (str(files[n]) for n in ("model.qrels", "human.qrels", "run"))
    assert main(["eval", model, run, "-m", "ndcg_cut.10", "--audit", human]) == 0
    names = [line.split("\t")[0].strip() for line in capsys.readouterr().out.splitlines()]
    assert names == [
        "ndcg_cut_10", "audit_queries", "audit_judged_pairs", "audit_kappa",
        "ndcg_cut_10_ppi", "ndcg_cut_10_ppi_lower", "ndcg_cut_10_ppi_upper",
    ]  # fmt: skip


def test_an_audit_of_one_query_is_one_line_and_exit_2(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    one = tmp_path / "one.qrels"
    one.write_text(files["human.qrels"].read_text().splitlines()[0] + "\n")
    model, run = str(files["model.qrels"]), str(files["run"])
    assert main(["eval", model, run, "--audit", str(one)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "the audit needs at least 2 of the run's queries" in error
