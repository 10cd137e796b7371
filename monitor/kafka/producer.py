"""`RecordProducer`: one kafka-python `KafkaProducer` for the dead-letter and windows topics.

Sends are asynchronous; `flush()` waits (bounded) until every record sent so far is
acknowledged, and raises `KafkaUnavailableError` if any was not. The service flushes before it
commits offsets past the records those sends stand for, so a crash never loses them. A record
the broker refused stays queued and is sent again by the next `flush()`, so a long outage
delays dead letters but does not drop them.

Like `EventSource`, it connects lazily: while no bootstrap server accepts a connection, sends
are kept and `flush()` raises `KafkaUnavailableError` at once instead of blocking in kafka-python's
constructor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafka import KafkaProducer
from kafka.errors import KafkaError

from monitor.kafka.bootstrap import KafkaUnavailableError, bootstrap_reachable

__all__ = ["KafkaUnavailableError", "RecordProducer", "RecordSink"]

_log = logging.getLogger(__name__)

Headers = list[tuple[str, bytes]]


class RecordSink(Protocol):
    """What the dead letters and the window shares are sent through: `RecordProducer`, or a
    fake in tests."""

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Headers) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class RecordProducer:
    """Produces raw records; `flush()` before committing offsets that depend on them."""

    def __init__(
        self,
        *,
        bootstrap_servers: str | Sequence[str],
        client_id: str = "rankmon",
        flush_timeout_s: float = 30.0,
        **kafka_options: Any,
    ) -> None:
        self._bootstrap_servers = bootstrap_servers
        self._options: dict[str, Any] = {
            "bootstrap_servers": bootstrap_servers,
            "client_id": client_id,
            "acks": "all",
            "linger_ms": 5,
            # kafka-python blocks a send up to this long while it has no metadata.
            "max_block_ms": 10_000,
            "bootstrap_timeout_ms": 10_000,
            **kafka_options,
        }
        self._flush_timeout_s = flush_timeout_s
        self._producer: KafkaProducer | None = None
        # (record, future or None if not handed to kafka-python) until acknowledged
        self._pending: list[tuple[_Record, Any]] = []

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Headers) -> None:
        """Queue one record; never raises: delivery problems surface in `flush()`."""
        self._pending.append(self._send(_Record(topic, key, value, tuple(headers))))

    def flush(self) -> None:
        """Wait until every queued record is acknowledged; `KafkaUnavailableError` if one is not."""
        if not self._pending:
            return
        # A cheap probe first: while the broker is away, a resend could block for
        # max_block_ms per record.
        if not bootstrap_reachable(self._bootstrap_servers):
            raise KafkaUnavailableError(f"{len(self._pending)} records kept: Kafka unreachable")
        self._resend_failed()
        unsent = sum(future is None for _, future in self._pending)
        if unsent:
            raise KafkaUnavailableError(f"{unsent} records not sent: Kafka unreachable")
        try:
            self._connected().flush(timeout=self._flush_timeout_s)
        except KafkaError as error:
            raise KafkaUnavailableError(
                f"{len(self._pending)} records not acknowledged: {error}"
            ) from error
        self._pending = [(record, future) for record, future in self._pending if future.failed()]
        if self._pending:
            first = self._pending[0][1].exception
            raise KafkaUnavailableError(
                f"{len(self._pending)} records refused, kept to resend: {first}"
            )

    def _resend_failed(self) -> None:
        """Hand unsent and refused records to kafka-python again, until one cannot be."""
        resent: list[tuple[_Record, Any]] = []
        reachable = True
        for record, future in self._pending:
            if future is not None and not future.failed():
                resent.append((record, future))
            elif reachable:
                resent.append(self._send(record))
                reachable = resent[-1][1] is not None
            else:
                resent.append((record, None))
        self._pending = resent

    def close(self) -> None:
        """Close the producer (bounded); unflushed records may be lost, as documented."""
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(timeout=5)

    def _send(self, record: _Record) -> tuple[_Record, Any]:
        """Hand the record to kafka-python; future None: not sent (Kafka unreachable)."""
        try:
            future = self._connected().send(
                record.topic, key=record.key, value=record.value, headers=list(record.headers)
            )
        except (KafkaUnavailableError, KafkaError) as error:
            _log.warning("cannot send to %s now, will retry: %s", record.topic, str(error))
            return record, None
        return record, future

    def _connected(self) -> KafkaProducer:
        if self._producer is not None:
            return self._producer
        if not bootstrap_reachable(self._bootstrap_servers):
            raise KafkaUnavailableError(
                f"no Kafka bootstrap server reachable at {self._bootstrap_servers}"
            )
        try:
            self._producer = KafkaProducer(**self._options)
        except KafkaError as error:
            raise KafkaUnavailableError(f"cannot connect to Kafka: {error}") from error
        return self._producer


@dataclass(frozen=True)
class _Record:
    topic: str
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
