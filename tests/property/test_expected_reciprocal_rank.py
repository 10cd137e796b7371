"""ERR@k as the stream computes it (`err@k:max_grade=G`, `monitor.scoring.columns`), against a
published implementation: gdeval.pl, the TREC Web track's evaluation script (as ir_measures
ships it, run with perl), which prints ERR@k to 5 decimals; on both engines, over random
graded judgments (negative grades included) and runs."""

from __future__ import annotations

import importlib.util
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from monitor.scoring.catalog import MeasureKey
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from tests.support.realparts import missing_part


def gdeval() -> Path:
    """ir_measures' copy of gdeval.pl (found, not imported)."""
    spec = importlib.util.find_spec("ir_measures")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        missing_part("ir_measures (a dev dependency) is not installed")
    script = Path(locations[0]) / "bin" / "gdeval.pl"
    if shutil.which("perl") is None or not script.exists():
        missing_part("perl and ir_measures' bin/gdeval.pl are needed")
    return script


@pytest.mark.parametrize("k", [1, 5, 10, 20])
@pytest.mark.parametrize("speedups", [False, True])
def test_streamed_err_is_gdevals(k: int, speedups: bool, tmp_path: Path) -> None:
    rng = random.Random(20261205 + k)
    docs = [f"d{i}" for i in range(60)]
    grades = {str(t): {d: rng.choice([-2, 0, 0, 0, 1, 1, 2, 3, 4]) for d in rng.sample(docs, 30)}
              for t in range(1, 41)}  # fmt: skip
    rankings = {t: rng.sample(docs, rng.choice([0, 3, 10, 25])) for t in grades}
    (tmp_path / "qrels").write_text(
        "".join(f"{t} 0 {d} {g}\n" for t, judged in grades.items() for d, g in judged.items())
    )
    (tmp_path / "run").write_text(
        "".join(f"{t} Q0 {d} {rank} {100 - rank} run\n"
                for t, ranking in rankings.items() for rank, d in enumerate(ranking, start=1))
    )  # fmt: skip
    printed = subprocess.run(
        ["perl", str(gdeval()), str(tmp_path / "qrels"), str(tmp_path / "run"), str(k)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.splitlines()[1:]  # fmt: skip
    theirs = {line.split(",")[1]: float(line.split(",")[3]) for line in printed}
    theirs.pop("amean", None)  # the mean, where gdeval prints it
    evaluation_set = EvaluationSet.from_judgments(grades)
    topics = sorted(theirs)
    scorer = Scorer(evaluation_set, [MeasureKey.parse(f"err@{k}")], speedups=speedups)
    ours = scorer.score(topics, [rankings[t] for t in topics])[:, 0]
    assert len(topics) > 20  # the topics with a ranked document and a relevant judgment
    for topic, value in zip(topics, ours, strict=True):
        assert abs(value - theirs[topic]) <= 0.5e-5 + 1e-12, topic
    assert max(theirs.values()) > 0.3
