"""What the Kafka clients need to connect: brokers, topics, consumer settings, security.

Built from the `kafka` section by `monitor.config.kafka`; the clients (`monitor.kafka.options`)
and the windows-topic reader take these values, never the config file itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from monitor.values import Secret

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "MAX_RECORD_BYTES",
    "PROTOCOLS",
    "SASL_MECHANISMS",
    "KafkaConfig",
    "KafkaSecurity",
    "SaslConfig",
    "SslConfig",
]

PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_MAX_RECORD_BYTES: Final = 1_048_576  # Kafka's own default record size limit
MAX_RECORD_BYTES: Final = 2**31 - 1  # Kafka sizes are int32


@dataclass(frozen=True, slots=True)
class SaslConfig:
    """SASL credentials; kafka-python takes them as `sasl_plain_*` for PLAIN and SCRAM alike."""

    mechanism: str
    username: str
    password: Secret


@dataclass(frozen=True, slots=True)
class SslConfig:
    """TLS files (absolute paths) and hostname checking; mTLS when certfile and keyfile are set."""

    cafile: Path | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    key_password: Secret | None = None
    check_hostname: bool = True


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    """`security_protocol` with the SASL and TLS settings it needs."""

    protocol: str = "PLAINTEXT"
    sasl: SaslConfig | None = None
    ssl: SslConfig = SslConfig()


@dataclass(frozen=True, slots=True)
class KafkaConfig:
    """Where the events come from and where rejects and window summaries go.

    `session_timeout_ms` None keeps kafka-python's default (tests set about 6000, see
    tests/realparts.py).
    """

    bootstrap_servers: tuple[str, ...]
    topic: str
    group_id: str
    client_id: str
    dead_letter_topic: str
    windows_topic: str
    auto_offset_reset: str
    session_timeout_ms: int | None
    max_poll_records: int
    max_record_bytes: int
    max_id_bytes: int  # an event's ids and doc ids (monitor.ingest.schema)
    security: KafkaSecurity
