"""`rankmon replay --config FILE [--once] [--run-file PATH]`: replay the evaluation set;
`rankmon replay export --config FILE --replay ID [--output PATH]`: a replay's run file again.

Sends each query of the evaluation set (its text from `replay.topics`) to the ranker
`replay.ranker` describes, publishes one ranking event per query (or its failure) with one
`replay_id`, and an end-of-replay marker, to `kafka.topic`; the monitor then scores the
replay. `--once` runs one replay and exits (a Kubernetes CronJob, cron, Airflow): exit 0 when
it was published and at least one query was ranked, 1 when none was (the ranker is down) or
Kafka could not store it (one line saying why), 2 for a bad config, 130 when SIGINT or
SIGTERM stopped it: nothing more is sent, the requests in flight get a grace, and the end
marker (`stopped`) and the run file of what was answered are still written. Without it,
replays run on `replay.schedule` until SIGTERM or SIGINT, which stop the running replay the
same way; `replay.archive` keeps each one's run file (`monitor.replay.archive`).

`export` reads `kafka.topic` from its beginning and writes the TREC run of the replay `--replay`
names, from its ranking events (ids only; exit 1 when the topic has none of it).
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

import orjson

from monitor.config.loader import Config, load_config
from monitor.errors import ConfigError
from monitor.kafka.consumer import SourceRecord
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
    parser.add_argument(
        "action", nargs="?", choices=["export"], default=None,
        help="export: write a replay's TREC run file rebuilt from kafka.topic (--replay ID)",
    )  # fmt: skip
    parser.add_argument("--config", required=True, metavar="FILE", help="the YAML config file")
    parser.add_argument("--once", action="store_true", help="run one replay and exit")
    parser.add_argument(
        "--run-file", type=Path, default=None, metavar="PATH",
        help="with --once: also write the replay as a TREC run (rankmon eval scores it)",
    )  # fmt: skip
    parser.add_argument(
        "--replay", default=None, metavar="ID", help="with export: the replay_id to rebuild"
    )
    parser.add_argument(
        "--output", type=Path, default=None, metavar="PATH",
        help="with export: the run file to write (default: <ID>.run)",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS",
        help="with export: give up when the topic yields nothing for this long (default: 60)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Replay once or on the schedule; the exit code as the module docstring says."""
    config = load_config(args.config)
    configure_logging(config.logging.level, config.logging.format)
    for notice in config.notices:
        logging.getLogger(__name__).warning("%s", notice)
    from monitor.replay.replayer import Replayer  # the replayer's imports when it runs

    if args.action == "export":
        return _export(args, config)
    if args.replay is not None or args.output is not None:
        print("rankmon replay: --replay and --output go with export", file=sys.stderr)
        return 2
    if args.run_file is not None and not args.once:
        print(
            "rankmon replay: --run-file needs --once (a scheduled replayer keeps every "
            "replay's run file with replay.archive)",
            file=sys.stderr,
        )
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
            max_document_bytes=config.events.max_document_bytes,
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


def _export(args: argparse.Namespace, config: Config) -> int:
    """`rankmon replay export`: the replay's rankings read back from the events topic."""
    from monitor.judging.topics import TopicFeed
    from monitor.kafka.bootstrap import KafkaUnavailableError
    from monitor.replay.runner import ReplayReport, write_run

    replay_id = args.replay
    if not replay_id:
        print("rankmon replay export: --replay ID is required", file=sys.stderr)
        return 2
    report = ReplayReport(replay_id, 0, 0)
    needle = orjson.dumps(replay_id)  # a record of another replay is not parsed

    def take(record: SourceRecord) -> None:
        if needle not in record.value:
            return
        try:
            event = orjson.loads(record.value)
        except orjson.JSONDecodeError:
            return
        replay, ranking = event.get("replay"), event.get("ranking")
        if isinstance(replay, dict) and replay.get("id") == replay_id and isinstance(ranking, list):
            report.rankings[str(event.get("query_id"))] = tuple(str(doc) for doc in ranking)

    topic = config.kafka.topic
    feed = TopicFeed(config.kafka, topic, "replay-export", timeout_s=args.timeout)
    try:
        feed.catch_up(take)
    except KafkaUnavailableError as error:
        print(f"rankmon replay export: {topic} cannot be read: {error}", file=sys.stderr)
        return EXIT_NOT_PUBLISHED
    finally:
        feed.close()
    if not report.rankings:
        print(
            f"rankmon replay export: no ranking of replay {replay_id} on {topic}", file=sys.stderr
        )
        return EXIT_NOTHING_RANKED
    output = args.output or Path(f"{replay_id}.run")
    try:
        write_run(report, output)
    except (OSError, ValueError) as error:
        print(f"rankmon replay export: cannot write {output}: {error}", file=sys.stderr)
        return 1
    print(f"rankmon replay export: {len(report.rankings)} queries of {replay_id} to {output}")
    return 0
