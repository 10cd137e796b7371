"""`rankmon run` with a crash point armed: `python -m monitor.testing.crash_run --config FILE`.

The recovery tests start this instead of `rankmon run` when they set `RANKMON_TEST_CRASH_AT`
(see `monitor.testing.crashpoints`). A bad value is one line and exit 2, as a bad config is.
"""

from __future__ import annotations

import argparse
import os
import sys

from monitor.commands.run import serve
from monitor.errors import RankmonError
from monitor.testing.crashpoints import CrashPoints


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crash_run", description=__doc__)
    parser.add_argument("--config", required=True, metavar="FILE")
    args = parser.parse_args(argv)
    try:
        points = CrashPoints.from_environ(os.environ)
    except ValueError as error:
        print(f"rankmon: {error}", file=sys.stderr)
        return 2
    try:
        return serve(args.config, points)
    except RankmonError as error:
        print(f"rankmon run: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
