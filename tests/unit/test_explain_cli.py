"""`rankmon explain QRELS RUN_BEFORE RUN_AFTER`: the live explanation, offline on TREC runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from monitor.cli import main

PLANTED = ("q2", "q5", "q8")


def write(tmp_path: Path) -> tuple[str, str, str]:
    qrels = "".join(f"q{q} 0 best{q} 3\nq{q} 0 good{q} 1\n" for q in range(10))
    (tmp_path / "qrels.txt").write_text(qrels)
    before, after = [], []
    for q in range(10):
        ranking = [f"best{q}", f"good{q}", "x1", "x2"]
        before += [f"q{q} Q0 {d} {r + 1} {9 - r} before\n" for r, d in enumerate(ranking)]
        if q == 9:
            continue  # the run after lost the query altogether
        if f"q{q}" in PLANTED:
            ranking = [f"x{j}" for j in range(12)] + [f"good{q}"]
        after += [f"q{q} Q0 {d} {r + 1} {20 - r} after\n" for r, d in enumerate(ranking)]
    (tmp_path / "before.run").write_text("".join(before))
    (tmp_path / "after.run").write_text("".join(after))
    return str(tmp_path / "qrels.txt"), str(tmp_path / "before.run"), str(tmp_path / "after.run")


def test_the_planted_losses_come_first_and_the_contributions_add_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path)
    assert main(["explain", *files, "--format", "json", "--top", "20"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["measure"] == "ndcg_cut_10"
    rows = document["queries"]
    assert {row["query"] for row in rows[:3]} == set(PLANTED)
    assert {row["query"]: row["status"] for row in rows}["q9"] == "only_before"
    assert abs(math.fsum(r["contribution"] for r in rows) - document["change"]) <= 1e-12
    shown = {d["query"]: d for d in document["documents"]}
    assert shown["q2"]["left"] == ["best2", "good2"]


def test_text_output_names_the_documents_that_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", *write(tmp_path), "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ndcg_cut_10: 1.0000 on 10 queries before")
    assert [line.split("\t")[0] for line in lines[1::2]] == sorted(PLANTED)
    assert "left the top 10: best2, good2; entered: -" in lines[2]


def test_a_family_or_a_count_is_refused_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path)
    assert main(["explain", *files, "-m", "num_ret"]) == 2
    assert "name one measure" in capsys.readouterr().err
