"""`rankmon run --config FILE`: the long-running service.

SIGTERM or SIGINT stops it gracefully: the loop stops polling, `Monitor.close()` flushes what
is queued, commits the offsets that are safe and leaves the group; nothing is finalized early.
A watchdog bounds that: if the process is still closing `SHUTDOWN_TIMEOUT_S` after the
signal (a broker that accepts connections but never answers), it exits with status 1 at
once. That loses nothing: what was not committed is replayed by the next start, and what was
published is skipped. The bound stays under Kubernetes' default 30 s grace period, so the
exit is ours rather than a SIGKILL.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from types import FrameType
from typing import Any, Final

from monitor.checkpoint.steps import StepHook, ignore_step
from monitor.config.loader import load_config
from monitor.logs import configure_logging

__all__ = ["SHUTDOWN_TIMEOUT_S", "register", "serve"]

SHUTDOWN_TIMEOUT_S: Final = 25.0
EXIT_SHUTDOWN_TIMEOUT: Final = 1

_log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    """Add the `run` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run the streaming monitor",
        description=(
            "Consume judged ranking events from Kafka, score them against the evaluation set, "
            "aggregate them in event-time windows, export the latest finalized windows to "
            "Prometheus and evaluate the alert rules. SIGTERM or SIGINT stops it (offsets that "
            f"are safe are committed first, within {SHUTDOWN_TIMEOUT_S:.0f} s); SIGHUP reloads "
            "the evaluation set. Every config key can be overridden by an environment variable "
            "RANKMON_SECTION__KEY."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the YAML config file")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run until a stop signal; exit 0 after a clean shutdown."""
    return serve(args.config)


def serve(config_path: str, step_hook: StepHook = ignore_step) -> int:
    """`rankmon run`'s body; `step_hook` watches the commit protocol's steps
    (`monitor.checkpoint.steps`)."""
    config = load_config(config_path)
    configure_logging(config.logging.level, config.logging.format)
    for notice in config.notices:
        _log.warning("%s", notice)
    from monitor.service import Monitor, MonitorIo  # the service's imports only when it runs

    monitor = Monitor(config, io=MonitorIo(step_hook=step_hook))
    stop = threading.Event()
    watchdog = threading.Timer(SHUTDOWN_TIMEOUT_S, _give_up)
    watchdog.daemon = True

    def on_stop(signum: int, frame: FrameType | None) -> None:
        if not stop.is_set():
            stop.set()
            watchdog.start()

    def on_reload(signum: int, frame: FrameType | None) -> None:
        monitor.request_reload()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_reload)
    monitor.run(stop)
    watchdog.cancel()
    return 0


def _give_up() -> None:
    _log.error("shutdown took longer than %.0f s; exiting without finishing it", SHUTDOWN_TIMEOUT_S)
    logging.shutdown()
    os._exit(EXIT_SHUTDOWN_TIMEOUT)
