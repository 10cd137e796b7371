"""The `rankmon` command line: one subcommand per module in `monitor.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from monitor import __version__
from monitor.errors import RankmonError

__all__ = ["build_parser", "main"]

# Each module exposes register(subparsers) and sets `handler` on its parser.
COMMAND_MODULES: tuple[str, ...] = (
    "monitor.commands.run",
    "monitor.commands.eval",
    "monitor.commands.check_config",
    "monitor.commands.dashboards",
    "monitor.commands.rules",
    "monitor.commands.demo",
    "monitor.commands.compare",
    "monitor.commands.explain",
)

EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """Build the parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="rankmon",
        description=(
            "Watch the quality of a production ranker: judged ranking events from Kafka, "
            "windowed nDCG@k and its companions, Prometheus metrics, dashboards and alerts."
        ),
    )
    parser.add_argument("--version", action="version", version=f"rankmon {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a `RankmonError` becomes one line on stderr and exit code 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except RankmonError as error:
        print(f"rankmon {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
