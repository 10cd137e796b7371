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


def test_text_output_counts_the_queries_and_names_where_each_document_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", *write(tmp_path), "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ndcg_cut_10: 1.0000 on 10 queries before")
    assert lines[1] == ("queries: 3 worse, 0 better, 6 unchanged, 1 only before, 0 only after")
    rows = [line for line in lines[2:] if not line.startswith("\t")]
    assert [line.split("\t")[0] for line in rows] == sorted(PLANTED)
    assert lines[3] == "\tjudged relevant documents moved: best2 1->gone, good2 2->gone"
    assert lines[4] == "\tleft the top 10: best2, good2; entered: -"


def test_with_the_topics_file_each_query_shows_its_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path)
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"q{q}\trunning shoes size {q}\n" for q in range(10)))
    assert main(["explain", *files, "--top", "1", "--topics", str(topics)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith('q2 "running shoes size 2"\tbefore 1.0000\tafter 0.0000')
    assert main(["explain", *files, "--format", "json", "--topics", str(topics)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["queries"][0]["text"] == "running shoes size 2"
    assert document["counts"] == {
        "worse": 3, "better": 0, "unchanged": 6, "only_before": 1, "only_after": 0
    }  # fmt: skip


def test_a_family_or_a_count_is_refused_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(tmp_path)
    assert main(["explain", *files, "-m", "num_ret"]) == 2
    assert "name one measure" in capsys.readouterr().err
