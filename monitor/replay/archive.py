"""`replay.archive`: each replay kept as a TREC run file, the newest `keep` of them.

    replay:
      archive: {directory: /var/lib/rankmon/replays, keep: 100}

After every replay (scheduled or `--once`) its run file is written to
`<directory>/<replay_id>.run` (`monitor.replay.runner.write_run`: the documents in the
ranker's order, with the ranker's own scores where it returned strictly decreasing ones), and
the oldest files (by when they were written) past `keep` are removed. `rankmon eval QRELS
FILE` scores one as the monitor scored its window; `rankmon explain QRELS OLDER NEWER` says
what changed between two.

`rankmon replay export --replay ID` rebuilds a replay's run file from the events topic (ids
only: the events carry no scores) for a replay the archive did not keep.
"""

from __future__ import annotations

import logging
from pathlib import Path

from monitor.logs import fields
from monitor.replay.runner import ReplayReport, write_run

__all__ = ["RunArchive"]

_log = logging.getLogger("monitor.replay")

SUFFIX = ".run"


class RunArchive:
    """The run files of the replays, in one directory (module docstring)."""

    def __init__(self, directory: Path, keep: int) -> None:
        self.directory = directory
        self.keep = keep

    def add(self, report: ReplayReport) -> Path | None:
        """Write the replay's run file and drop the oldest past `keep`; None (and an error
        line naming the file) if it cannot be written: the replay itself was published."""
        path = self.directory / f"{report.replay_id}{SUFFIX}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_run(report, path)
        except (OSError, ValueError) as error:
            _log.error(
                "cannot keep the replay's run file",
                extra=fields(replay=report.replay_id, path=str(path), error=str(error)),
            )
            return None
        self._prune()
        return path

    def runs(self) -> list[Path]:
        """The kept run files, oldest written first (two replays of one second have ids of
        the same time)."""
        found = []
        for path in self.directory.glob(f"r*{SUFFIX}"):
            try:
                found.append((path.stat().st_mtime_ns, path.name, path))
            except OSError:
                continue  # removed meanwhile
        return [path for _, _, path in sorted(found)]

    def _prune(self) -> None:
        for old in self.runs()[: -self.keep]:
            old.unlink(missing_ok=True)
