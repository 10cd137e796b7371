"""Every measure an alert rule may watch, read off the table (`KIND_TABLE`'s `quality`
kinds: streamed by default, or named in `metrics.measures` as RBP is), gets a floor rule that
fires on a monitor whose windows fall under it: a new kind needs no new test here, and a rule
on any of them (`ndcg_upper@10`, `ndcg_condensed@10`, `rprec`, `rbp@10`, ...) can page."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.scoring.catalog import KIND_TABLE, MeasureKind
from tests.support.fake_monitor import T0, on_fakes

QUERIES = 60
WATCHED = [kind for kind in KIND_TABLE if kind.quality]
CONFIG = """
kafka: {{bootstrap_servers: ["127.0.0.1:1"], topic: events}}
evaluation_set: {{path: qrels.txt, reload: {{watch: false}}}}
metrics: {{cutoffs: [10], measures: [{streamed}]}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 5s}}
schedule: {{interval: 1s}}
export: {{host: 127.0.0.1, port: 0}}
logging: {{level: WARNING}}
alerts:
  log: false
  rules:
    - {{name: floor, measure: "{measure}", below: 0.5, severity: critical}}
"""


def measure_of(kind: MeasureKind) -> str:
    """The rule's `measure`, as a user writes it: at the cutoff when the kind takes one."""
    return kind.name if kind.cutoff is False else f"{kind.name}@10"


def ranking(i: int) -> list[str]:
    """Every fifth query ranked well, the rest with judged non-relevant documents only: each
    measure's mean near 0.2, spread over the queries."""
    fillers = [f"f{i}.{j}" for j in range(10)]
    return [f"best{i}", f"good{i}", *fillers[:8]] if i % 5 == 0 else fillers


@pytest.mark.parametrize("kind", WATCHED, ids=[kind.name for kind in WATCHED])
def test_a_floor_rule_on_every_watched_measure_fires_when_its_windows_fall_under_it(
    kind: MeasureKind, tmp_path: Path
) -> None:
    lines = [f"q{i} 0 best{i} 3\nq{i} 0 good{i} 1\n" for i in range(QUERIES)]
    lines += [f"q{i} 0 f{i}.{j} 0\n" for i in range(QUERIES) for j in range(10)]
    streamed = "" if kind.stream else measure_of(kind)  # not by default: named to stream
    config = CONFIG.format(measure=measure_of(kind), streamed=streamed)
    with on_fakes(tmp_path, config, lines) as run:
        for window in range(3):
            start = T0 + window * 10_000
            run.send(*({"event_id": f"{window}-{i}", "query_id": f"q{i}", "ranking": ranking(i),
                        "event_time": start + 100 + i} for i in range(QUERIES)))  # fmt: skip
        run.finalize()
        firing = [a for a in run.monitor.snapshot().alerts if a.status.value == "firing"]
        assert [a.rule.name for a in firing] == ["floor"], kind.name
        assert firing[0].rule.measure.startswith(kind.name)
