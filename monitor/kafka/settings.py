"""What the Kafka clients need to connect: brokers, topics, consumer settings, security.

Declared here and read from the `kafka` section by `monitor.declare.read_settings`; the
clients (`monitor.kafka.options`) and the windows-topic reader take these values, never the
config file itself. Secrets (the SASL password, the TLS key's passphrase) are never written
in the file: the config names an environment variable (`password_env`) or a file
(`password_file`, e.g. a mounted Kubernetes secret) and the value is read once, at start,
into a `Secret`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from monitor.declare import secret, setting, subsection
from monitor.sections import as_bool, as_choice, as_int, as_path, as_str, as_str_list
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
DEFAULT_GROUP: Final = "rankmon"
_TOPIC: Final = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True, slots=True)
class SaslConfig:
    """SASL credentials; kafka-python takes them as `sasl_plain_*` for PLAIN and SCRAM alike."""

    mechanism: str = setting(read=as_choice(*SASL_MECHANISMS), doc="the SASL mechanism")
    username: str = setting(read=as_str, doc="the SASL user")
    password: Secret = secret(required=True, doc="the SASL password")


@dataclass(frozen=True, slots=True)
class SslConfig:
    """TLS files (absolute paths) and hostname checking; mTLS when certfile and keyfile are set."""

    cafile: Path | None = setting(
        None, read=as_path, path="file", doc="CA bundle to verify the brokers (null: the system's)"
    )
    certfile: Path | None = setting(
        None, read=as_path, path="file", doc="client certificate for mutual TLS"
    )
    keyfile: Path | None = setting(None, read=as_path, path="file", doc="client key for mutual TLS")
    key_password: Secret | None = secret(doc="the passphrase of the key")
    check_hostname: bool = setting(
        True, read=as_bool, doc="verify the broker certificate's host name"
    )

    def problem(self) -> tuple[str, str] | None:
        """Client TLS takes both files; a key password takes a key."""
        if (self.certfile is None) != (self.keyfile is None):
            missing = "keyfile" if self.keyfile is None else "certfile"
            return missing, "client TLS (mTLS) needs both certfile and keyfile"
        if self.key_password is not None and self.keyfile is None:
            return "key_password_env", "a key password is set but no keyfile"
        return None


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    """`security_protocol` with the SASL and TLS settings it needs."""

    protocol: str = setting(
        "PLAINTEXT", read=as_choice(*PROTOCOLS), doc="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"
    )
    sasl: SaslConfig | None = subsection(
        SaslConfig, optional=True, doc="SASL credentials (SASL_* protocols only)"
    )
    ssl: SslConfig = subsection(SslConfig, doc="TLS files (SSL and SASL_SSL only)")

    def problem(self) -> tuple[str, str] | None:
        """SASL exactly with a SASL protocol, TLS files only with a TLS one."""
        protocol = self.protocol
        if protocol.startswith("SASL_") and self.sasl is None:
            return "sasl", f"protocol {protocol} needs sasl.mechanism and credentials"
        if self.sasl is not None and not protocol.startswith("SASL_"):
            return "sasl", f"is set but protocol {protocol} does not use SASL"
        uses_tls = protocol in ("SSL", "SASL_SSL")
        files = (self.ssl.cafile, self.ssl.certfile, self.ssl.keyfile)
        if not uses_tls and any(files):
            return "ssl", f"files are set but protocol {protocol} does not use TLS"
        return None


def topic_name(value: object) -> str:
    """A Kafka topic name (checked here, so a typo fails at start, not at the first produce)."""
    name = as_str(value)
    if not _TOPIC.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"{name!r} is not a Kafka topic name (1-249 of A-Z a-z 0-9 . _ -)")
    return name


def bootstrap_servers(value: object) -> tuple[str, ...]:
    """At least one `host:port`."""
    servers = as_str_list(value)
    if not servers:
        raise ValueError("must list at least one host:port")
    for server in servers:
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"expected host:port, got {server!r}")
    return tuple(server.strip() for server in servers)


def deployment_prefix(topic: str, group: str) -> str:
    """What a deployment's own topics are named from: `<topic>.<group>`, so that two
    deployments (consumer groups) reading one events topic never share a windows or a
    dead-letter topic by default. The default group keeps `<topic>`, the names rankmon used
    before. Characters a topic name cannot hold become `_`; the whole stays within Kafka's
    249 characters (with room for `.windows`)."""
    if group == DEFAULT_GROUP:
        return topic
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", group)
    return f"{topic}.{safe}"[:240]


def _own_topic(suffix: str) -> Callable[[Mapping[str, Any]], str]:
    def derive(values: Mapping[str, Any]) -> str:
        return f"{deployment_prefix(values['topic'], values['group_id'])}.{suffix}"

    return derive


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaConfig:
    """The `kafka` settings, declared once (`monitor.declare`): where the events come from,
    where rejects and window summaries go, and the connection's security (its secrets come
    from the environment or files, never from the config itself).

    `session_timeout_ms` None keeps kafka-python's default (tests set about 6000, see
    tests/support/realparts.py).
    """

    bootstrap_servers: tuple[str, ...] = setting(
        ("localhost:9092",), read=bootstrap_servers, doc="brokers to bootstrap from, host:port"
    )
    topic: str = setting(read=topic_name, doc="the topic of the judged ranking events")
    group_id: str = setting(DEFAULT_GROUP, read=as_str, doc="the consumer group")
    client_id: str = setting("rankmon", read=as_str, doc="the client id brokers see")
    dead_letter_topic: str = setting(
        "", read=topic_name, derive=_own_topic("dlq"), doc="where refused records go"
    )
    windows_topic: str = setting(
        "", read=topic_name, derive=_own_topic("windows"), doc="where window shares go"
    )
    auto_offset_reset: str = setting(
        "earliest",
        read=as_choice("earliest", "latest"),
        doc="where a group without committed offsets starts",
    )
    session_timeout_ms: int | None = setting(
        None, read=as_int(1000, 3_600_000), doc="the group's session timeout (null: kafka's)"
    )
    max_poll_records: int = setting(5000, read=as_int(1, 1_000_000), doc="records per poll")
    max_record_bytes: int = setting(
        DEFAULT_MAX_RECORD_BYTES,
        read=as_int(1, MAX_RECORD_BYTES),
        doc="a larger record is refused (too_large), as are the windows topic's",
    )
    security: KafkaSecurity = subsection(KafkaSecurity, doc="the connection's security")

    def problem(self) -> tuple[str, str] | None:
        """The deployment's three topics are three."""
        if len({self.topic, self.dead_letter_topic, self.windows_topic}) < 3:
            return "dead_letter_topic", "topic, dead_letter_topic and windows_topic must differ"
        return None
