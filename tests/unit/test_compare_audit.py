"""`rankmon compare QRELS BASE CAND --audit HUMAN_QRELS`: each candidate's delta is also
given corrected by the human audit (PPI++ on the per-query differences); the gate stays on
QRELS."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.stats.judges import ppi_mean

QUERIES, DOCS = 60, 10


def write(tmp_path: Path) -> dict[str, Path]:
    rng = random.Random(9)
    human = {f"q{q}": {f"d{q}.{d}": rng.choice([0, 0, 1, 2, 3]) for d in range(DOCS)}
             for q in range(QUERIES)}  # fmt: skip
    model = {q: {d: min(3, g + (rng.random() < 0.5)) for d, g in docs.items()}
             for q, docs in human.items()}  # fmt: skip
    audited = sorted(rng.sample(sorted(human), 20))
    paths = {n: tmp_path / n for n in ("model.qrels", "human.qrels", "base.run", "cand.run")}
    paths["model.qrels"].write_text(
        "".join(f"{q} 0 {d} {g}\n" for q in sorted(model) for d, g in model[q].items())
    )
    paths["human.qrels"].write_text(
        "".join(f"{q} 0 {d} {g}\n" for q in audited for d, g in human[q].items())
    )
    for name in ("base.run", "cand.run"):
        lines = []
        for q, docs in human.items():
            ranked = sorted(docs, key=lambda d: -docs[d] + rng.random() * 3)
            lines += [f"{q} Q0 {d} {r} {DOCS - r} {name}\n" for r, d in enumerate(ranked)]
        paths[name].write_text("".join(lines))
    return paths


def per_query(capsys: pytest.CaptureFixture[str], qrels: Path, run: Path) -> dict[str, float]:
    assert main(["eval", "-q", "-m", "ndcg_cut.10", "--format", "json", str(qrels), str(run)]) == 0
    rows = json.loads(capsys.readouterr().out)["per_query"]
    return {q: float(v["ndcg_cut_10"]) for q, v in rows.items()}


def test_each_delta_is_also_given_corrected_by_the_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write(tmp_path)
    arguments = [str(paths[n]) for n in ("model.qrels", "base.run", "cand.run")]
    main(["compare", *arguments, "--audit", str(paths["human.qrels"]), "--format", "json"])
    [result] = json.loads(capsys.readouterr().out)["results"]
    base, cand = (
        per_query(capsys, paths["model.qrels"], paths[n]) for n in ("base.run", "cand.run")
    )
    base_h, cand_h = (
        per_query(capsys, paths["human.qrels"], paths[n]) for n in ("base.run", "cand.run")
    )
    expected = ppi_mean(
        [cand_h[q] - base_h[q] for q in base_h],
        [cand[q] - base[q] for q in base_h],
        [cand[q] - base[q] for q in base if q not in base_h],
    )
    audit = result["audit"]
    assert (audit["delta"], audit["ci_lower"], audit["ci_upper"]) == pytest.approx(
        (expected.estimate, expected.lower, expected.upper)
    )
    assert main(["compare", *arguments, "--audit", str(paths["human.qrels"])]) in (0, 1)
    assert "\taudited delta " in capsys.readouterr().out
