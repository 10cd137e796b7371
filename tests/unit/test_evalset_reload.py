from __future__ import annotations

import os
from pathlib import Path

import pytest

from monitor.errors import InputError
from monitor.scoring.reload import EvaluationSetConfig, EvaluationSetSource
from monitor.testing.clock import FakeClock
from monitor.values import parse_duration
from tests.support.fake_monitor import on_fakes


def _source(path: Path, clock: FakeClock, watch: bool = True) -> EvaluationSetSource:
    config = EvaluationSetConfig(path=path, watch=watch, poll_interval=parse_duration("10s"))
    return EvaluationSetSource(config, clock)


def _touch_later(path: Path, text: str) -> None:
    # A new mtime even on file systems with coarse timestamps.
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def test_changed_file_is_reloaded_at_the_next_check_with_a_new_version(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    clock = FakeClock(0)
    source = _source(qrels, clock)
    first = source.current.version
    _touch_later(qrels, "q1 0 d1 2\n")
    assert source.poll() is None  # not yet time to look
    clock.advance(10_000)
    reloaded = source.poll()
    assert reloaded is not None
    assert reloaded.version != first
    assert source.current is reloaded


def test_reload_request_reads_the_file_even_when_watching_is_off(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    source = _source(qrels, FakeClock(0), watch=False)
    qrels.write_text("q1 0 d1 1\nq2 0 d2 3\n")
    assert source.poll() is None
    source.request_reload()  # SIGHUP
    reloaded = source.poll()
    assert reloaded is not None
    assert len(reloaded) == 2


def test_broken_file_keeps_the_set_in_use(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    source = _source(qrels, FakeClock(0))
    kept = source.current
    _touch_later(qrels, "q1 0 d1 not-a-grade\n")
    source.request_reload()
    assert source.poll() is None
    assert source.current is kept


def test_same_content_saved_again_changes_nothing(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    source = _source(qrels, FakeClock(0))
    _touch_later(qrels, "q1 0 d1 1\n")
    source.request_reload()
    assert source.poll() is None


def test_a_bad_file_at_start_is_an_error_naming_the_line(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nbroken\n")
    with pytest.raises(InputError, match=r"qrels.txt:2"):
        _source(qrels, FakeClock(0))


def test_a_failed_reload_is_counted_and_flagged_until_a_reload_succeeds(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    config = (
        "kafka: {bootstrap_servers: ['127.0.0.1:1'], topic: events}\n"
        "evaluation_set: {path: qrels.txt, reload: {watch: false}}\n"
        "export: {host: 127.0.0.1, port: 0}\nlogging: {level: CRITICAL}\n"
    )
    with on_fakes(tmp_path, config, ["q1 0 d1 1\n"]) as run:
        monitor = run.monitor
        monitor.start()
        registry = monitor.registry

        def failures() -> tuple[float | None, float | None]:
            failed = registry.get_sample_value(
                "rankmon_evaluation_set_reloads_total", {"result": "failed"}
            )
            return (
                failed or 0.0,
                registry.get_sample_value("rankmon_evaluation_set_reload_failing"),
            )

        assert failures() == (0.0, 0.0)
        _touch_later(qrels, "q1 0 d1 not-a-grade\n")
        monitor.request_reload()
        monitor.tick()
        assert failures() == (1.0, 1.0)
        _touch_later(qrels, "q1 0 d1 2\n")
        monitor.request_reload()
        monitor.tick()
        assert failures() == (1.0, 0.0)
        assert (
            registry.get_sample_value("rankmon_evaluation_set_reloads_total", {"result": "ok"})
            == 1.0
        )
        assert registry.get_sample_value("rankmon_evaluation_set_queries") == 1.0
