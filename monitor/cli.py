"""The `rankmon` command line: one subcommand per module in `monitor.commands`.

The offline subcommands (`eval`, `compare`, `explain`) import only their own module: they do
not load the Kafka client, the HTTP server and the rest of the service (0.9 s, most of a small
evaluation); and they run without the cyclic garbage collector. Every other invocation
registers every module, so the service starts exactly as it always has.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext

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
    "monitor.commands.broker",
    "monitor.commands.replay",
    "monitor.commands.compare",
    "monitor.commands.explain",
    "monitor.commands.judgments",
    "monitor.commands.judge",
)

# The subcommand each module registers: its name with `-` for `_` (check_config: check-config).
MODULE_OF: dict[str, str] = {
    name.rsplit(".", 1)[1].replace("_", "-"): name for name in COMMAND_MODULES
}
# The subcommands that work on files alone, and may start without the rest.
OFFLINE_COMMANDS = frozenset({"eval", "compare", "explain"})

EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Build the parser with every subcommand, or with `command`'s only when it is offline."""
    parser = argparse.ArgumentParser(
        prog="rankmon",
        description=(
            "Watch the quality of a production ranker: judged ranking events from Kafka, "
            "windowed nDCG@k and its companions, Prometheus metrics, dashboards and alerts."
        ),
    )
    parser.add_argument("--version", action="version", version=f"rankmon {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    offline = command in OFFLINE_COMMANDS
    modules = (MODULE_OF[command],) if command is not None and offline else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a `RankmonError` becomes one line on stderr and exit code 2."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    # rankmon's numpy work is element-wise: OpenBLAS's worker threads (one per CPU, spinning
    # while they wait) would only take the CPU from the run reader's second thread. Set before
    # a command imports numpy; a value the user set stays.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    command = next((a for a in arguments if not a.startswith("-")), None)
    with _without_cycle_collection() if command in OFFLINE_COMMANDS else nullcontext():
        return _run(command, arguments)


def _run(command: str | None, arguments: list[str]) -> int:
    args = build_parser(command).parse_args(arguments)
    handler: Handler = args.handler
    try:
        return handler(args)
    except RankmonError as error:
        for line in str(error).splitlines() or [""]:  # ConfigKeysError: a line per key
            print(f"rankmon {args.command}: {line}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """The offline commands build a dict per query and hold them to the end: the cyclic
    collector would walk them again at every collection (15 % of a 100,000-query `rankmon
    eval`; numpy's import too, 4 % of a 20,000-query one), and they make no cycles worth
    collecting. Reference counting frees the rest."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


if __name__ == "__main__":
    sys.exit(main())
