"""The `kafka` config as the keyword arguments kafka-python 3.x takes.

    KafkaConsumer(config.kafka.topic, **consumer_options(config.kafka))
    KafkaProducer(**producer_options(config.kafka))

Security settings pass through unchanged (`security_protocol`, `sasl_mechanism`,
`sasl_plain_username`/`sasl_plain_password` for PLAIN and SCRAM, `ssl_cafile`,
`ssl_certfile`, `ssl_keyfile`, `ssl_password`, `ssl_check_hostname`). The options are a
`KafkaOptions` mapping: it holds the revealed secrets kafka-python needs, and its printed
and JSON-logged forms mask them, so logging the options by mistake leaks nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from monitor.kafka.bootstrap import RECONNECT_BACKOFF_MAX_MS
from monitor.kafka.settings import KafkaConfig
from monitor.values import MASK

__all__ = [
    "SECRET_OPTIONS",
    "KafkaOptions",
    "consumer_options",
    "producer_options",
    "reader_options",
]

SECRET_OPTIONS: Final = frozenset({"sasl_plain_password", "ssl_password"})


class KafkaOptions(Mapping[str, Any]):
    """kafka-python keyword arguments (`**options`) whose printed forms mask the secrets.

    A read-only Mapping rather than a dict subclass: JSON encoders such as orjson serialize
    dict subclasses item by item, secrets included, but fall back to `str()` (masked) here.
    """

    __slots__ = ("_options",)

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._options = dict(options)

    def __getitem__(self, key: str) -> Any:
        return self._options[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)

    def with_changes(self, **changes: Any) -> KafkaOptions:
        """A copy with options added or replaced (e.g. `consumer_timeout_ms` in a tool)."""
        return KafkaOptions({**self._options, **changes})

    def masked(self) -> dict[str, Any]:
        """A copy with every secret replaced by `***` (safe to log)."""
        return {
            k: (MASK if k in SECRET_OPTIONS and v is not None else v)
            for k, v in self._options.items()
        }

    def __repr__(self) -> str:
        return f"KafkaOptions({self.masked()!r})"

    def __str__(self) -> str:
        return repr(self)


def consumer_options(kafka: KafkaConfig) -> KafkaOptions:
    """Options of the event consumer: manual commits only (offsets follow finalized windows).

    `max_partition_fetch_bytes` is at least `max_record_bytes`, so that a record just under
    the limit is still fetched (and one over it arrives to be rejected as too_large rather
    than stalling the partition).
    """
    options = _connection_options(kafka)
    options.update(
        group_id=kafka.group_id,
        enable_auto_commit=False,
        auto_offset_reset=kafka.auto_offset_reset,
        max_poll_records=kafka.max_poll_records,
        max_partition_fetch_bytes=max(kafka.max_record_bytes + 1024, 1_048_576),
    )
    if kafka.session_timeout_ms is not None:
        options["session_timeout_ms"] = kafka.session_timeout_ms
    return KafkaOptions(options)


def reader_options(kafka: KafkaConfig) -> dict[str, Any]:
    """The event consumer's options for a plain reader of one of the deployment's own topics:
    no group, no commits; the bootstrap servers and client id are the reader's to give."""
    options = dict(consumer_options(kafka))
    for key in ("group_id", "enable_auto_commit", "bootstrap_servers", "client_id"):
        options.pop(key, None)
    return options


def producer_options(kafka: KafkaConfig) -> KafkaOptions:
    """Options of the producer of dead letters and window summaries.

    `acks="all"`: a summary must be durable before the offsets it covers are committed.
    gzip (in the standard library): a window share's per-query means compress about 3x,
    which is what lets a window of a few thousand queries fit in one record. kafka-python
    checks `max_request_size` against a record before compression, so it is set well above
    `max_record_bytes`; what reaches the broker is kept under `max_record_bytes` by the
    senders (`recovery.fitted_value`, `deadletter`).
    """
    options = _connection_options(kafka)
    options.update(
        acks="all",
        compression_type="gzip",
        max_request_size=max(16 * kafka.max_record_bytes, 16 * 1_048_576),
    )
    return KafkaOptions(options)


def _connection_options(kafka: KafkaConfig) -> dict[str, Any]:
    security = kafka.security
    options: dict[str, Any] = {
        "bootstrap_servers": list(kafka.bootstrap_servers),
        "client_id": kafka.client_id,
        "security_protocol": security.protocol,
        # kafka-python 3 backs reconnects off up to 30 s: after an outage the monitor would
        # sit that long beside a broker that is back (measured: 24.5 s after a 25 s outage).
        "reconnect_backoff_max_ms": RECONNECT_BACKOFF_MAX_MS,
    }
    if security.sasl is not None:
        options.update(
            sasl_mechanism=security.sasl.mechanism,
            sasl_plain_username=security.sasl.username,
            sasl_plain_password=security.sasl.password.reveal(),
        )
    if security.protocol in ("SSL", "SASL_SSL"):
        ssl = security.ssl
        options.update(
            ssl_cafile=None if ssl.cafile is None else str(ssl.cafile),
            ssl_certfile=None if ssl.certfile is None else str(ssl.certfile),
            ssl_keyfile=None if ssl.keyfile is None else str(ssl.keyfile),
            ssl_password=None if ssl.key_password is None else ssl.key_password.reveal(),
            ssl_check_hostname=ssl.check_hostname,
        )
    return options
