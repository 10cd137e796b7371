"""Keeping the evaluation set current: reload on SIGHUP or when its file changes.

A reload that fails (the file is half-written, a bad line) keeps the set in use and logs
why: a monitor must not stop scoring because someone saved a broken qrels file. A reload
that yields the same content (same version hash) changes nothing.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from monitor.clock import Clock
from monitor.declare import setting
from monitor.errors import RankmonError
from monitor.logs import fields
from monitor.scoring.evalset import FILE_SOURCE, EvaluationSet, load_evaluation_set
from monitor.sections import as_bool, as_path, as_positive_duration, as_str, as_str_list
from monitor.values import Duration, parse_duration

__all__ = ["EvaluationSetConfig", "EvaluationSetSource"]

_log = logging.getLogger(__name__)

FileSignature = tuple[int, int] | None
_TEN_SECONDS: Final = parse_duration("10s")


@dataclass(frozen=True, slots=True)
class EvaluationSetConfig:
    """The `evaluation_set` settings, declared once (`monitor.declare`): the qrels file (TREC
    or .jsonl), who graded it, which sources' grades score (the file's, the judging loop's,
    the events' inline ones: `inline`), and how its changes are picked up.

    The file's existence is checked when the evaluation set loads, not here.
    """

    path: Path = setting(
        read=as_path, path="path", doc="TREC qrels or JSON lines, relative to the config file"
    )
    watch: bool = setting(
        True, read=as_bool, key="reload.watch", doc="reload when the file changes (SIGHUP does)"
    )
    source: str = setting(
        FILE_SOURCE, read=as_str, doc="who graded the file (a line's source wins); qrels: people"
    )
    sources: tuple[str, ...] = setting(
        (), read=as_str_list, doc="score only the grades of these sources (default: all)"
    )
    poll_interval: Duration = setting(
        _TEN_SECONDS,
        read=as_positive_duration,
        key="reload.poll_interval",
        doc="how often the file is looked at",
    )
    topics: Path | None = setting(
        None,
        read=as_path,
        path="file",
        doc="the query texts (TSV, JSON lines, TREC topics) shown by the query ids "
        "(default: replay.topics)",
    )


def _signature(path: str) -> FileSignature:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)


class EvaluationSetSource:
    """The evaluation set in use, and when to read it again.

    The first load happens in the constructor and raises on a bad file (the service must not
    start without judgments); later loads never raise.
    """

    def __init__(self, config: EvaluationSetConfig, clock: Clock) -> None:
        self.config = config
        self._clock = clock
        self._path = str(config.path)
        self._signature = _signature(self._path)
        self.current = self.load()
        self._requested = threading.Event()
        self.attempts = 0  # reloads tried since the start
        self.failing = False  # the newest reload failed (the set in use stays)
        # On the monotonic clock: a wall clock stepped back must not stop the checks.
        self._next_check_s = clock.monotonic() + config.poll_interval.seconds

    def load(self) -> EvaluationSet:
        """The file read now, its grades' sources as configured."""
        config = self.config
        return load_evaluation_set(self._path, source=config.source, keep=config.sources)

    def request_reload(self) -> None:
        """Ask for a reload at the next check (safe to call from a signal handler)."""
        self._requested.set()

    def poll(self) -> EvaluationSet | None:
        """The new set if it changed since the last call, else None."""
        now = self._clock.monotonic()
        requested = self._requested.is_set()
        if not requested and (not self.config.watch or now < self._next_check_s):
            return None
        self._requested.clear()
        self._next_check_s = now + self.config.poll_interval.seconds
        signature = _signature(self._path)
        if not requested and signature == self._signature:
            return None
        self._signature = signature
        return self._reload()

    def _reload(self) -> EvaluationSet | None:
        self.attempts += 1
        try:
            loaded = self.load()
        except RankmonError as error:
            self.failing = True
            _log.error(
                "evaluation set reload failed; keeping the one in use",
                extra=fields(error=str(error), version=self.current.version),
            )
            return None
        self.failing = False
        if loaded.version == self.current.version:
            return None
        _log.info(
            "evaluation set reloaded",
            extra=fields(
                old_version=self.current.version, version=loaded.version, queries=len(loaded)
            ),
        )
        self.current = loaded
        return loaded
