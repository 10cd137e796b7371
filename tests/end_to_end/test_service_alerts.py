"""The service pages through a real Alertmanager, then resolves when quality recovers.

`Monitor` on the real Tansu broker, with one `below` rule and the Debian
`prometheus-alertmanager` routing to a webhook receiver in the test:

    tumbling 10s, lateness 1s                        T = 2026-01-01T00:00:00Z
    time (s)   0 ......... 10 ......... 20 ... 25
    v1         bad rankings | good rankings          closers at 12 and 25 close the windows
    alert              firing -> (next window good) -> resolved
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from monitor.config.loader import load_config
from monitor.demo.broker import EmbeddedBroker
from monitor.service import Monitor
from tests.support.realparts import (
    AlertmanagerServer,
    WebhookReceiver,
    monitor_thread,
    produce_records,
    write_service_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.alertmanager, pytest.mark.slow]

T0 = 1_767_225_600_000
QUERIES = {f"q{i}": {f"q{i}-d{j}": 3 - j % 4 for j in range(8)} for i in range(6)}


ALERTS = """
alerts:
  log: false
  alertmanager: {{url: "{url}", min_firing: 1s}}
  delivery: {{resend_interval: 2s, backoff_initial: 200ms, backoff_max: 1s}}
  rules:
    - name: ndcg10-floor
      measure: ndcg@10
      severity: critical
      segment: {{model: v1}}
      below: 0.5
      for: 1
      keep_firing_for: 0
"""


def _events(start_s: int, good: bool) -> list[tuple[bytes, bytes]]:
    records = []
    for n, (query, docs) in enumerate(QUERIES.items()):
        ranking = sorted(docs, key=lambda d: -docs[d]) if good else [f"x{j}" for j in range(10)]
        event = {
            "event_id": f"{start_s}-{query}",
            "query_id": query,
            "ranking": ranking,
            "event_time": T0 + (start_s + n % 5) * 1000,
            "segment": {"model": "v1"},
        }
        records.append((query.encode(), orjson.dumps(event)))
    return records


def _closer(seconds: int) -> tuple[bytes, bytes]:
    event: dict[str, object] = {
        "event_id": f"closer-{seconds}",
        "query_id": "q0",
        "ranking": ["q0-d0"],
        "event_time": T0 + seconds * 1000,
        "segment": {"model": "other"},
    }
    return b"q0", orjson.dumps(event)


def _status(status: str) -> Callable[[list[Any]], bool]:
    def seen(bodies: list[Any]) -> bool:
        return any(
            body["status"] == status
            and any(
                a["labels"]["alertname"] == "ndcg10-floor" and a["labels"]["model"] == "v1"
                for a in body["alerts"]
            )
            for body in bodies
        )

    return seen


@pytest.fixture
def monitor_paging_alertmanager(
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
    start_alertmanager: Callable[..., AlertmanagerServer],
    webhook_receiver: WebhookReceiver,
) -> Iterator[str]:
    alertmanager = start_alertmanager(webhook_receiver.url)
    topic = new_topic(1)
    config = write_service_config(
        tmp_path, tansu, topic, QUERIES, ALERTS.format(url=alertmanager.url)
    )
    with monitor_thread(Monitor(load_config(config, environ={}))):
        yield topic


def test_bad_window_pages_through_alertmanager_and_the_recovered_window_resolves_it(
    monitor_paging_alertmanager: str, tansu: EmbeddedBroker, webhook_receiver: WebhookReceiver
) -> None:
    topic = monitor_paging_alertmanager
    produce_records(tansu.bootstrap_servers, topic, [*_events(0, good=False), _closer(12)])
    assert webhook_receiver.wait_for(_status("firing"), timeout_s=30), webhook_receiver.bodies
    assert not _status("resolved")(webhook_receiver.bodies)

    produce_records(tansu.bootstrap_servers, topic, [*_events(10, good=True), _closer(25)])
    assert webhook_receiver.wait_for(_status("resolved"), timeout_s=30), webhook_receiver.bodies
    firing = next(
        a
        for body in webhook_receiver.bodies
        if body["status"] == "firing"
        for a in body["alerts"]
        if a["labels"]["alertname"] == "ndcg10-floor"
    )
    assert firing["labels"]["severity"] == "critical"
    assert firing["labels"]["window"] == "10s"
