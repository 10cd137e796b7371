"""Delivery: each sink gets a channel that re-sends alerts until delivered, off the caller's thread.

The engine `offer`s alert states and returns at once. A channel keeps the latest state of each
alert (by its labels), so its queue is bounded by the number of alerts, not by time: a sink
that is down for an hour holds one entry per alert, never a backlog. A background thread per
channel sends what is due:

- every state not yet delivered (a new firing alert, a resolution);
- firing alerts again every `resend_interval`, to sinks that want it (Alertmanager resolves
  an alert whose `endsAt` passed; Prometheus re-sends for the same reason);
- after a failure, nothing until the backoff passes: initial, doubled per failure, capped.

A resolved alert leaves the channel once delivered. Past `max_alerts` entries, the oldest
resolved (then oldest firing) entries are dropped and counted as `dropped`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from monitor.alerting.config import DeliveryConfig
from monitor.alerting.messages import AlertMessage, Fingerprint
from monitor.alerting.metrics import AlertSignals
from monitor.alerting.sinks import AlertmanagerSink, DeliveryError, LogSink, Sink, WebhookSink
from monitor.clock import Clock
from monitor.logs import fields

__all__ = ["AlertDelivery", "DeliveryChannel", "RetryPolicy"]

_LOG = logging.getLogger("monitor.alerting")


@dataclass(frozen=True)
class RetryPolicy:
    """How often standing alerts are re-sent and how failures back off (milliseconds)."""

    resend_interval_ms: int = 60_000
    backoff_initial_ms: int = 1_000
    backoff_max_ms: int = 60_000
    max_alerts: int = 10_000


@dataclass
class _Entry:
    message: AlertMessage
    delivered: bool = False
    sent_at_ms: int | None = None


class DeliveryChannel:
    """One sink's outstanding alerts and its retry schedule; thread-safe."""

    def __init__(self, sink: Sink, policy: RetryPolicy, metrics: AlertSignals | None) -> None:
        self.sink = sink
        self.policy = policy
        self.metrics = metrics
        self._entries: dict[Fingerprint, _Entry] = {}
        self._lock = threading.Lock()
        self._failures = 0
        self._retry_at_ms = 0
        self.wake = threading.Event()

    def offer(self, messages: Sequence[AlertMessage]) -> None:
        """Take the latest states of some alerts; never blocks on the sink."""
        with self._lock:
            for message in messages:
                self._entries.pop(message.fingerprint, None)
                self._entries[message.fingerprint] = _Entry(message)
            self._enforce_bound()
        self.wake.set()

    def outstanding(self) -> int:
        """Alerts the channel still holds (firing, or resolved and not yet delivered)."""
        with self._lock:
            return len(self._entries)

    def _enforce_bound(self) -> None:
        excess = len(self._entries) - self.policy.max_alerts
        if excess <= 0:
            return
        resolved = [key for key, entry in self._entries.items() if not entry.message.firing]
        victims = (resolved + [key for key in self._entries if key not in resolved])[:excess]
        for key in victims:
            del self._entries[key]
        self._count("dropped", len(victims))

    def _due(self, now_ms: int) -> list[AlertMessage]:
        resend = self.policy.resend_interval_ms
        resends = self.sink.resends_firing
        return [
            entry.message
            for entry in self._entries.values()
            if not entry.delivered
            or (resends and entry.message.firing and now_ms - (entry.sent_at_ms or 0) >= resend)
        ]

    def deliver(self, now_ms: int) -> int:
        """Send what is due at `now_ms`; milliseconds until the channel should run again."""
        if now_ms < self._retry_at_ms:
            return self._retry_at_ms - now_ms
        with self._lock:
            batch = self._due(now_ms)
        if batch:
            try:
                self.sink.send(batch, now_ms)
            except DeliveryError as error:
                return self._failed(batch, now_ms, error)
            self._delivered(batch, now_ms)
        return self._next_resend_in(now_ms)

    def _failed(self, batch: Sequence[AlertMessage], now_ms: int, error: Exception) -> int:
        self._count("failed", len(batch))
        backoff = self.policy.backoff_initial_ms << min(self._failures, 30)
        backoff = min(backoff, self.policy.backoff_max_ms)
        self._failures += 1
        self._retry_at_ms = now_ms + backoff
        _LOG.warning(
            "alert delivery failed; retrying",
            extra=fields(sink=self.sink.name, alerts=len(batch), retry_in_ms=backoff, error=error),
        )
        return backoff

    def _delivered(self, batch: Sequence[AlertMessage], now_ms: int) -> None:
        self._failures = 0
        self._count("delivered", len(batch))
        with self._lock:
            for message in batch:
                entry = self._entries.get(message.fingerprint)
                # The engine may have replaced the state while it was in flight: only the
                # state that was sent counts as delivered.
                if entry is None or entry.message is not message:
                    continue
                if message.firing:
                    entry.delivered, entry.sent_at_ms = True, now_ms
                else:
                    del self._entries[message.fingerprint]

    def _next_resend_in(self, now_ms: int) -> int:
        with self._lock:
            sent = [e.sent_at_ms for e in self._entries.values() if e.sent_at_ms is not None]
            if any(not e.delivered for e in self._entries.values()):
                return 0
        if not sent or not self.sink.resends_firing:
            return self.policy.resend_interval_ms
        return max(0, min(sent) + self.policy.resend_interval_ms - now_ms)

    def _count(self, result: str, amount: int) -> None:
        if self.metrics is not None:
            for _ in range(amount):
                self.metrics.count_alert_delivery(self.sink.name, result)


