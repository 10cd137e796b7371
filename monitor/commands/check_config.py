"""`rankmon check-config FILE`: validate a config and print the effective one.

Exit 0 and the effective configuration as YAML (defaults filled in, `RANKMON_` overrides
applied, secrets shown only as the variable or file they come from); on a bad key, one line
naming it on stderr and exit 2 (the CLI turns the `ConfigError` into that line).
"""

from __future__ import annotations

import argparse
import sys

import yaml

from monitor.config import load_config
from monitor.config_render import render_config

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
    yaml.safe_dump(render_config(config), sys.stdout, sort_keys=False, allow_unicode=True)
    return 0
