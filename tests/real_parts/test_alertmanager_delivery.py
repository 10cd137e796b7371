"""End to end on the real Debian Alertmanager: a bad window pages, a recovered window resolves."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

from monitor.alerting import AlertEngine
from monitor.alerting.delivery import AlertDelivery, RetryPolicy
from monitor.alerting.sinks import AlertmanagerSink
from monitor.clock import SystemClock
from monitor.config.alerts import parse_alerting_config
from monitor.windows.summary import WindowSummary
from tests.support.realparts import AlertmanagerServer, WebhookReceiver

pytestmark = pytest.mark.alertmanager

NDCG = "ndcg@10:linear"
WINDOW_MS = 300_000


def window(start_ms: int, value: float) -> WindowSummary:
    return WindowSummary(
        window="5m",
        start_ms=start_ms,
        end_ms=start_ms + WINDOW_MS,
        segment=(("model", "v42"),),
        evaluation_set_version="v1",
        events=100,
        queries=50,
        evaluation_set_queries=60,
        means={NDCG: value},
        sums={NDCG: 50 * value},
        event_means={NDCG: value},
        query_means={f"q{i}": {NDCG: value} for i in range(50)},
    )


def alerts_with_status(status: str) -> Callable[[list[Any]], bool]:
    def seen(bodies: list[Any]) -> bool:
        return any(
            body["status"] == status and body["alerts"][0]["labels"]["alertname"] == "floor"
            for body in bodies
        )

    return seen


def test_alert_reaches_the_receiver_through_alertmanager_and_resolves_on_recovery(
    start_alertmanager: Callable[..., AlertmanagerServer], webhook_receiver: WebhookReceiver
) -> None:
    alertmanager = start_alertmanager(webhook_receiver.url)
    config = parse_alerting_config(
        {
            "rules": [
                {
                    "name": "floor",
                    "measure": "ndcg@10",
                    "severity": "critical",
                    "below": 0.5,
                    "runbook_url": "https://runbooks.example/floor",
                }
            ],
            "log": False,
        },
        cutoffs=[10],
        gains=["linear"],
        segment_keys=["model"],
        window="5m",
    )
    clock = SystemClock()
    sink = AlertmanagerSink(alertmanager.url, firing_ttl_ms=240_000)
    delivery = AlertDelivery([sink], RetryPolicy(backoff_initial_ms=100), clock)
    engine = AlertEngine(config, start_ms=clock.now_ms(), delivery=delivery)
    delivery.start()
    try:
        start = clock.now_ms() - 2 * WINDOW_MS
        engine.observe([window(start, 0.31)], clock.now_ms())
        assert webhook_receiver.wait_for(alerts_with_status("firing"), timeout_s=20)
        firing = next(b for b in webhook_receiver.bodies if b["status"] == "firing")
        alert = firing["alerts"][0]
        assert alert["labels"] == {
            "alertname": "floor",
            "severity": "critical",
            "measure": NDCG,
            "window": "5m",
            "model": "v42",
            "instance": socket.gethostname(),
        }
        assert alert["annotations"]["value"] == "0.3100"
        assert alert["annotations"]["runbook_url"] == "https://runbooks.example/floor"

        engine.observe([window(start + WINDOW_MS, 0.72)], clock.now_ms())
        assert webhook_receiver.wait_for(alerts_with_status("resolved"), timeout_s=20)
    finally:
        delivery.stop()
    # Resolved by endsAt: Alertmanager no longer lists it as standing.
    assert alertmanager.alerts() == []