class AlertDelivery:
    """The channels of all sinks, each run by a daemon thread; `offer` fans out to all."""

    def __init__(
        self,
        sinks: Sequence[Sink],
        policy: RetryPolicy,
        clock: Clock,
        metrics: AlertSignals | None = None,
    ) -> None:
        self.channels = [DeliveryChannel(sink, policy, metrics) for sink in sinks]
        self.clock = clock
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @classmethod
    def from_config(
        cls, config: DeliveryConfig, clock: Clock, metrics: AlertSignals | None = None
    ) -> AlertDelivery:
        """The sinks the config names (Alertmanager, webhook, log) with its retry policy."""
        policy = RetryPolicy(
            resend_interval_ms=config.resend_interval_ms,
            backoff_initial_ms=config.backoff_initial_ms,
            backoff_max_ms=config.backoff_max_ms,
            max_alerts=config.max_alerts,
        )
        sinks: list[Sink] = []
        if config.alertmanager_url:
            # Four resend intervals, as Prometheus does: a missed resend or two is harmless.
            ttl = 4 * config.resend_interval_ms
            sinks.append(
                AlertmanagerSink(
                    config.alertmanager_url, firing_ttl_ms=ttl, timeout_s=config.timeout_s
                )
            )
        if config.webhook_url:
            sinks.append(WebhookSink(config.webhook_url, timeout_s=config.timeout_s))
        if config.log:
            sinks.append(LogSink())
        return cls(sinks, policy, clock, metrics)

    def offer(self, messages: Sequence[AlertMessage]) -> None:
        """Queue alert states on every sink's channel; returns at once."""
        if messages:
            for channel in self.channels:
                channel.offer(messages)

    def start(self) -> None:
        """Start one background thread per sink."""
        for channel in self.channels:
            thread = threading.Thread(
                target=self._run, args=(channel,), name=f"alerts-{channel.sink.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the threads (an attempt in flight finishes first, within its own timeout)."""
        self._stopping.set()
        for channel in self.channels:
            channel.wake.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads.clear()

    def _run(self, channel: DeliveryChannel) -> None:
        while not self._stopping.is_set():
            channel.wake.clear()
            try:
                wait_ms = channel.deliver(self.clock.now_ms())
            except Exception:
                # A sink bug must not kill delivery for good: log it and try again later.
                _LOG.exception("alert delivery crashed", extra=fields(sink=channel.sink.name))
                wait_ms = channel.policy.backoff_max_ms
            if wait_ms > 0:
                channel.wake.wait(wait_ms / 1000)
