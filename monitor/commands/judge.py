"""`rankmon judge --config FILE [--once]`: grade the pairs the judging loop asks for with an
LLM, through any OpenAI-compatible chat-completions endpoint (`judge:`, docs/judging.md).

Reads the to-judge topic, asks the model of `judge.url` with the rubric prompt (or
`judge.prompt_file`), and writes each grade to the judgments topic with its provenance
(`source`, model, prompt hash, temperature, a short reason). `--once` grades the pairs there
are now and exits (a CronJob): exit 0, 1 when Kafka could not be read or written (one line
saying why), 2 for a bad config. Without it, it follows the topic until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import sys
import threading

from monitor.config.loader import load_config
from monitor.errors import ConfigError
from monitor.logs import configure_logging

__all__ = ["register", "run"]

EXIT_KAFKA = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `judge` subcommand."""
    parser = subparsers.add_parser(
        "judge",
        help="grade the pairs the judging loop asks for with an LLM (chat completions)",
        description=(
            "Read judging.tojudge_topic, ask the chat-completions endpoint of judge.url to "
            "grade each pair with a rubric prompt, and write the grades with their provenance "
            "to judging.judgments_topic. A pair this judge's source graded before is never "
            "asked again. With --once: the pairs there are now, then exit."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the YAML config file")
    parser.add_argument("--once", action="store_true", help="grade what is there now and exit")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Grade once or until a signal; the exit code as the module docstring says."""
    config = load_config(args.config)
    configure_logging(config.logging.level, config.logging.format)
    from monitor.commands.replay import _stopped_by_signals  # the same signal handling
    from monitor.judge.run import run_judge
    from monitor.kafka.bootstrap import KafkaUnavailableError
    from monitor.replay.publish import PublishError
    from monitor.service.wiring import query_texts

    if config.judge is None:
        raise ConfigError("judge", "is required by rankmon judge (see rankmon.example.yaml)")
    stop = threading.Event()
    with _stopped_by_signals(stop):
        try:
            report = run_judge(
                config.judge, config.kafka, config.judging, query_texts(config),
                once=args.once, stop=stop, progress=True,
            )  # fmt: skip
        except (KafkaUnavailableError, PublishError) as error:
            print(f"rankmon judge: {error}", file=sys.stderr)
            return EXIT_KAFKA
    print(report.line(), flush=True)
    return 0
