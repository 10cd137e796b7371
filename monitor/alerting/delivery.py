"""Delivery: each sink gets a channel that re-sends alerts until delivered, off the caller's thread.

The engine `offer`s alert states and returns at once. A channel keeps, per alert (by its
labels), the states not delivered yet in order and the firing state delivered last, so its
queue is bounded by the number of alerts and their episodes, not by time: a sink that is down
for an hour holds a few entries per alert, never a backlog. A background thread per channel
sends what is due:

- each alert's oldest undelivered state, one per alert and send: a firing is always
  delivered before the resolution that follows it, even when both were offered in one tick
  (a backlog of windows that fired and resolved an alert); a newer state of the same kind
  replaces an undelivered one (the latest firing details win);
- a resolution only once its firing has stood at the sink for `min_firing_ms` (Alertmanager
  notifies an alert only if it still fires when its group is flushed, `group_wait` after it
  arrived);
- firing alerts again every `resend_interval`, to sinks that want it (Alertmanager resolves
  an alert whose `endsAt` passed; Prometheus re-sends for the same reason);
- after a failure, nothing until the backoff passes: initial, doubled per failure, capped.

A resolved alert leaves the channel once delivered. Past `max_alerts` queued states, the
oldest resolutions (then the oldest firings) are dropped and counted as `dropped`. Timers run
on the monotonic clock; the wall clock only stamps what is sent.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from monitor.alerting.messages import AlertMessage, Fingerprint
from monitor.alerting.metrics import AlertSignals
from monitor.alerting.settings import MAX_ALERTS, AlertingConfig
from monitor.alerting.sinks import AlertmanagerSink, DeliveryError, LogSink, Sink, WebhookSink
from monitor.clock import Clock
from monitor.logs import fields

__all__ = ["AlertDelivery", "DeliveryChannel", "RetryPolicy"]

_LOG = logging.getLogger("monitor.alerting")


@dataclass(frozen=True)
class RetryPolicy:
    """How often standing alerts are re-sent and how failures back off (milliseconds).

    `min_firing_ms`: how long a firing must have stood at the sink before its resolution
    follows; only for sinks that group alerts (Alertmanager), see the module docstring.
    """

    resend_interval_ms: int = 60_000
    backoff_initial_ms: int = 1_000
    backoff_max_ms: int = 60_000
    max_alerts: int = 10_000
    min_firing_ms: int = 0


@dataclass
class _Entry:
    queue: deque[AlertMessage] = field(default_factory=deque)  # undelivered, oldest first
    standing: AlertMessage | None = None  # the firing state delivered last
    sent_at_ms: int | None = None  # when `standing` was last delivered (monotonic)
    firing_since_ms: int | None = None  # when `standing` was first delivered (monotonic)


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
        """Take the latest states of some alerts, in the order they happened; never blocks."""
        with self._lock:
            for message in messages:
                entry = self._entries.setdefault(message.fingerprint, _Entry())
                if entry.queue and entry.queue[-1].firing == message.firing:
                    entry.queue[-1] = message  # the same state, newer details
                elif not entry.queue and message.firing and entry.standing is not None:
                    entry.standing, entry.sent_at_ms = message, None  # re-send it now
                    entry.queue.append(message)
                else:
                    entry.queue.append(message)
            self._enforce_bound()
        self.wake.set()

    def hand_over(self) -> None:
        """Another instance decides these alerts now, and sends the firing ones itself: stop
        re-sending them and drop the firings not delivered yet; resolutions still go."""
        with self._lock:
            for key, entry in list(self._entries.items()):
                entry.standing = entry.sent_at_ms = entry.firing_since_ms = None
                entry.queue = deque(m for m in entry.queue if not m.firing)
                if not entry.queue:
                    del self._entries[key]

    def outstanding(self) -> int:
        """Alerts the channel still holds (firing, or with a state not yet delivered)."""
        with self._lock:
            return len(self._entries)

    def _enforce_bound(self) -> None:
        queued = [(key, m) for key, e in self._entries.items() for m in e.queue]
        excess = len(queued) - self.policy.max_alerts
        if excess <= 0:
            return
        resolved = [item for item in queued if not item[1].firing]
        firing = [item for item in queued if item[1].firing]
        victims = (resolved + firing)[:excess]
        for key, message in victims:
            entry = self._entries[key]
            entry.queue.remove(message)
            if not entry.queue and entry.standing is None:
                del self._entries[key]
        self._count("dropped", len(victims))

    def _due(self, clock_ms: int) -> list[AlertMessage]:
        due: list[AlertMessage] = []
        for entry in self._entries.values():
            if entry.queue:
                head = entry.queue[0]
                if head.firing or self._hold_left(entry, clock_ms) <= 0:
                    due.append(head)
            elif self._resend_left(entry, clock_ms) <= 0 and entry.standing is not None:
                due.append(entry.standing)
        return due

    def _hold_left(self, entry: _Entry, clock_ms: int) -> int:
        """How long a resolution at the head of `entry` must still wait for its firing."""
        if entry.firing_since_ms is None or not self.policy.min_firing_ms:
            return 0
        return entry.firing_since_ms + self.policy.min_firing_ms - clock_ms

    def _resend_left(self, entry: _Entry, clock_ms: int) -> int:
        if entry.standing is None or not self.sink.resends_firing:
            return self.policy.resend_interval_ms
        return (entry.sent_at_ms or 0) + self.policy.resend_interval_ms - clock_ms

    def deliver(self, now_ms: int, clock_ms: int | None = None) -> int:
        """Send what is due; milliseconds until the channel should run again.

        `now_ms` is the wall clock (it stamps Alertmanager's `endsAt`), `clock_ms` the
        monotonic one the timers run on (default: `now_ms`, for tests on one fake clock).
        """
        clock_ms = now_ms if clock_ms is None else clock_ms
        if clock_ms < self._retry_at_ms:
            return self._retry_at_ms - clock_ms
        with self._lock:
            due = self._due(clock_ms)
        if due:
            try:
                self.sink.send(due, now_ms)
            except DeliveryError as error:
                return self._failed(due, clock_ms, error)
            self._delivered(due, clock_ms)
        return self._next_run_in(clock_ms)

    def _failed(self, due: Sequence[AlertMessage], clock_ms: int, error: Exception) -> int:
        self._count("failed", len(due))
        backoff = self.policy.backoff_initial_ms << min(self._failures, 30)
        backoff = min(backoff, self.policy.backoff_max_ms)
        self._failures += 1
        self._retry_at_ms = clock_ms + backoff
        _LOG.warning(
            "alert delivery failed; retrying",
            extra=fields(sink=self.sink.name, alerts=len(due), retry_in_ms=backoff, error=error),
        )
        return backoff

    def _delivered(self, due: Sequence[AlertMessage], clock_ms: int) -> None:
        self._failures = 0
        self._count("delivered", len(due))
        with self._lock:
            for message in due:
                entry = self._entries.get(message.fingerprint)
                if entry is None:
                    continue
                if entry.queue and entry.queue[0] is message:
                    entry.queue.popleft()
                elif message is not entry.standing:
                    # The engine replaced the state while it was in flight: the newer one
                    # is still to be delivered.
                    continue
                if message.firing:
                    if entry.standing is None:
                        entry.firing_since_ms = clock_ms
                    entry.standing, entry.sent_at_ms = message, clock_ms
                else:
                    entry.standing = entry.sent_at_ms = entry.firing_since_ms = None
                if not entry.queue and entry.standing is None:
                    del self._entries[message.fingerprint]

    def _next_run_in(self, clock_ms: int) -> int:
        waits = [self.policy.resend_interval_ms]
        with self._lock:
            for entry in self._entries.values():
                if entry.queue:
                    head = entry.queue[0]
                    waits.append(0 if head.firing else max(0, self._hold_left(entry, clock_ms)))
                elif self.sink.resends_firing:
                    waits.append(max(0, self._resend_left(entry, clock_ms)))
        return min(waits)

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
        cls, config: AlertingConfig, clock: Clock, metrics: AlertSignals | None = None
    ) -> AlertDelivery:
        """The sinks the config names (Alertmanager, webhook, log) with its retry policy."""
        retry = config.delivery
        policy = RetryPolicy(
            resend_interval_ms=retry.resend_interval.ms,
            backoff_initial_ms=retry.backoff_initial.ms,
            backoff_max_ms=retry.backoff_max.ms,
            max_alerts=MAX_ALERTS,
        )
        timeout_s = config.alertmanager.timeout.seconds
        sinks: list[tuple[Sink, RetryPolicy]] = []
        alertmanager = config.alertmanager
        if alertmanager.url is not None:
            # Four resend intervals, as Prometheus does: a missed resend or two is harmless.
            ttl = 4 * retry.resend_interval.ms
            sink = AlertmanagerSink(
                alertmanager.url.reveal(),
                firing_ttl_ms=ttl,
                timeout_s=timeout_s,
                token=None if alertmanager.token is None else alertmanager.token.reveal(),
            )
            sinks.append((sink, replace(policy, min_firing_ms=alertmanager.min_firing.ms)))
        webhook = config.webhook
        if webhook.url is not None:
            posted = WebhookSink(
                webhook.url.reveal(),
                timeout_s=timeout_s,
                token=None if webhook.token is None else webhook.token.reveal(),
            )
            sinks.append((posted, policy))
        if config.log:
            sinks.append((LogSink(), policy))
        delivery = cls([], policy, clock, metrics)
        delivery.channels = [DeliveryChannel(sink, own, metrics) for sink, own in sinks]
        return delivery

    def offer(self, messages: Sequence[AlertMessage]) -> None:
        """Queue alert states on every sink's channel; returns at once."""
        if messages:
            for channel in self.channels:
                channel.offer(messages)

    def hand_over(self) -> None:
        """Another instance of the group decides the alerts now (`DeliveryChannel.hand_over`)."""
        for channel in self.channels:
            channel.hand_over()

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
                wait_ms = channel.deliver(self.clock.now_ms(), int(self.clock.monotonic() * 1000))
            except Exception:
                # A sink bug must not kill delivery for good: log it and try again later.
                _LOG.exception("alert delivery crashed", extra=fields(sink=channel.sink.name))
                wait_ms = channel.policy.backoff_max_ms
            if wait_ms > 0:
                channel.wake.wait(wait_ms / 1000)
