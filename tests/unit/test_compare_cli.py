"""`rankmon compare`: candidate runs against a baseline on one qrels, as a deployment gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from monitor.cli import main

QUERIES = 40


def write_files(tmp_path: Path, seed: int = 0) -> dict[str, Path]:
    """qrels of 40 queries (d0 grade 3 .. d4 grade 0); three runs: base, better (puts the best
    document first on 3 of 4 queries), same (base with one swap on a few queries)."""
    rng = np.random.default_rng(seed)
    qrels = "".join(
        f"q{q} 0 d{d} {3 - d if d < 4 else 0}\n" for q in range(QUERIES) for d in range(5)
    )
    (tmp_path / "qrels.txt").write_text(qrels)
    runs: dict[str, list[str]] = {"base": [], "better": [], "same": []}
    for q in range(QUERIES):
        base = [f"d{d}" for d in rng.permutation(5)]
        better = list(base)
        if q % 4:
            better.remove("d0")
            better.insert(0, "d0")
        same = list(base)
        if q % 7 == 0:
            same[0], same[1] = same[1], same[0]
        for name, ranking in (("base", base), ("better", better), ("same", same)):
            runs[name] += [
                f"q{q} Q0 {doc} {r + 1} {10 - r} {name}\n" for r, doc in enumerate(ranking)
            ]
    paths = {}
    for name, lines in runs.items():
        paths[name] = tmp_path / f"{name}.run"
        paths[name].write_text("".join(lines))
    paths["qrels"] = tmp_path / "qrels.txt"
    return paths


def compare_json(
    capsys: pytest.CaptureFixture[str], *args: str | Path
) -> tuple[int, dict[str, Any]]:
    code = main(["compare", "--format", "json", *map(str, args)])
    return code, json.loads(capsys.readouterr().out)


def per_query(
    capsys: pytest.CaptureFixture[str], qrels: Path, run: Path, measure: str
) -> dict[str, float]:
    assert main(["eval", "-q", "-c", "--format", "json", "-m", measure, str(qrels), str(run)]) == 0
    document = json.loads(capsys.readouterr().out)
    return {q: values[measure.replace(".", "_")] for q, values in document["per_query"].items()}


def test_a_better_run_passes_the_gate_with_the_delta_rankmon_eval_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    code, document = compare_json(
        capsys, files["qrels"], files["base"], files["better"], "--test", "t"
    )
    assert code == 0
    (result,) = document["results"]
    before = per_query(capsys, files["qrels"], files["base"], "ndcg_cut.10")
    after = per_query(capsys, files["qrels"], files["better"], "ndcg_cut.10")
    d = np.array([after[q] - before[q] for q in sorted(before)])
    assert result["delta"] == pytest.approx(d.mean(), abs=1e-12)
    t = stats.ttest_rel([after[q] for q in sorted(before)], [before[q] for q in sorted(before)])
    assert result["p_value"] == pytest.approx(t.pvalue, rel=1e-9)
    assert (result["ci_lower"], result["ci_upper"]) == pytest.approx(
        tuple(t.confidence_interval()), rel=1e-9
    )
    assert result["queries"] == QUERIES and result["verdict"] == "better"
    assert document["baseline"] == "base.run" and result["run"] == "better.run"
    assert set(result) == {
        "run", "measure", "mean", "baseline_mean", "delta", "ci_lower", "ci_upper", "p_value",
        "p_value_corrected", "ci_lower_corrected", "ci_upper_corrected", "min_detectable",
        "effect_size", "queries", "verdict", "passes",
    }  # fmt: skip


def test_a_run_that_is_not_better_fails_the_gate_with_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    code, document = compare_json(
        capsys, files["qrels"], files["base"], files["better"], files["same"]
    )
    assert code == 1
    verdicts = {r["run"]: r["verdict"] for r in document["results"]}
    assert verdicts == {"better.run": "better", "same.run": "no_difference"}
    # non-inferior with a margin: the near-identical run passes
    code, _ = compare_json(
        capsys,
        files["qrels"],
        files["base"],
        files["same"],
        "--gate",
        "non-inferior",
        "--margin",
        "0.1",
    )
    assert code == 0


def test_holm_corrects_the_p_values_over_every_run_and_measure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    args = (
        files["qrels"],
        files["base"],
        files["better"],
        files["same"],
        "-m",
        "ndcg_cut.10",
        "-m",
        "P.1",
    )
    _, holm = compare_json(capsys, *args)
    _, none = compare_json(capsys, *args, "--correction", "none")
    raw = [r["p_value"] for r in none["results"]]
    order = np.argsort(raw)
    expected = np.maximum.accumulate(
        [min(1.0, raw[i] * (4 - rank)) for rank, i in enumerate(order)]
    )
    corrected = [holm["results"][i]["p_value_corrected"] for i in order]
    assert corrected == pytest.approx(list(expected))
    assert [r["p_value"] for r in holm["results"]] == raw


def test_text_output_has_one_line_per_run_and_measure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    code = main(
        [
            "compare",
            *map(str, (files["qrels"], files["base"], files["better"])),
            "-m",
            "P.1",
            "-m",
            "map",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    # measures in trec_eval's table order, as `rankmon eval` prints them
    assert [line.split("\t")[:2] for line in lines] == [
        ["better.run", "map"],
        ["better.run", "P_1"],
    ]
    assert "95% CI [" in lines[1] and "n 40" in lines[1] and "better gate: passes" in lines[1]


def test_a_query_a_run_misses_is_left_out_as_eval_does_or_scores_zero_with_c(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    short = tmp_path / "short.run"
    short.write_text(
        "".join(
            line
            for line in files["better"].read_text().splitlines(True)
            if not line.startswith("q1 ")
        )
    )
    args = ["compare", "--format", "json", *map(str, (files["qrels"], files["base"], short))]
    code = main(args)
    captured = capsys.readouterr()
    assert "short.run has no ranking for 1 of the 40 qrels queries; they are left out" in (
        captured.err
    )
    (result,) = json.loads(captured.out)["results"]
    assert result["queries"] == QUERIES - 1
    # the candidate's mean is the one `rankmon eval` prints for the run (its 39 queries)
    assert (
        main(["eval", "--format", "json", "-m", "ndcg_cut.10", str(files["qrels"]), str(short)])
        == 0
    )
    evaluated = json.loads(capsys.readouterr().out)["all"]["ndcg_cut_10"]
    assert result["mean"] == pytest.approx(evaluated, abs=1e-12)
    assert code in (0, 1)

    assert main([*args, "-c"]) in (0, 1)
    captured = capsys.readouterr()
    assert "they score 0 (-c, as trec_eval -c)" in captured.err
    assert json.loads(captured.out)["results"][0]["queries"] == QUERIES


def test_better_with_a_margin_holds_the_corrected_lower_end_to_the_margin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    _, document = compare_json(capsys, files["qrels"], files["base"], files["better"])
    (result,) = document["results"]
    assert result["verdict"] == "better"
    # a margin just under the point estimate but over the interval's lower end: it fails
    margin = (result["delta"] + result["ci_lower_corrected"]) / 2
    code, _ = compare_json(
        capsys, files["qrels"], files["base"], files["better"], "--margin", f"{margin:.6f}"
    )
    assert code == 1
    under = result["ci_lower_corrected"] * 0.9
    code, _ = compare_json(
        capsys, files["qrels"], files["base"], files["better"], "--margin", f"{under:.6f}"
    )
    assert code == 0


def test_the_family_widens_the_gates_interval_with_every_candidate_and_measure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    _, alone = compare_json(capsys, files["qrels"], files["base"], files["better"])
    _, family = compare_json(
        capsys,
        *(files["qrels"], files["base"], files["better"], files["same"]),
        *("-m", "ndcg_cut.10", "-m", "P.1"),
    )
    one = alone["results"][0]
    (four,) = [
        r for r in family["results"] if r["run"] == "better.run" and r["measure"] == one["measure"]
    ]
    assert one["ci_lower_corrected"] == pytest.approx(one["ci_lower"])  # a family of one
    assert four["ci_lower_corrected"] < four["ci_lower"] == pytest.approx(one["ci_lower"])
    assert four["min_detectable"] > one["min_detectable"]


def test_four_queries_are_inconclusive_not_no_difference_and_identical_runs_have_no_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    few = tmp_path / "few.qrels"
    few.write_text(
        "".join(
            line
            for line in files["qrels"].read_text().splitlines(True)
            if line[1] in "0123" and line[2] == " "
        )
    )
    code, document = compare_json(capsys, few, files["base"], files["same"])
    (result,) = document["results"]
    assert result["queries"] == 4 and result["verdict"] == "inconclusive" and code == 1
    assert result["min_detectable"] > 0
    code, document = compare_json(capsys, files["qrels"], files["base"], files["base"])
    (same,) = document["results"]
    assert same["effect_size"] == 0.0 and same["verdict"] == "no_difference"


def test_the_bootstrap_under_fifty_queries_is_warned_about_and_text_shows_the_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    argv = ["compare", *map(str, (files["qrels"], files["base"], files["better"]))]
    main([*argv, "--test", "bootstrap"])
    captured = capsys.readouterr()
    assert "warning: --test bootstrap on 40 queries" in captured.err
    assert "\tbaseline 0." in captured.out and "detects 0." in captured.out


def test_bad_input_is_one_line_naming_the_file_and_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_files(tmp_path)
    broken = tmp_path / "broken.run"
    broken.write_text("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 two\n")
    assert main(["compare", str(files["qrels"]), str(files["base"]), str(broken)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{broken}:2" in err
    assert (
        main(
            [
                "compare",
                str(files["qrels"]),
                str(files["base"]),
                str(files["better"]),
                "-m",
                "num_ret",
            ]
        )
        == 2
    )
    assert "counts and summary-only values are not compared" in capsys.readouterr().err
