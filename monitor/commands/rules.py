"""`rankmon rules render --config FILE`: the Prometheus rules for the configured alerts.

Prints (or writes with `--output`) one rules file: recording rules that combine the
instances' series into global means, and the alerting rules for the `below`, `stale`,
`coverage` and `judged` rules of `alerts.rules`, plus `RankmonDown`/`RankmonAbsent`. `drop`
rules are left to rankmon's own, significance-gated alerts unless `--ungated-drop` asks for
their ungated Prometheus approximation (for deployments where rankmon does not deliver its
alerts); `trend` rules are always left to rankmon. Check it with `promtool check rules`. A
bad rule is one line naming it on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from monitor.alerting.render import render_prometheus_rules
from monitor.config.loader import load_config

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rules render`."""
    parser = subparsers.add_parser(
        "rules",
        help="Prometheus alerting and recording rules for the configured alerts",
        description="Render the configured alert rules as a Prometheus rules file.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    render = actions.add_parser("render", help="print the Prometheus rules file")
    render.add_argument("--config", required=True, metavar="FILE", help="the YAML config file")
    render.add_argument("--output", metavar="FILE", help="write here instead of stdout")
    render.add_argument(
        "--ungated-drop",
        action="store_true",
        help=(
            "also render drop rules, without their paired test (Prometheus has no per-query "
            "values): only where rankmon does not send its own, gated drop alerts"
        ),
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Load the config, parse its alerts and print the rules."""
    alerting = (load_config(args.config)).alerts
    text = render_prometheus_rules(alerting, ungated_drop=args.ungated_drop)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
