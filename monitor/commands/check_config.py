"""`rankmon check-config FILE`: validate a config and print the effective one.

Exit 0 and the effective configuration as YAML (defaults filled in, `RANKMON_` overrides
applied, secrets shown only as the variable or file they come from), headed by a comment
saying what the evaluation set holds; on bad keys, one line naming each on stderr, in the
file's order, and exit 2. It refuses what `rankmon run` refuses before it connects: the
`alerts:` rules against the cutoffs, gains and segment keys of the same file
(`alerts.rules[1].drop.significance`, naming the rule), the files the config names (TLS,
secrets, the evaluation set, read and parsed as `run` reads it) and `RANKMON_SPEEDUPS`.
"""

from __future__ import annotations

import argparse
import os
import sys

import yaml

from monitor.config.loader import load_config
from monitor.config.render import render_config
from monitor.native import speedups_active
from monitor.scoring.evalset import load_evaluation_set

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `check-config` subcommand."""
    parser = subparsers.add_parser(
        "check-config",
        help="validate a config file and print the effective configuration",
        description=(
            "Validate FILE with the RANKMON_ environment overrides applied, as `rankmon run` "
            "does before it connects (the evaluation set is read, RANKMON_SPEEDUPS checked), "
            "and print the effective configuration (secrets masked); exit 2 naming every bad "
            "key."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the YAML config file")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Load and print; a bad config raises `ConfigError` or `InputError` for the CLI."""
    config = load_config(args.file)
    for notice in config.notices:  # the file reads, but should change
        print(f"rankmon check-config: {notice}", file=sys.stderr)
    speedups_active()  # a RANKMON_SPEEDUPS that is neither on nor off stops `run` too
    settings = config.evaluation_set
    evaluation_set = load_evaluation_set(
        settings.path, source=settings.source, keep=settings.sources
    )
    queries, judgments = len(evaluation_set), evaluation_set.num_judgments
    head = (
        f"# evaluation set {evaluation_set.path}: {queries:,} quer{'y' if queries == 1 else 'ies'}"
        f", {judgments:,} judgment{'' if judgments == 1 else 's'}, version "
        f"{evaluation_set.version}\n"
    )
    text = head + yaml.safe_dump(render_config(config), sort_keys=False, allow_unicode=True)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # `rankmon check-config FILE | head`: the reader left early, the config is fine.
        # Point stdout at /dev/null so the interpreter's final flush fails no more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
