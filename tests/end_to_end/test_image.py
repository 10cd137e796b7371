"""The image production teams deploy: deploy/Dockerfile built by scripts/build-image and run.

It runs as Kubernetes runs it (deploy/kubernetes/deployment.yaml): uid 10001, a read-only
root filesystem with a writable /tmp, the config mounted read-only, against the real broker
on the host network. It must report the C accelerators, answer its probes, turn events into
a finalized window on /metrics, and stop cleanly within its grace period on SIGTERM.

Needs podman (or a running docker), and as root debootstrap for the stand-in base image where
python:3.11-slim cannot be pulled (scripts/ensure-system-deps installs them). The first build
on a machine takes about two minutes; later ones reuse the engine's cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from monitor.demo.broker import EmbeddedBroker, free_port
from tests.support.realparts import missing_part, produce_records

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.image]

ROOT = Path(__file__).resolve().parents[2]
TAG = "rankmon:test"
T0 = 1_767_225_600_000
GRACE_S = 30


def sh(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a command to its end; the caller reads its exit code and output."""
    return subprocess.run(
        args, check=False, capture_output=True, text=True, env=env, timeout=timeout
    )


def engine() -> str:
    """podman, or docker when its daemon answers; fails in CI, skips elsewhere, if neither."""
    docker = shutil.which("docker")
    if docker is not None and sh(docker, "info").returncode == 0:
        return "docker"
    if shutil.which("podman") is None:
        missing_part("podman (Debian: scripts/ensure-system-deps) to build and run the image")
    return "podman"


def engine_env(cache: Path) -> dict[str, str]:
    # The same containers.conf scripts/build-image writes (runc, no default ulimits).
    env = dict(os.environ)
    conf = cache / "containers.conf"
    if conf.exists():
        env["CONTAINERS_CONF"] = str(conf)
    return env


@pytest.fixture(scope="module")
def image() -> Iterator[tuple[str, dict[str, str]]]:
    name = engine()
    built = sh(
        str(ROOT / "scripts" / "build-image"),
        TAG,
        env={**os.environ, "RANKMON_IMAGE_ENGINE": name},
        timeout=1200,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert "built rankmon:test" in built.stderr
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rankmon-image"
    yield name, engine_env(cache)


def http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def wait_for(
    predicate: Callable[[], bool], timeout_s: float, what: str, logs: Callable[[], str]
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    pytest.fail(f"{what} within {timeout_s} s; the container's log:\n{logs()[-4000:]}")


def event(event_id: str, query: str, ranking: list[str], seconds: int) -> tuple[bytes, bytes]:
    value = {
        "event_id": event_id,
        "query_id": query,
        "ranking": ranking,
        "event_time": T0 + seconds * 1000,
        "segment": {"model": "v1"},
    }
    return query.encode(), orjson.dumps(value)


def test_the_image_runs_as_kubernetes_runs_it_and_stops_cleanly_on_sigterm(
    image: tuple[str, dict[str, str]],
    tansu: EmbeddedBroker,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    name, env = image
    topic = new_topic(1)
    for suffix in (".dlq", ".windows"):
        tansu.create_topic(topic + suffix, 1)
    port = free_port()
    config_dir = tmp_path / "etc"
    config_dir.mkdir()
    (config_dir / "qrels.txt").write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\n")
    (config_dir / "config.yaml").write_text(
        f"""
kafka:
  bootstrap_servers: ["{tansu.bootstrap_servers}"]
  topic: {topic}
  group_id: g-{topic}
  session_timeout_ms: 6000
evaluation_set: {{path: qrels.txt}}
windows: {{size: 10s, allowed_lateness: 1s, idle_timeout: 1h}}
schedule: {{interval: 1s}}
segments: {{keys: [model]}}
export: {{host: 127.0.0.1, port: {port}}}
"""
    )
    config_dir.chmod(0o755)
    for file in config_dir.iterdir():
        file.chmod(0o644)
    container = f"rankmon-test-{uuid.uuid4().hex[:8]}"
    run = [name, "run", "-d", "--name", container, "--network", "host"]
    run += ["--user", "10001:10001", "--read-only", "-v", f"{config_dir}:/etc/rankmon:ro"]
    started = sh(*run, TAG, env=env)
    assert started.returncode == 0, started.stderr

    def logs() -> str:
        out = sh(name, "logs", container, env=env)
        return out.stdout + out.stderr

    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: http_status(f"{base}/healthz") == 200, 60, "/healthz answered 200", logs)
        wait_for(lambda: http_status(f"{base}/readyz") == 200, 60, "/readyz answered 200", logs)
        assert "speedups=c" in logs()
        user = sh(name, "exec", container, "id", "-u", env=env)
        assert user.stdout.strip() == "10001"
        # the wheel holds the product only: no fake clock, no crash points
        find = "import importlib.util as u; print(u.find_spec('monitor.testing'))"
        testing = sh(name, "exec", container, "python", "-c", find, env=env)
        assert testing.stdout.strip() == "None", testing.stdout + testing.stderr
        produce_records(
            tansu.bootstrap_servers,
            topic,
            [
                event("e1", "q1", ["d1", "d2"], 1),
                event("e2", "q2", ["x", "d3"], 2),
                event("e3", "q1", ["d2", "d1"], 3),
                event("closer", "q1", ["d1"], 25),  # its watermark closes [0, 10)
            ],
        )

        def window_finalized() -> bool:
            try:
                with urllib.request.urlopen(f"{base}/metrics", timeout=2) as answer:
                    text = answer.read().decode()
            except OSError:
                return False
            return any(
                line.startswith("rankmon_window_queries{") and line.endswith(" 2.0")
                for line in text.splitlines()
            )

        wait_for(window_finalized, 60, "a finalized window of 2 queries on /metrics", logs)
        stopped = sh(name, "stop", "-t", str(GRACE_S), container, env=env, timeout=GRACE_S + 30)
        assert stopped.returncode == 0, stopped.stderr
        code = sh(name, "inspect", "--format", "{{.State.ExitCode}}", container, env=env)
        # 0: it ended on SIGTERM by itself within the grace period; past it, the engine's
        # SIGKILL would have made it 137.
        assert code.stdout.strip() == "0", logs()[-4000:]
    finally:
        sh(name, "rm", "-f", container, env=env)
