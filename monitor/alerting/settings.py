"""The alerting stage's settings: rules, delivery, and what rendering needs of the rest.

Every key of the `alerts:` section but `rules` is declared here (`monitor.declare`); the
URLs of Alertmanager and the webhook may carry credentials (user info, a token in the path
or query): written inline, or read from an environment variable (`url_env`) or a file
(`url_file`), they are `SecretUrl`s that print masked. A bearer token (`token_env`,
`token_file`, never inline) is sent as `Authorization: Bearer`.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.alerting.conditions.base import Role
from monitor.alerting.rules import AlertRule
from monitor.declare import secret, setting, subsection
from monitor.sections import as_bool, as_int, as_positive_duration, as_positive_number, as_str
from monitor.values import Duration, Secret, SecretUrl, parse_duration
from monitor.windows.summary import Segment

__all__ = [
    "DEFAULT_MIN_QUERIES",
    "MAX_ALERTS",
    "AlertingConfig",
    "AlertmanagerSettings",
    "RetrySettings",
    "WebhookSettings",
    "default_instance",
]

DEFAULT_MIN_QUERIES = 10
MAX_ALERTS = 10_000  # alert states a sink's queue holds at most
ONE_SECOND = parse_duration("1s")
FIVE_SECONDS = parse_duration("5s")
ONE_MINUTE = parse_duration("1m")


def _alertmanager_url(value: str, variable: str | None, file: Path | None) -> SecretUrl:
    return SecretUrl(value, keep_path=True, env=variable, file=file)


def _webhook_url(value: str, variable: str | None, file: Path | None) -> SecretUrl:
    # A webhook's path often is its credential (Slack, Teams): printed masked too.
    return SecretUrl(value, keep_path=False, env=variable, file=file)


def _token_without_url(url: SecretUrl | None, token: Secret | None) -> tuple[str, str] | None:
    if token is not None and url is None:
        return "token_env", "a token is set but no url"
    return None


@dataclass(frozen=True)
class AlertmanagerSettings:
    """`alerts.alertmanager`: where firing and resolved alerts are posted (`/api/v2/alerts`)."""

    url: SecretUrl | None = secret(
        inline=True, make=_alertmanager_url, doc="Alertmanager's base URL (null: not used)"
    )
    token: Secret | None = secret(doc="a bearer token sent as Authorization")
    timeout: Duration = setting(
        FIVE_SECONDS,
        read=as_positive_duration,
        doc="how long one delivery request may take (Alertmanager and webhook)",
    )
    min_firing: Duration = setting(
        ONE_MINUTE,
        read=as_positive_duration,
        doc="how long a firing stands at Alertmanager before its resolution is sent",
    )

    def problem(self) -> tuple[str, str] | None:
        return _token_without_url(self.url, self.token)


@dataclass(frozen=True)
class WebhookSettings:
    """`alerts.webhook`: a plain JSON POST per alert state (Slack, PagerDuty, anything)."""

    url: SecretUrl | None = secret(
        inline=True, make=_webhook_url, doc="the webhook URL (null: not used)"
    )
    token: Secret | None = secret(doc="a bearer token sent as Authorization")

    def problem(self) -> tuple[str, str] | None:
        return _token_without_url(self.url, self.token)


@dataclass(frozen=True)
class RetrySettings:
    """`alerts.delivery`: how hard rankmon tries."""

    resend_interval: Duration = setting(
        ONE_MINUTE, read=as_positive_duration, doc="how often a firing alert is sent again"
    )
    backoff_initial: Duration = setting(
        ONE_SECOND, read=as_positive_duration, doc="the first wait after a failed delivery"
    )
    backoff_max: Duration = setting(
        ONE_MINUTE, read=as_positive_duration, doc="the longest wait between retries"
    )


def default_instance(values: Mapping[str, Any] | None = None) -> str:
    """The host name: distinct per replica (a Kubernetes pod's name, a container's id)."""
    return socket.gethostname() or "rankmon"


@dataclass(frozen=True, kw_only=True)
class AlertingConfig:
    """The whole `alerts:` section, its keys declared once (`monitor.declare`), plus what
    rendering needs from the rest of the config. The rules are read by `rules.py` (each
    rule's condition reads its own keys)."""

    runbook_url: str | None = setting(
        None, read=as_str, doc="linked from every alert (a rule may name its own)"
    )
    rules: tuple[AlertRule, ...] = ()
    # A window with fewer queries (and fewer than the whole evaluation set) is not judged by
    # the rules on a mean over its queries (`Condition.holds_small_windows`): one stray record
    # must not page anyone.
    min_queries: int = setting(
        DEFAULT_MIN_QUERIES,
        read=as_int(1),
        doc="a window with fewer queries is not judged on its mean",
    )
    # The deployment's false-page budget, shared by every paging rule whose condition can be
    # budgeted (`AlertRule.in_budget`) on every segment it judges. None: each rule at its own.
    false_pages_per_day: float | None = setting(
        None,
        read=as_positive_number,
        doc="the false-page budget every paging rule shares (null: off)",
    )
    alertmanager: AlertmanagerSettings = subsection(
        AlertmanagerSettings, doc="Alertmanager's API v2"
    )
    webhook: WebhookSettings = subsection(WebhookSettings, doc="a JSON POST per alert state")
    log: bool = setting(True, read=as_bool, doc="log each alert state as a JSON line")
    delivery: RetrySettings = subsection(RetrySettings, doc="resends and retries")
    prometheus_job: str = setting(
        "rankmon",
        read=as_str,
        key="prometheus.job",
        doc="the job label Prometheus scrapes rankmon under (for rendered rules)",
    )
    instance: str = setting(
        "",
        read=as_str,
        derive=default_instance,
        doc="the instance label of this instance's alerts (null: the host name)",
    )
    window: str = "5m"
    window_ms: int = 300_000
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

    def share(self, rule_segments: int) -> float | None:
        """Each budgeted rule-segment's false pages a day under the budget (None: no
        budget): the budget split evenly over `rule_segments`."""
        if self.false_pages_per_day is None:
            return None
        return self.false_pages_per_day / max(1, rule_segments)

    def window_level(self, rule_segments: int) -> float | None:
        """Each budgeted rule-segment's level a window: its share over the windows of a
        day (None: no budget, each rule its own)."""
        share = self.share(rule_segments)
        return None if share is None else min(0.5, share / self.windows_per_day)

    def outside_budget(self) -> list[str]:
        """With `false_pages_per_day`, the paging rules on the quality of windows,
        comparisons or judges that the budget cannot hold, each `rule (condition: why)`."""
        if self.false_pages_per_day is None:
            return []
        return [
            f"{rule.name} ({rule.condition.key}: {rule.condition.out_of_budget()})"
            for rule in self.rules
            if rule.pages
            and rule.condition.role in {Role.QUALITY, Role.COMPARISON, Role.JUDGE}
            and not rule.in_budget
        ]

    def too_few_queries(self, queries: int, evaluation_set_queries: int) -> bool:
        """Whether a window of `queries` is too small to judge quality on: under
        `min_queries`, unless it saw every query of a smaller evaluation set."""
        needed = min(self.min_queries, evaluation_set_queries or self.min_queries)
        return queries < needed
