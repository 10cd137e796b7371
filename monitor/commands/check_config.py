"""`rankmon check-config FILE`: validate a config and print the effective one.

Exit 0 and the effective configuration as YAML (defaults filled in, `RANKMON_` overrides
applied, secrets shown only as the variable or file they come from); on a bad key, one line
naming it on stderr and exit 2 (the CLI turns the `ConfigError` into that line). The `alerts:`
rules are checked as `rankmon run` checks them at start (`alerts.rules[1].drop.significance`,
naming the rule), against the cutoffs, gains and segment keys of the same file.
"""

from __future__ import annotations

import argparse
import os
import sys

import yaml

from monitor.config.loader import load_config
from monitor.config.render import render_config

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `check-config` subcommand."""
    parser = subparsers.add_parser(
        "check-config",
        help="validate a config file and print the effective configuration",
        description=(
            "Validate FILE with the RANKMON_ environment overrides applied and print the "
            "effective configuration (secrets masked); exit 2 naming the first bad key."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the YAML config file")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Load and print; a bad config raises `ConfigError` or `InputError` for the CLI."""
    config = load_config(args.file)
    text = yaml.safe_dump(render_config(config), sort_keys=False, allow_unicode=True)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # `rankmon check-config FILE | head`: the reader left early, the config is fine.
        # Point stdout at /dev/null so the interpreter's final flush fails no more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
