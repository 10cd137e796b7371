"""The alert as it leaves rankmon: labels, annotations, and its firing or resolved times.

Labels identify an alert (Alertmanager groups and deduplicates on them): `alertname`,
`severity`, `measure`, `window`, the segment's labels and `instance` (which rankmon instance
judged it). Annotations describe it: the measure, the window's bounds, value, baseline,
p-value, the worst queries, a runbook URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["AlertMessage", "rfc3339"]

Fingerprint = tuple[tuple[str, str], ...]


def rfc3339(ms: int) -> str:
    """Epoch milliseconds as an RFC 3339 UTC time, as Alertmanager expects."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class AlertMessage:
    """One alert's current state; `ends_at_ms` is set when it resolved."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    starts_at_ms: int
    ends_at_ms: int | None = None
    generator_url: str | None = None  # the explanation of the alert's window

    @property
    def fingerprint(self) -> Fingerprint:
        """The identity of the alert: its sorted labels."""
        return tuple(sorted(self.labels.items()))

    @property
    def firing(self) -> bool:
        """True while the alert stands."""
        return self.ends_at_ms is None

    def to_alertmanager(self, now_ms: int, firing_ttl_ms: int) -> dict[str, Any]:
        """The `POST /api/v2/alerts` item.

        A firing alert carries `endsAt = now + firing_ttl`: rankmon re-sends it well before
        then, so if rankmon dies Alertmanager resolves it by itself instead of forever.
        """
        ends_at = self.ends_at_ms if self.ends_at_ms is not None else now_ms + firing_ttl_ms
        item = {
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "startsAt": rfc3339(self.starts_at_ms),
            "endsAt": rfc3339(ends_at),
        }
        if self.generator_url:
            item["generatorURL"] = self.generator_url
        return item

    def to_webhook(self) -> dict[str, Any]:
        """The generic JSON webhook item (Alertmanager's webhook shape, minus grouping)."""
        return {
            "status": "firing" if self.firing else "resolved",
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "startsAt": rfc3339(self.starts_at_ms),
            "endsAt": None if self.ends_at_ms is None else rfc3339(self.ends_at_ms),
            "generatorURL": self.generator_url,
        }
