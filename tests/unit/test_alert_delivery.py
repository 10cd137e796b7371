"""Delivery retries with backoff, re-sends standing alerts, stays bounded, and never blocks."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry

from monitor.alerting.delivery import AlertDelivery, DeliveryChannel, RetryPolicy
from monitor.alerting.messages import AlertMessage
from monitor.alerting.sinks import DeliveryError, LogSink, WebhookSink
from monitor.clock import SystemClock
from monitor.export.exporter import AlertSeries
from monitor.testing.clock import FakeClock
from tests.support.realparts import WebhookReceiver

T0 = 1_700_000_000_000
POLICY = RetryPolicy(
    resend_interval_ms=60_000, backoff_initial_ms=1_000, backoff_max_ms=4_000, max_alerts=3
)


def message(name: str, *, resolved_at: int | None = None) -> AlertMessage:
    return AlertMessage(
        labels={"alertname": name, "severity": "warning"},
        annotations={"summary": "test"},
        starts_at_ms=T0,
        ends_at_ms=resolved_at,
    )


class FlakySink:
    """Fails its first `failures` sends, then records every batch."""

    name = "flaky"
    resends_firing = True

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.attempts: list[int] = []
        self.delivered: list[list[str]] = []
        self.sent = threading.Event()

    def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None:
        self.attempts.append(now_ms)
        if len(self.attempts) <= self.failures:
            raise DeliveryError("down")
        self.delivered.append([a.labels["alertname"] for a in alerts])
        self.sent.set()


def test_failed_sends_back_off_doubling_up_to_the_cap_then_deliver() -> None:
    sink = FlakySink(failures=4)
    registry = CollectorRegistry()
    channel = DeliveryChannel(sink, POLICY, AlertSeries(registry=registry))
    channel.offer([message("a")])
    now, waits = T0, []
    for _ in range(5):
        wait = channel.deliver(now)
        waits.append(wait)
        now += wait
    assert waits[:4] == [1_000, 2_000, 4_000, 4_000]
    assert sink.delivered == [["a"]]
    failed = {"sink": "flaky", "result": "failed"}
    assert registry.get_sample_value("rankmon_alert_deliveries_total", failed) == 4
    delivered = {"sink": "flaky", "result": "delivered"}
    assert registry.get_sample_value("rankmon_alert_deliveries_total", delivered) == 1


def test_nothing_is_sent_before_the_backoff_has_passed() -> None:
    sink = FlakySink(failures=1)
    channel = DeliveryChannel(sink, POLICY, None)
    channel.offer([message("a")])
    channel.deliver(T0)
    assert channel.deliver(T0 + 400) == 600
    assert sink.attempts == [T0]


def test_firing_alerts_are_resent_every_interval_and_resolved_ones_leave_once_delivered() -> None:
    sink = FlakySink()
    channel = DeliveryChannel(sink, POLICY, None)
    channel.offer([message("a")])
    assert channel.deliver(T0) == 60_000
    channel.deliver(T0 + 30_000)  # nothing due yet
    channel.deliver(T0 + 60_000)
    assert sink.delivered == [["a"], ["a"]]
    channel.offer([message("a", resolved_at=T0 + 61_000)])
    channel.deliver(T0 + 61_000)
    assert channel.outstanding() == 0
    channel.deliver(T0 + 200_000)
    assert sink.delivered == [["a"], ["a"], ["a"]]


def test_an_instance_that_hands_its_alerts_over_sends_only_the_resolutions_it_still_holds() -> None:
    sink = FlakySink()
    channel = DeliveryChannel(sink, POLICY, None)
    channel.offer([message("a"), message("b")])
    channel.deliver(T0)
    # not delivered yet when another instance of the group takes the decisions over
    channel.offer([message("b", resolved_at=T0 + 1), message("c")])
    channel.hand_over()
    channel.deliver(T0 + 2)
    channel.deliver(T0 + 300_000)  # "a" stands at the new decider, which re-sends it
    assert sink.delivered == [["a", "b"], ["b"]]
    assert channel.outstanding() == 0


def test_sinks_that_do_not_want_resends_get_each_state_once() -> None:
    sink = FlakySink()
    sink.resends_firing = False
    channel = DeliveryChannel(sink, POLICY, None)
    channel.offer([message("a")])
    channel.deliver(T0)
    channel.deliver(T0 + 10 * POLICY.resend_interval_ms)
    assert sink.delivered == [["a"]]


def test_an_undelivered_firing_is_delivered_before_the_resolution_that_followed_it() -> None:
    sink = FlakySink(failures=1)
    channel = DeliveryChannel(sink, POLICY, None)
    channel.offer([message("a")])
    channel.deliver(T0)  # fails: the firing stays queued
    channel.offer([message("a", resolved_at=T0 + 500)])
    channel.deliver(T0 + 1_000)
    channel.deliver(T0 + 1_000)
    assert sink.delivered == [["a"], ["a"]]
    assert channel.outstanding() == 0


def test_a_firing_and_its_resolution_offered_in_one_tick_reach_the_sink_in_order() -> None:
    class Recording(FlakySink):
        def __init__(self) -> None:
            super().__init__()
            self.states: list[list[bool]] = []

        def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None:
            super().send(alerts, now_ms)
            self.states.append([alert.firing for alert in alerts])

    sink = Recording()
    channel = DeliveryChannel(sink, POLICY, None)
    # A backlog: the alert fired on one window and resolved on a later one of the same tick.
    channel.offer([message("a"), message("b"), message("a", resolved_at=T0 + 600_000)])
    assert channel.deliver(T0) == 0  # the resolution is due next
    channel.deliver(T0)
    assert sink.states == [[True, True], [False]]
    assert channel.outstanding() == 1  # b still fires


def test_a_resolution_waits_until_its_firing_has_stood_for_the_minimum() -> None:
    sink = FlakySink()
    channel = DeliveryChannel(sink, replace(POLICY, min_firing_ms=30_000), None)
    channel.offer([message("a"), message("a", resolved_at=T0 + 5)])
    assert channel.deliver(T0) == 30_000
    assert channel.deliver(T0 + 10_000) == 20_000  # nothing sent meanwhile
    channel.deliver(T0 + 30_000)
    assert sink.delivered == [["a"], ["a"]]
    assert sink.attempts == [T0, T0 + 30_000]
    assert channel.outstanding() == 0


def test_a_newer_state_of_the_same_kind_replaces_the_queued_one() -> None:
    sink = FlakySink(failures=1)
    channel = DeliveryChannel(sink, POLICY, None)
    channel.offer([message("a")])
    channel.deliver(T0)
    newer = AlertMessage({"alertname": "a", "severity": "warning"}, {"summary": "newer"}, T0)
    channel.offer([newer])
    channel.deliver(T0 + 1_000)
    assert sink.delivered == [["a"]]
    assert channel.outstanding() == 1


def test_the_queue_is_bounded_dropping_resolved_alerts_first() -> None:
    registry = CollectorRegistry()
    channel = DeliveryChannel(FlakySink(failures=99), POLICY, AlertSeries(registry=registry))
    channel.offer([message("old", resolved_at=T0), message("a"), message("b")])
    channel.offer([message("c")])
    assert channel.outstanding() == 3
    dropped = {"sink": "flaky", "result": "dropped"}
    assert registry.get_sample_value("rankmon_alert_deliveries_total", dropped) == 1
    sink = FlakySink()
    channel.sink = sink
    channel.deliver(T0 + 10**9)
    assert sorted(sink.delivered[0]) == ["a", "b", "c"]


class BlockedSink:
    """A sink whose send hangs until released: a peer that accepts and never answers."""

    name = "blocked"
    resends_firing = True

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None:
        self.entered.set()
        self.release.wait(30)


def test_a_hung_sink_never_blocks_the_caller() -> None:
    sink = BlockedSink()
    delivery = AlertDelivery([sink], POLICY, SystemClock())
    delivery.start()
    try:
        delivery.offer([message("a")])
        assert sink.entered.wait(10)
        # The background thread is stuck inside send; offering more returns regardless.
        delivery.offer([message("b"), message("c")])
        assert delivery.channels[0].outstanding() == 3
    finally:
        sink.release.set()
        delivery.stop()


def test_webhook_sink_posts_firing_and_resolved_alerts_as_json() -> None:
    receiver = WebhookReceiver()
    try:
        sink = WebhookSink(receiver.url)
        sink.send([message("a"), message("b", resolved_at=T0 + 1_000)], T0)
        (body,) = receiver.bodies
    finally:
        receiver.stop()
    assert body["receiver"] == "rankmon"
    assert [(a["labels"]["alertname"], a["status"]) for a in body["alerts"]] == [
        ("a", "firing"),
        ("b", "resolved"),
    ]
    assert body["alerts"][1]["endsAt"] == "2023-11-14T22:13:21Z"


def test_an_unreachable_webhook_is_a_delivery_error_not_a_crash() -> None:
    receiver = WebhookReceiver()
    url = receiver.url
    receiver.stop()
    channel = DeliveryChannel(WebhookSink(url, timeout_s=2), POLICY, None)
    channel.offer([message("a")])
    assert channel.deliver(T0) == POLICY.backoff_initial_ms
    assert channel.outstanding() == 1


def test_a_failing_webhook_never_logs_its_token(caplog: pytest.LogCaptureFixture) -> None:
    receiver = WebhookReceiver()
    port = receiver.url.split(":")[2].split("/")[0]
    receiver.stop()
    url = f"http://user:hunter2@127.0.0.1:{port}/services/T000/B000/s3cr3t-token"
    channel = DeliveryChannel(WebhookSink(url, timeout_s=2), POLICY, None)
    channel.offer([message("a")])
    with caplog.at_level(logging.WARNING, logger="monitor.alerting"):
        channel.deliver(T0)
    logged = " ".join(f"{r.getMessage()} {getattr(r, 'fields', {})}" for r in caplog.records)
    assert f"http://***@127.0.0.1:{port}/***" in logged
    assert "s3cr3t" not in logged and "hunter2" not in logged


def test_delivery_thread_delivers_in_the_background() -> None:
    sink = FlakySink()
    delivery = AlertDelivery([sink], POLICY, FakeClock(T0))
    delivery.start()
    try:
        delivery.offer([message("a")])
        assert sink.sent.wait(10)
        assert sink.delivered == [["a"]]
    finally:
        delivery.stop()


def test_log_sink_writes_one_line_even_when_labels_and_annotations_share_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    alert = AlertMessage(
        labels={"alertname": "ndcg10-floor", "measure": "ndcg@10", "window": "5m"},
        annotations={"measure": "ndcg@10:linear", "value": "0.41"},
        starts_at_ms=0,
    )
    with caplog.at_level(logging.WARNING, logger="monitor"):
        LogSink().send([alert], now_ms=0)
    [record] = caplog.records
    assert record.getMessage() == "alert ndcg10-floor firing"
    assert record.fields["measure"] == "ndcg@10"  # type: ignore[attr-defined]
    assert record.fields["value"] == "0.41"  # type: ignore[attr-defined]


def test_both_payloads_link_to_the_explanation_when_there_is_one() -> None:
    linked = AlertMessage(
        {"alertname": "a"}, {}, 1_000, generator_url="https://r.example/explain?segment=all"
    )
    assert linked.to_alertmanager(2_000, 60_000)["generatorURL"] == linked.generator_url
    assert linked.to_webhook()["generatorURL"] == linked.generator_url
    plain = AlertMessage({"alertname": "a"}, {}, 1_000)
    assert "generatorURL" not in plain.to_alertmanager(2_000, 60_000)  # Alertmanager: optional
    assert plain.to_webhook()["generatorURL"] is None
