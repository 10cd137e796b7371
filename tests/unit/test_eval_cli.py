"""`rankmon eval`: trec_eval's options on hand-made files, and every kind of bad input.

The files (values derived by hand below):

    qrels  q1: d1=2 d2=1 d3=0   q2: d4=1   q3: d5=0 (no relevant document)
    run    q1: d3 3.0, d1 2.0, d9 1.0  (d9 unjudged)   q3: d5 1.0   q4 (not in qrels): x 1.0

q1's ranking is d3(0) d1(2) d9(-): P_2 = 1/2, recip_rank = 1/2, AP = (1/2)/2 = 0.25
(0.5 with -l2, where num_rel = 1); ndcg_cut_2 = (2/log2 3) / (2 + 1/log2 3) = 0.479632
(linear), (3/log2 3) / (3 + 1/log2 3) = 0.521299 (exp). q3 scores 0 everywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.cli import MODULE_OF, OFFLINE_COMMANDS, build_parser, main
from monitor.commands import eval as eval_command

QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 d4 1\nq3 0 d5 0\n"
RUN = "q1 Q0 d3 1 3.0 tagA\nq1 Q0 d1 2 2.0 tagA\nq1 Q0 d9 3 1.0 tagA\nq3 Q0 d5 1 1 tagA\n"
RUN_WITH_UNKNOWN_QUERY = RUN + "q4 Q0 x 1 1.0 tagA\n"

LOG3 = math.log2(3)
NDCG2_LINEAR = (2 / LOG3) / (2 + 1 / LOG3)
NDCG2_EXP = (3 / LOG3) / (3 + 1 / LOG3)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN_WITH_UNKNOWN_QUERY)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")


def eval_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["eval", "--format", "json", *args]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def eval_lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["eval", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_mean_is_over_queries_in_both_files_and_run_only_queries_are_ignored(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    document = eval_json(capsys, "-m", "map", "-m", "num_q", *files)
    assert document["per_query"].keys() == {"q1", "q3"}
    assert document["all"] == {"num_q": 2, "map": pytest.approx(0.25 / 2, abs=1e-15)}


def test_complete_counts_qrels_queries_missing_from_the_run_as_zero(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    document = eval_json(capsys, "-c", "-m", "map", "-m", "num_q", "-m", "num_rel", *files)
    assert document["per_query"]["q2"] == {"map": 0.0, "num_rel": 1}
    assert document["all"] == {"num_q": 3, "map": pytest.approx(0.25 / 3), "num_rel": 3}


def test_query_without_relevant_documents_scores_zero_and_counts(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    document = eval_json(capsys, "-m", "ndcg_cut.2", "-m", "recip_rank", *files)
    assert document["per_query"]["q3"] == {"recip_rank": 0.0, "ndcg_cut_2": 0.0}
    assert document["all"]["ndcg_cut_2"] == pytest.approx(NDCG2_LINEAR / 2)


def test_hand_derived_values_with_linear_and_exponential_gain(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    linear = eval_json(capsys, "-m", "ndcg_cut.2", "-m", "P.2", "-m", "recip_rank", *files)
    assert linear["per_query"]["q1"] == {
        "recip_rank": 0.5,
        "P_2": 0.5,
        "ndcg_cut_2": pytest.approx(NDCG2_LINEAR, abs=1e-12),
    }
    exp = eval_json(capsys, "--gain", "exp", "-m", "ndcg_cut.2", *files)
    assert exp["per_query"]["q1"] == {"ndcg_cut_2": pytest.approx(NDCG2_EXP, abs=1e-12)}


def test_relevance_level_changes_binary_measures_but_not_ndcg(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["-m", "map", "-m", "num_rel", "-m", "ndcg_cut.2", *files]
    level1 = eval_json(capsys, *args)["per_query"]["q1"]
    level2 = eval_json(capsys, "-l", "2", *args)["per_query"]["q1"]
    assert (level1["map"], level1["num_rel"]) == (0.25, 2)
    assert (level2["map"], level2["num_rel"]) == (0.5, 1)
    assert level1["ndcg_cut_2"] == level2["ndcg_cut_2"]


def test_trec_output_has_trec_eval_layout_and_table_order_whatever_the_m_order(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["-q", "-m", "P.2", "-m", "num_ret", "-m", "map", "-m", "runid", "-m", "num_q"]
    assert eval_lines(capsys, *args, *files) == [
        "num_ret               \tq1\t3",
        "map                   \tq1\t0.2500",
        "P_2                   \tq1\t0.5000",
        "num_ret               \tq3\t1",
        "map                   \tq3\t0.0000",
        "P_2                   \tq3\t0.0000",
        "runid                 \tall\ttagA",
        "num_q                 \tall\t2",
        "num_ret               \tall\t4",
        "map                   \tall\t0.1250",
        "P_2                   \tall\t0.2500",
    ]


def test_default_measures_are_the_ones_the_streaming_monitor_computes_in_trec_eval_order(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    names = [line.split("\t")[0].strip() for line in eval_lines(capsys, *files)]
    head = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank"]
    assert names[:8] == head
    cutoffs = ["5", "10", "15", "20", "30", "100", "200", "500", "1000"]
    assert names[8:] == [
        *(f"P_{k}" for k in cutoffs),
        *(f"recall_{k}" for k in cutoffs),
        "ndcg",
        *(f"ndcg_cut_{k}" for k in cutoffs),
        *(f"map_cut_{k}" for k in cutoffs),
        *(f"success_{k}" for k in ("1", "5", "10")),
    ]


def test_jsonl_judgments_give_the_same_report_as_trec_qrels(
    files: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [line.split() for line in QRELS.splitlines()]
    jsonl = tmp_path / "qrels.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"query_id": q, "doc_id": d, "grade": int(g)}) + "\n"
            for q, _, d, g in records
        )
    )
    assert eval_json(capsys, "-c", str(jsonl), files[1]) == eval_json(capsys, "-c", *files)


def test_max_retrieved_keeps_only_the_best_documents(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    document = eval_json(capsys, "-M", "1", "-m", "num_ret", "-m", "recip_rank", *files)
    assert document["per_query"]["q1"] == {"num_ret": 1, "recip_rank": 0.0}


def test_by_default_only_the_first_1000_documents_count_as_trec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "qrels").write_text("q1 0 last 1\n")
    # 1001 documents; the relevant one has the lowest score and falls beyond the cut.
    lines = [f"q1 Q0 d{i} {i} {2000 - i} t\n" for i in range(1000)] + ["q1 Q0 last 0 0.5 t\n"]
    (tmp_path / "run").write_text("".join(lines))
    args = ["-m", "num_ret", "-m", "num_rel_ret", str(tmp_path / "qrels"), str(tmp_path / "run")]
    assert eval_json(capsys, *args)["all"] == {"num_ret": 1000, "num_rel_ret": 0}
    assert eval_json(capsys, "-M", "1001", *args)["all"] == {"num_ret": 1001, "num_rel_ret": 1}


def test_float32_scores_tie_and_fall_back_to_docno_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "qrels").write_text(QRELS)
    # As doubles d1 (grade 2) is first; as C floats the scores tie and "d3" > "d1" leads.
    (tmp_path / "run").write_text("q1 Q0 d1 1 0.30000000000000004 t\nq1 Q0 d3 2 0.3 t\n")
    args = ["-m", "recip_rank", str(tmp_path / "qrels"), str(tmp_path / "run")]
    assert eval_json(capsys, *args)["all"] == {"recip_rank": 1.0}
    assert eval_json(capsys, "--score-precision", "float32", *args)["all"] == {"recip_rank": 0.5}


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for option in ("-q", "-c", "-m", "-l", "-M", "--gain", "--format", "--score-precision"):
        assert f"{option} " in text
    assert "all_rankmon" in text
    assert "ndcg_cut" in text


def one_error_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run `rankmon eval` expecting exit code 2 and exactly one line on stderr, no stdout."""
    assert main(["eval", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_malformed_qrels_line_names_file_and_line(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    Path(files[0]).write_text("q1 0 d1 1\nq1 0 d2 high\n")
    error = one_error_line(capsys, *files)
    assert error.startswith(f"rankmon eval: {files[0]}:2: ")
    assert "'high'" in error


@pytest.mark.parametrize(
    ("run_text", "problem"),
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2\n", "2: expected 'qid Q0 docno rank score tag', found 4"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 x t\n", "2: score 'x' is not a number"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "2: query q1: duplicate document d1"),
    ],
)
def test_malformed_run_line_names_file_line_and_problem(
    files: tuple[str, str], run_text: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Path(files[1]).write_text(run_text)
    assert one_error_line(capsys, *files).startswith(f"rankmon eval: {files[1]}:{problem}")


@pytest.mark.parametrize("which", [0, 1])
def test_missing_file_is_named(
    files: tuple[str, str], which: int, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = list(files)
    paths[which] += ".missing"
    assert one_error_line(capsys, *paths).startswith(f"rankmon eval: {paths[which]}: ")


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("-m", "ndgc_cut.10", "ndgc_cut.10"),
        ("-m", "P.0", "P.0"),
        ("-m", "P.five", "P.five"),
        ("-m", "map.5", "map"),
        ("-m", "prefs", "qrels_prefs"),
        ("-m", "ndcg.1:3", "name=value"),
        ("-m", "utility.1,2", "4 coefficients"),
        ("-m", "P.5,5", "twice"),
        ("-m", "official.5", "no parameters"),
        ("-R", "qrels_jg", "-R qrels_jg"),
        ("-N", "many", "-N DOCS"),
        ("-l", "two", "-l LEVEL"),
        ("-l", "-1", "-l LEVEL"),
        ("-M", "ten", "-M DEPTH"),
    ],
)
def test_bad_measure_or_option_value_is_one_line_naming_it(
    files: tuple[str, str], option: str, value: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert named in one_error_line(capsys, option, value, *files)


def test_argparse_usage_errors_exit_2_without_traceback(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--format", "xml", *files])
    assert exited.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


RUN_TOKENS = ["q1", "q2", "Q0", "d1", "d2", "1", "0.5", "-2e3", "inf", "nan", "1_0", "x", "é"]
RUN_BYTES = st.lists(
    st.lists(st.sampled_from(RUN_TOKENS), max_size=8).map(" ".join).map(str.encode)
    | st.binary(max_size=20),
    max_size=6,
).map(b"\n".join)


@settings(max_examples=60, deadline=None)
@given(run_bytes=RUN_BYTES)
def test_any_run_file_gives_a_report_or_one_error_line_never_a_traceback(
    run_bytes: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "qrels").write_text(QRELS)
    (folder / "run").write_bytes(run_bytes)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["eval", "-q", str(folder / "qrels"), str(folder / "run")])
    if code == 0:  # a report, and at most a warning that it scores nothing
        warned = err.getvalue()
        assert warned == "" or (
            warned.startswith("rankmon eval: warning: ")
            and str(folder / "run") in warned
            and len(warned.splitlines()) == 1
        )
    else:
        assert code == 2
        assert out.getvalue() == ""
        assert err.getvalue().startswith(f"rankmon eval: {folder / 'run'}:")
        assert len(err.getvalue().splitlines()) == 1


def test_eval_loads_neither_the_kafka_client_nor_the_service(files: tuple[str, str]) -> None:
    # The other subcommands' modules are not imported: start-up is most of a small evaluation.
    script = (
        "import sys\n"
        "from monitor.cli import main\n"
        f"code = main(['eval', '-m', 'map', {files[0]!r}, {files[1]!r}])\n"
        "heavy = ('kafka', 'monitor.service', 'prometheus_client')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "print(code, loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "0 []"


def test_an_offline_command_runs_without_the_cycle_collector_and_gives_it_back(
    files: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A large evaluation holds a dict per query: the cyclic collector would walk them again
    # and again. Whoever calls main() in process gets the collector back, after an error too.
    seen: list[bool] = []
    real = eval_command.run_eval

    def watched(args: argparse.Namespace) -> int:
        seen.append(gc.isenabled())
        return real(args)

    monkeypatch.setattr(eval_command, "run_eval", watched)
    assert main(["eval", "-m", "map", *files]) == 0
    assert main(["eval", "-m", "no_such_measure", *files]) == 2
    assert seen == [False, False]
    assert gc.isenabled()
    capsys.readouterr()


@pytest.mark.parametrize(("given", "kept"), [(None, "1"), ("3", "3")])
def test_rankmon_keeps_openblas_to_one_thread_unless_the_user_set_it(
    files: tuple[str, str], given: str | None, kept: str
) -> None:
    script = (
        "import os, sys\n"
        "from monitor.cli import main\n"
        f"code = main(['eval', '-m', 'map', {files[0]!r}, {files[1]!r}])\n"
        "threads = len(os.listdir('/proc/self/task'))\n"  # the run reader's second has ended
        "print(code, os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules, threads)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    code, setting, numpy_loaded, threads = done.stdout.splitlines()[-1].split()
    assert (code, setting, numpy_loaded) == ("0", kept, "True")
    if given is None:  # numpy was imported after: OpenBLAS started no worker thread
        assert threads == "1"


def subcommands(parser: argparse.ArgumentParser) -> set[str]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(action.choices)


def test_every_command_module_registers_the_subcommand_named_after_it() -> None:
    assert subcommands(build_parser()) == set(MODULE_OF)
    for command in MODULE_OF:
        alone = command in OFFLINE_COMMANDS
        assert subcommands(build_parser(command)) == ({command} if alone else set(MODULE_OF))
    assert subcommands(build_parser("no-such-command")) == set(MODULE_OF)


def test_no_summary_prints_only_the_per_query_lines(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    lines = eval_lines(capsys, "-q", "-n", "-m", "map", "-m", "runid", *files)
    assert [line.split("\t")[1] for line in lines] == ["q1", "q3"]
    assert eval_lines(capsys, "-n", "-m", "map", *files) == []
    assert "all" not in eval_json(capsys, "-n", "-m", "map", *files)


def test_judged_only_and_collection_size_reach_the_measures_from_the_command_line(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # q1 retrieves d3 (0), d1 (2), d9 (not judged); q3 retrieves d5 (0).
    plain = eval_json(capsys, "-q", "-m", "num_ret", "-m", "relstring", *files)["per_query"]
    judged = eval_json(capsys, "-q", "-J", "-m", "num_ret", "-m", "relstring", *files)
    assert (plain["q1"]["num_ret"], plain["q1"]["relstring"]) == (3, "02-")
    assert (judged["per_query"]["q1"]["num_ret"], judged["per_query"]["q1"]["relstring"]) == (
        2,
        "02",
    )
    # utility's fourth term: N + relevant retrieved - retrieved - relevant, per query.
    utility = eval_json(capsys, "-N", "10", "-m", "utility.0,0,0,1", *files)["all"]
    assert utility["utility_0,0,0,1"] == ((10 + 1 - 3 - 2) + (10 + 0 - 1 - 0)) / 2


HUGE = "99999999999999999999999"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-M", HUGE], "-M DEPTH (documents per query) must be a whole number from 0 to"),
        (["-N", HUGE], "-N DOCS (documents in the collection) must be a whole number from 0 to"),
        (["-m", f"P.{HUGE}"], "cutoffs must be whole numbers from 1 to 2147483647"),
        (["-m", f"ndcg_cut.5,{HUGE}"], "cutoffs must be whole numbers from 1 to 2147483647"),
    ],
    ids=["depth", "docs", "cutoff", "second cutoff"],
)
def test_a_number_too_large_to_hold_is_one_line_and_exit_2_never_a_traceback_or_a_float(
    files: tuple[str, str], args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert words in one_error_line(capsys, *args, *files)


def test_the_largest_cutoff_is_printed_exactly(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "-m", "P.2147483647", *files]) == 0
    assert capsys.readouterr().out.startswith("P_2147483647 ")
