"""The broker dies under a running `rankmon run` and comes back (durable S3 storage on
moto_server): the service stays up, says so in its metrics while the broker is away, recovers
by itself, and loses and double-counts nothing.

    stream      first half .........          second half + closer
    broker      up ........ X (kill -9) ..... start (same port, same S3 bucket)
    service     run ..........................(broker_up 0, /readyz 503)........ SIGTERM

One partition, so every record's outcome is the one the traffic was built for: the events
of the published windows must be exactly the accepted records (less the closer, whose window
stays open), each window once, and the dead letters exactly the rejected records.

The broker is killed once the service has gone quiet after the first half (its commit no
longer moves), not in the middle of a publish: Tansu's S3 store records an idempotent
producer's sequence number before it writes the batch, so a kill between the two loses the
batch, and kafka-python takes the resend's DuplicateSequenceNumber for an acknowledgement
(seen here: a window lost in 2 runs of 13, tests/support/realparts.py). A publish cut off by an
outage is covered with fakes in tests/end_to_end/test_recovery_shares.py.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import orjson
import pytest

from monitor.demo.broker import EmbeddedBroker, free_port
from tests.support.realparts import MotoS3
from tests.support.recovery_support import (
    Published,
    ServiceProcess,
    committed,
    create_topics,
    produce,
    stream,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def gauge(service: ServiceProcess, name: str) -> float | None:
    """A sample of `/metrics` without labels (None if the endpoint does not answer)."""
    try:
        with urllib.request.urlopen(f"{service.url}/metrics", timeout=2) as response:
            text = response.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


def wait_for_quiet_commit(
    bootstrap: str, group: str, topic: str, quiet_s: float = 1.5, timeout_s: float = 30.0
) -> None:
    """Wait until the group's commit on partition 0 exists and has not moved for `quiet_s`
    (several ticks): every window the records so far close is published and committed."""
    deadline = time.monotonic() + timeout_s
    last: int | None = None
    since = time.monotonic()
    while True:
        offset = committed(bootstrap, group, topic, 1)[0]
        now = time.monotonic()
        if offset != last:
            last, since = offset, now
        elif offset is not None and now - since >= quiet_s:
            return
        assert now < deadline, f"the commit did not settle (last {last})"
        time.sleep(0.3)


def ready_status(service: ServiceProcess) -> int:
    try:
        with urllib.request.urlopen(f"{service.url}/readyz", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.usefixtures("kafka_outage")
def test_broker_killed_and_restarted_loses_nothing_and_the_outage_shows_while_it_lasts(
    moto_s3: MotoS3, tmp_path_factory: pytest.TempPathFactory
) -> None:
    records = stream(seed=31, count=200)
    half = len(records) // 2
    broker = EmbeddedBroker(moto_s3.storage, env=moto_s3.broker_env).start()
    directory = tmp_path_factory.mktemp("restart")
    service: ServiceProcess | None = None
    try:
        bootstrap = broker.bootstrap_servers
        create_topics(broker, "events", 1)
        config = write_config(directory, bootstrap, "events", "restart")
        service = ServiceProcess(config, "service")
        service.wait_ready()
        produce(bootstrap, "events", records[:half])
        wait_for_quiet_commit(bootstrap, "restart", "events")

        broker.kill()
        wait_until(lambda: gauge(service, "rankmon_broker_up") == 0.0, 60, "broker_up 0")
        assert ready_status(service) == 503
        time.sleep(2)  # ten ticks and a reconnect backoff without a broker
        assert service.alive
        assert gauge(service, "rankmon_broker_up") == 0.0

        broker.start()
        wait_until(lambda: ready_status(service) == 200, 60, "ready again")
        assert gauge(service, "rankmon_broker_up") == 1.0
        produce(bootstrap, "events", records[half:])
        closer = len(records) - 1
        wait_until(
            lambda: committed(bootstrap, "restart", "events", 1) == {0: closer},
            60,
            "the commit up to the closer",
        )
        assert service.terminate() == 0, service.log()
        published = Published.read(bootstrap, "events")
    finally:
        if service is not None:
            service.kill()
        broker.stop()

    keys = Counter(key for key, _ in published.windows)
    assert max(keys.values()) == 1, [key for key, n in keys.items() if n > 1]
    events = sum(orjson.loads(value)["events"] for _, value in published.windows)
    assert events == sum(r.intended == "accepted" for r in records) - 1
    assert published.dead_letters == {
        (0, offset, r.intended) for offset, r in enumerate(records) if r.intended != "accepted"
    }


def test_service_started_before_the_broker_waits_for_it_then_consumes(tmp_path: Path) -> None:
    broker = EmbeddedBroker(port=free_port())
    config = write_config(tmp_path, f"127.0.0.1:{broker.port}", "events", "early")
    service = ServiceProcess(config, "service")
    try:
        wait_until(lambda: gauge(service, "rankmon_broker_up") == 0.0, 30, "the metrics endpoint")
        time.sleep(2)  # a few reconnect attempts with backoff
        assert service.alive
        assert ready_status(service) == 503
        broker.start()
        create_topics(broker, "events", 1)
        wait_until(lambda: ready_status(service) == 200, 60, "ready once the broker is there")
        records = stream(seed=32, count=40)
        produce(broker.bootstrap_servers, "events", records)
        wait_until(
            lambda: (
                committed(broker.bootstrap_servers, "early", "events", 1) == {0: len(records) - 1}
            ),
            60,
            "the commit up to the closer",
        )
        assert service.terminate() == 0, service.log()
    finally:
        service.kill()
        broker.stop()
