"""The alerting stage's settings: rules, delivery, and what rendering needs of the rest.

Read from the `alerts:` section by `monitor.config.alerts`; nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from monitor.alerting.rules import AlertRule
from monitor.values import Duration, Secret, SecretUrl
from monitor.windows.summary import Segment

__all__ = ["DEFAULT_MIN_QUERIES", "AlertingConfig", "DeliveryConfig", "Endpoint"]

DEFAULT_MIN_QUERIES = 10


@dataclass(frozen=True)
class Endpoint:
    """Where a sink posts: its URL (masked when printed) and an optional bearer token."""

    url: SecretUrl
    token: Secret | None = None


@dataclass(frozen=True)
class DeliveryConfig:
    """Where alerts go and how hard rankmon tries."""

    alertmanager: Endpoint | None
    webhook: Endpoint | None
    log: bool
    resend_interval: Duration
    backoff_initial: Duration
    backoff_max: Duration
    max_alerts: int
    timeout: Duration
    min_firing: Duration  # how long a firing stands at Alertmanager before its resolution

    @property
    def alertmanager_url(self) -> str | None:
        """The Alertmanager URL as requests use it (never print it: `alertmanager.url`)."""
        return None if self.alertmanager is None else self.alertmanager.url.reveal()

    @property
    def webhook_url(self) -> str | None:
        """The webhook URL as requests use it (never print it: `webhook.url`)."""
        return None if self.webhook is None else self.webhook.url.reveal()

    @property
    def resend_interval_ms(self) -> int:
        return self.resend_interval.ms

    @property
    def backoff_initial_ms(self) -> int:
        return self.backoff_initial.ms

    @property
    def backoff_max_ms(self) -> int:
        return self.backoff_max.ms

    @property
    def min_firing_ms(self) -> int:
        return self.min_firing.ms

    @property
    def timeout_s(self) -> float:
        return self.timeout.seconds


@dataclass(frozen=True)
class AlertingConfig:
    """The whole `alerts:` section plus what rendering needs from the rest of the config."""

    rules: tuple[AlertRule, ...]
    delivery: DeliveryConfig
    window: str
    window_ms: int
    prometheus_job: str
    instance: str  # the `instance` label of this instance's alerts
    instance_set: bool = False  # `instance` was configured (not the host name)
    runbook_url: str | None = None
    # A window with fewer queries (and fewer than the whole evaluation set) is not judged by
    # the rules on a mean over its queries (`Condition.holds_small_windows`): one stray record
    # must not page anyone.
    min_queries: int = DEFAULT_MIN_QUERIES
    # The drop rules' false-page budget: each (drop rule, segment) tests at
    # budget / (rule-segments x windows a day) instead of its `significance`. None: off.
    false_pages_per_day: float | None = None
    hop_ms: int = 0  # between window starts (0: the window size)
    # How users reach this instance's page (`export.external_url`): each alert's
    # generatorURL opens the explanation of its window there. None: no link.
    external_url: str | None = None
    # comparison name -> its baseline segment (a comparison alert links to both segments)
    comparison_baselines: Mapping[str, Segment] = field(default_factory=dict)

    @property
    def windows_per_day(self) -> float:
        """How many windows (looks) a segment has in a day."""
        return 86_400_000 / (self.hop_ms or self.window_ms)

    def drop_level(self, rule_segments: int) -> float | None:
        """Each drop rule-segment's level under the budget (None: no budget, each rule's
        own `significance`)."""
        if self.false_pages_per_day is None:
            return None
        looks = max(1, rule_segments) * self.windows_per_day
        return min(0.5, self.false_pages_per_day / looks)

    def too_few_queries(self, queries: int, evaluation_set_queries: int) -> bool:
        """Whether a window of `queries` is too small to judge quality on: under
        `min_queries`, unless it saw every query of a smaller evaluation set."""
        needed = min(self.min_queries, evaluation_set_queries or self.min_queries)
        return queries < needed
