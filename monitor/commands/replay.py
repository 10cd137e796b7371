"""`rankmon replay --config FILE [--once] [--run-file PATH]`: replay the evaluation set.

Sends each query of the evaluation set (its text from `replay.topics`) to the ranker
`replay.ranker` describes, publishes one ranking event per query (or its failure) with one
`replay_id`, and an end-of-replay marker, to `kafka.topic`; the monitor then scores the
replay. `--once` runs one replay and exits (a Kubernetes CronJob, cron, Airflow): exit 0 when
it was published and at least one query was ranked, 1 when none was (the ranker is down) or
Kafka could not store it (one line saying why), 2 for a bad config, 130 when SIGINT or
SIGTERM stopped it: nothing more is sent, the requests in flight get a grace, and the end
marker (`stopped`) and the run file of what was answered are still written. Without it,
replays run on `replay.schedule` until SIGTERM or SIGINT, which stop the running replay the
same way.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from monitor.config.loader import load_config
from monitor.errors import ConfigError
from monitor.logs import configure_logging
from monitor.replay.publish import PublishError

__all__ = ["register", "run"]

EXIT_NOTHING_RANKED = 1
EXIT_NOT_PUBLISHED = 1  # Kafka unreachable or refusing: nothing of the replay is sure
EXIT_STOPPED = 130  # a signal stopped the replay (the shell's code for SIGINT)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `replay` subcommand."""
    parser = subparsers.add_parser(
        "replay",
        help="replay the evaluation set through the live ranker, once or on a schedule",
        description=(
            "Send every query of the evaluation set (its text from replay.topics) to the "
            "ranker of replay.ranker, and publish the rankings, all with one replay_id, to "
            "kafka.topic for `rankmon run` to score as one unit. With --once: one replay, "
            "then exit (exit 1 when no query was ranked, 130 when SIGINT or SIGTERM stopped "
            "it: its end marker and run file still written). Without: on replay.schedule "
            "(interval or cron) until SIGTERM or SIGINT."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the YAML config file")
    parser.add_argument("--once", action="store_true", help="run one replay and exit")
    parser.add_argument(
        "--run-file", type=Path, default=None, metavar="PATH",
        help="with --once: also write the replay as a TREC run (rankmon eval scores it)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Replay once or on the schedule; the exit code as the module docstring says."""
    config = load_config(args.config)
    configure_logging(config.logging.level, config.logging.format)
    for notice in config.notices:
        logging.getLogger(__name__).warning("%s", notice)
    from monitor.replay.replayer import Replayer  # the replayer's imports when it runs

    if args.run_file is not None and not args.once:
        print("rankmon replay: --run-file needs --once", file=sys.stderr)
        return 2
    if config.replay is None:
        raise ConfigError("replay", "is required by rankmon replay (see rankmon.example.yaml)")
    try:
        judged = config.evaluation_set
        replayer = Replayer(
            config.replay,
            config.kafka,
            judged.path,
            progress=True,
            source=judged.source,
            keep=judged.sources,
            max_id_bytes=config.events.max_id_bytes,
            max_value_bytes=config.segments.max_value_bytes,
        )
    except PublishError as error:
        print(f"rankmon replay: {error}", file=sys.stderr)
        return EXIT_NOT_PUBLISHED
    if args.once:
        with _stopped_by_signals(replayer.stop):
            try:
                report = replayer.once(args.run_file)
            except PublishError as error:
                print(f"rankmon replay: {error}", file=sys.stderr)
                return EXIT_NOT_PUBLISHED
            finally:
                replayer.close()
        print(report.line(), flush=True)
        if report.stopped:
            return EXIT_STOPPED
        return 0 if report.outcomes["ranked"] else EXIT_NOTHING_RANKED
    stop = threading.Event()
    with _stopped_by_signals(stop):
        replayer.scheduled(stop)
    return 0


@contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set `stop` (instead of raising in the middle of a replay, which
    left its threads sending every query and wrote no end marker) for the `with` block."""

    def on_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
