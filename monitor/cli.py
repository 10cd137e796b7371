"""The `rankmon` command line: one subcommand per module in `monitor.commands`.

Only the named subcommand's module is imported (`rankmon eval` does not load the Kafka client,
the HTTP server and the rest of the service: a third of a second, or most of a small
evaluation); without a known subcommand every module registers, for the usage and its errors.
"""

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

# The subcommand each module registers: its name with `-` for `_` (check_config: check-config).
MODULE_OF: dict[str, str] = {
    name.rsplit(".", 1)[1].replace("_", "-"): name for name in COMMAND_MODULES
}

EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Build the parser with `command`'s subcommand only, or with every one (None, unknown)."""
    parser = argparse.ArgumentParser(
        prog="rankmon",
        description=(
            "Watch the quality of a production ranker: judged ranking events from Kafka, "
            "windowed nDCG@k and its companions, Prometheus metrics, dashboards and alerts."
        ),
    )
    parser.add_argument("--version", action="version", version=f"rankmon {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    module = MODULE_OF.get(command or "")
    modules = COMMAND_MODULES if module is None else (module,)
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a `RankmonError` becomes one line on stderr and exit code 2."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in arguments if not a.startswith("-")), None)
    args = build_parser(command).parse_args(arguments)
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
