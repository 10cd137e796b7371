"""`rankmon run --config FILE`: the long-running service."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from monitor.config import load_config
from monitor.logs import configure_logging
from monitor.service import Monitor

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the `run` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run the streaming monitor",
        description=(
            "Consume judged ranking events from Kafka, score them against the evaluation set, "
            "aggregate them in event-time windows, export the latest finalized windows to "
            "Prometheus and evaluate the alert rules. SIGTERM or SIGINT stops it (offsets that "
            "are safe are committed first); SIGHUP reloads the evaluation set. Every config key "
            "can be overridden by an environment variable RANKMON_SECTION__KEY."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the YAML config file")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run until a stop signal; exit 0 after a clean shutdown."""
    config = load_config(args.config)
    configure_logging(config.logging.level, config.logging.format)
    monitor = Monitor(config)
    stop = threading.Event()

    def on_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    def on_reload(signum: int, frame: FrameType | None) -> None:
        monitor.request_reload()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_reload)
    monitor.run(stop)
    return 0
