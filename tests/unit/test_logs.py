from __future__ import annotations

import logging

import orjson
import pytest

from monitor.logs import configure_logging, fields
from monitor.testing.clock import FakeClock


def test_json_log_line_carries_message_and_fields_as_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("info", "json")
    logging.getLogger("monitor.test").info("window finalized", extra=fields(ndcg=0.5, queries=3))
    entry = orjson.loads(capsys.readouterr().err.strip())
    assert entry["message"] == "window finalized"
    assert entry["ndcg"] == 0.5
    assert entry["queries"] == 3
    assert entry["level"] == "info"


def test_text_log_line_appends_fields_as_key_value(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "text")
    logging.getLogger("monitor.test").warning("broker down", extra=fields(retry_in_s=2))
    assert capsys.readouterr().err.strip().endswith("broker down retry_in_s=2")


def test_fake_clock_moves_only_forward() -> None:
    clock = FakeClock(1_000)
    clock.advance(500)
    assert clock.now_ms() == 1_500
    with pytest.raises(ValueError):
        clock.set(1_000)
