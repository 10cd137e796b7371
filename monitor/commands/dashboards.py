"""`rankmon dashboards render|push`: the Grafana dashboards as files, or into a Grafana.

`render` writes `DIR/<uid>.json` (default `dashboards/`), byte-identical on every run for the
same config; the checked-in `dashboards/*.json` are `render --config dashboards/rankmon.yaml`
(`make dashboards` renders them and deploy/'s). `push` provisions a folder and the dashboards
through Grafana's HTTP API; the token comes from an environment variable (default
`GRAFANA_TOKEN`) or a file, never from the command line, where `ps` and shell history would
show it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from monitor.dashboards import DEFAULT_SPEC, DashboardSpec, build_dashboards, load_spec
from monitor.errors import InputError, RankmonError

__all__ = ["register"]

DEFAULT_TOKEN_ENV = "GRAFANA_TOKEN"


def register(subparsers: Any) -> None:
    """Add `dashboards render` and `dashboards push`."""
    parser = subparsers.add_parser("dashboards", help="render or push the Grafana dashboards")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    render = actions.add_parser("render", help="write the dashboards as DIR/<uid>.json")
    render.add_argument(
        "--out",
        type=Path,
        default=Path("dashboards"),
        metavar="DIR",
        help="directory to write <uid>.json into, created if missing (default: %(default)s)",
    )
    render.add_argument(
        "--force",
        action="store_true",
        help="replace files in DIR that differ from what is rendered (without it, a file "
        "that differs, e.g. one checked in with thresholds, is left alone and the command "
        "exits 2 naming it)",
    )
    push = actions.add_parser("push", help="provision a folder and the dashboards in Grafana")
    push.add_argument("--url", required=True, help="Grafana's base URL, e.g. http://grafana:3000")
    token = push.add_mutually_exclusive_group()
    token.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_ENV,
        metavar="VAR",
        help="environment variable holding the Grafana service account token "
        "(default: %(default)s)",
    )
    token.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="read the token from this file instead of --token-env",
    )
    push.add_argument(
        "--folder",
        default="rankmon",
        metavar="NAME",
        help="title of the Grafana folder, found by title or created (default: %(default)s)",
    )
    for action in (render, push):
        action.add_argument(
            "--config",
            type=Path,
            metavar="FILE",
            help="draw this rankmon config's segment keys, window and alert thresholds "
            "(without it: segment key model, no thresholds)",
        )
    render.set_defaults(handler=_render)
    push.set_defaults(handler=_push)


def _spec(args: argparse.Namespace) -> DashboardSpec:
    return DEFAULT_SPEC if args.config is None else load_spec(args.config)


def _render(args: argparse.Namespace) -> int:
    out: Path = args.out
    rendered = {out / f"{d.uid}.json": d.to_json() for d in build_dashboards(_spec(args))}
    differing = [path for path, text in rendered.items() if _differs(path, text)]
    if differing and not args.force:
        names = ", ".join(str(path) for path in differing)
        raise RankmonError(
            f"{names}: exists and differs from what this config renders; left alone "
            "(--force replaces, --out writes elsewhere)"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in rendered.items():
            path.write_text(text, encoding="utf-8")
            print(path)
    except OSError as error:
        raise InputError(str(out), f"cannot write the dashboards: {error.strerror}") from error
    return 0


def _differs(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") != text
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        return True


def _push(args: argparse.Namespace) -> int:
    from monitor.dashboards.grafana import GrafanaTarget  # the HTTP client only to push

    target = GrafanaTarget(args.url, _token(args))
    for path in target.push(build_dashboards(_spec(args)), args.folder):
        print(f"pushed {path}")
    return 0


def _token(args: argparse.Namespace) -> str:
    if args.token_file is not None:
        try:
            return str(args.token_file.read_text(encoding="utf-8").strip())
        except OSError as error:
            raise InputError(str(args.token_file), f"cannot read the token: {error}") from error
    token = os.environ.get(args.token_env, "").strip()
    if not token:
        raise RankmonError(f"no Grafana token: set {args.token_env} or pass --token-file FILE")
    return token
