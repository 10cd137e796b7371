"""Where alerts go: Alertmanager's API v2, a generic JSON webhook, and the log.

A sink's `send` either delivers the whole list or raises `DeliveryError`; retrying is the
channel's job (`monitor.alerting.delivery`), so sinks stay small and synchronous.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Protocol

import orjson

from monitor.alerting.messages import AlertMessage
from monitor.logs import fields
from monitor.values import mask_url

__all__ = ["AlertmanagerSink", "DeliveryError", "LogSink", "Sink", "WebhookSink"]

_LOG = logging.getLogger("monitor.alerting")


class DeliveryError(Exception):
    """A sink could not take a list of alerts; the channel retries it."""


class Sink(Protocol):
    """Delivers a list of alerts or raises `DeliveryError`."""

    name: str
    # Whether firing alerts are re-sent while they stand: Alertmanager needs it (it resolves
    # an alert whose endsAt passed); a log or a chat webhook would only repeat itself.
    resends_firing: bool

    def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None: ...


def _post_json(url: str, body: Any, timeout_s: float, token: str | None = None) -> None:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=orjson.dumps(body), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        # HTTPError (4xx/5xx) is a URLError: Alertmanager refusing a list is a failure too.
        # The message is logged: user info, path (a webhook's token) and query masked.
        raise DeliveryError(f"POST {mask_url(url, keep_path=False)}: {_reason(error)}") from error


def _reason(error: Exception) -> str:
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)
    return type(error).__name__


class AlertmanagerSink:
    """`POST /api/v2/alerts` on one Alertmanager (or a load balancer in front of a cluster)."""

    name = "alertmanager"
    resends_firing = True

    def __init__(
        self,
        url: str,
        *,
        firing_ttl_ms: int,
        timeout_s: float = 5.0,
        token: str | None = None,
    ) -> None:
        self.url = url.rstrip("/") + "/api/v2/alerts"
        self.firing_ttl_ms = firing_ttl_ms
        self.timeout_s = timeout_s
        self._token = token

    def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None:
        body = [alert.to_alertmanager(now_ms, self.firing_ttl_ms) for alert in alerts]
        _post_json(self.url, body, self.timeout_s, self._token)


class WebhookSink:
    """`POST` of `{"receiver": "rankmon", "alerts": [...]}` to any URL."""

    name = "webhook"
    resends_firing = False

    def __init__(self, url: str, *, timeout_s: float = 5.0, token: str | None = None) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._token = token

    def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None:
        body = {"receiver": "rankmon", "alerts": [alert.to_webhook() for alert in alerts]}
        _post_json(self.url, body, self.timeout_s, self._token)


class LogSink:
    """One log line per alert state: warning while firing, info when resolved."""

    name = "log"
    resends_firing = False

    def send(self, alerts: Sequence[AlertMessage], now_ms: int) -> None:
        for alert in alerts:
            status = "firing" if alert.firing else "resolved"
            _LOG.log(
                logging.WARNING if alert.firing else logging.INFO,
                "alert %s %s",
                alert.labels.get("alertname", "?"),
                status,
                # Labels and annotations share names (measure, window): merge, labels win.
                extra=fields(**{**alert.annotations, **alert.labels, "status": status}),
            )
