"""`rankmon eval` reproduces trec_eval 10.0's own expected outputs, line for line.

The inputs and outputs are trec_eval's test suite (`tests/data/trec_eval/`, copied unmodified with
NIST's notice; its README gives the command behind each file). Each test runs the command that
made an expected file and requires every one of its lines: the same queries, the same measures
in the same order, the same values at trec_eval's printed precision.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.cli import main

# The measures of the group all_rankmon: those the streaming monitor computes too.
ALL_RANKMON = re.compile(
    r"runid|num_q|num_ret|num_rel|num_rel_ret|map|Rprec|recip_rank|P_\d+|recall_\d+|ndcg|"
    r"ndcg_cut_\d+|map_cut_\d+|success_\d+"
)
EVERY_LINE = re.compile(r".*")

# trec_eval's Makefile commands (tests/data/trec_eval/README.md), as rankmon arguments.
CASES = {
    "out.test.aq": ["-m", "all_trec", "-q", "qrels.test", "results.test"],
    "out.test.aqc": ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
    "out.test.aql": [
        "-m",
        "all_trec",
        "-mrelstring.20",
        "-q",
        "-l2",
        "qrels.rel_level",
        "results.test",
    ],
    "out.test.meas_params": [
        "-q",
        "-miprec_at_recall..10,.20,.25,.75,.50",
        "-m",
        "P.5,7,3",
        "-m",
        "recall.20,2000",
        "-m",
        "Rprec_mult.5.0,0.2,0.35",
        "-mutility.2,-1,0,0",
        "-m",
        "11pt_avg..25,.5,.75",
        "-mndcg.1=3,2=9,4=4.5",
        "-mndcg_cut.10,20,23.4",
        "-msuccess.2,5,20",
        "qrels.test",
        "results.test",
    ],
}


def conformance_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "trec_eval"


def expected_lines(name: str, measures: re.Pattern[str] = EVERY_LINE) -> list[str]:
    """The lines of trec_eval's expected output whose measure matches `measures`."""
    text = (conformance_dir() / name).read_text()
    return [line for line in text.splitlines() if measures.fullmatch(line.split("\t")[0].strip())]


def rankmon_eval(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    folder = conformance_dir()
    files = [str(folder / arg) if (folder / arg).is_file() else arg for arg in args]
    assert main(["eval", *files]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


@pytest.mark.parametrize("expected", sorted(CASES))
def test_every_line_of_trec_eval_s_expected_output_is_reproduced_in_order(
    expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wanted = expected_lines(expected)
    assert len(wanted) in (387, 88)
    assert rankmon_eval(CASES[expected], capsys).splitlines() == wanted


def test_the_default_group_prints_the_monitor_s_measures_as_trec_eval_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    wanted = expected_lines("out.test.aq", ALL_RANKMON)
    names = {line.split("\t")[0].strip() for line in wanted}
    assert {"Rprec", "map_cut_10", "success_5", "ndcg", "recip_rank"} <= names
    assert rankmon_eval(["-q", "qrels.test", "results.test"], capsys).splitlines() == wanted


def test_complete_evaluation_prints_the_query_missing_from_the_run_as_zeros(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # results.trunc has no query 302; trec_eval -c still reports it (num_rel 77, all else 0).
    lines = rankmon_eval(
        ["-q", "-c", "-m", "num_rel", "-m", "map", *CASES["out.test.aqc"][2:]], capsys
    )
    assert "num_rel               \t302\t77" in lines.splitlines()
    assert "map                   \t302\t0.0000" in lines.splitlines()
    without_c = rankmon_eval(["-q", "-m", "map", "qrels.test", "results.trunc"], capsys)
    assert "\t302\t" not in without_c


def test_selected_measures_print_only_their_lines_in_trec_eval_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["-q", "-m", "ndcg_cut.20,5", "-m", "recip_rank", "-m", "P.10"]
    out = rankmon_eval([*args, "qrels.test", "results.test"], capsys)
    wanted = expected_lines("out.test.aq", re.compile(r"recip_rank|P_10|ndcg_cut_(5|20)"))
    assert out.splitlines() == wanted


def test_json_output_holds_the_same_numbers_at_full_precision(
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = json.loads(rankmon_eval(["--format", "json", *CASES["out.test.aql"]], capsys))
    for line in expected_lines("out.test.aql"):
        name, qid, shown = (field.strip() for field in line.split("\t"))
        if name == "runid":
            continue
        if name == "relstring_20":
            assert f"'{document['per_query'][qid][name]}'" == shown
            continue
        value = document["all"][name] if qid == "all" else document["per_query"][qid][name]
        if isinstance(value, int):
            assert str(value) == shown, (name, qid)
        else:
            assert f"{value:.4f}" == shown, (name, qid)
    # Full precision, not the printed 4 decimals.
    assert document["all"]["map"] != round(document["all"]["map"], 4)


def test_installed_script_exits_0_on_conformance_input_and_2_on_a_bad_measure() -> None:
    folder = conformance_dir()
    script = Path(sys.executable).parent / "rankmon"
    files = [str(folder / "qrels.test"), str(folder / "results.test")]
    good = subprocess.run(
        [script, "eval", "-m", "map", *files], capture_output=True, text=True, check=False
    )
    wanted = [line for line in expected_lines("out.test.aq") if line.startswith("map ")]
    assert (good.returncode, good.stdout.splitlines()) == (0, wanted[-1:])
    bad = subprocess.run(
        [script, "eval", "-m", "ndgc", *files], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert len(bad.stderr.splitlines()) == 1
    assert "ndgc" in bad.stderr
