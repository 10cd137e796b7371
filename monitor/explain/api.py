"""The explanation API, served beside /metrics (JSON; documented in docs/api.md, its schema
in docs/api.schema.json):

- `GET /api/v1/segments`: every segment with kept windows;
- `GET /api/v1/windows?segment=model=v1&limit=N`: its newest finalized windows, newest
  first, each measure's mean with its standard error and 95 % interval;
- `GET /api/v1/explain?segment=model=v1&measure=ndcg@10:linear&window=START_MS` with
  `&against=baseline` (the default), `&against=START_MS`, or `&segment_against=model=v2`
  (two segments of a comparison in the same window): the change of the measure query by
  query (`monitor.explain.change`) and, for the queries that lost most, their rankings in
  both windows (`monitor.explain.rankings`).

A bad parameter is 400 with a one-line reason; a window no longer kept is 404 saying how far
back the store reaches.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from monitor.errors import MeasureError
from monitor.explain.change import Change, explain_change
from monitor.explain.rankings import RankingChange, jaccard, ranking_change, rbo
from monitor.explain.store import ExplainStore, KeptWindow, VersionBridge
from monitor.explain.versions import VersionChange, version_changes
from monitor.export.http import Response
from monitor.scoring.catalog import MeasureKey, resolve_key
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.gain import LINEAR
from monitor.windows.samples import RankingSamples
from monitor.windows.summary import Segment, segment_label

__all__ = ["ApiError", "ExplainApi", "change_json", "parse_segment"]

_log = logging.getLogger(__name__)

DEFAULT_DOCUMENTS = 10  # queries whose rankings are shown
MAX_LIMIT = 1000


class ApiError(Exception):
    """A request the API cannot answer: its status and a one-line reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def parse_segment(text: str) -> Segment:
    """`model=v1,market=de` (or `all`) -> the segment."""
    if text in ("", "all"):
        return ()
    pairs = []
    for part in text.split(","):
        key, equals, value = part.partition("=")
        if not equals or not key:
            raise ApiError(
                "400 Bad Request", f"segment must read key=value[,key=value], got {text!r}"
            )
        pairs.append((key, value))
    return tuple(sorted(pairs))


@dataclass(frozen=True)
class Explanation:
    """What `/api/v1/explain` answers, before it becomes JSON."""

    segment: Segment
    measure: str
    window: KeptWindow
    against: dict[str, Any]
    change: Change
    rankings: list[tuple[str, RankingChange]]
    churn: Churn | None = None
    texts: Mapping[str, str] = field(default_factory=dict)  # query -> its text, where known


@dataclass(frozen=True)
class Churn:
    """How much the rankings of the queries both windows sampled changed, on average:
    visible even where the measure did not move (`monitor.explain.rankings`)."""

    k: int
    queries: int
    rbo: float  # mean over those queries
    jaccard: float
    changed: int  # queries whose top k is not the same ranking


class ExplainApi:
    """The three routes over a store, the sampled rankings and the evaluation set."""

    def __init__(
        self,
        store: ExplainStore,
        samples: RankingSamples | None,
        evaluation_set: Callable[[], EvaluationSet],
        *,
        default_measure: str,
        baseline_windows: Callable[[str], int] | None = None,
        query_texts: Mapping[str, str] | None = None,
        bridge: VersionBridge | None = None,
    ) -> None:
        """`query_texts`: each query's text (`evaluation_set.topics`), shown by its id;
        `bridge`: re-scores kept windows of the judging loop's earlier versions, so a
        baseline spans versions as the drop rules' does."""
        self.query_texts = query_texts or {}
        self.bridge = bridge
        self.store = store
        self.samples = samples
        self._evaluation_set = evaluation_set
        self.default_measure = default_measure
        self._baseline_windows = baseline_windows or (lambda measure: store.keep)

    # -- routes ----------------------------------------------------------------------------

    def routes(self) -> dict[str, Callable[[Mapping[str, list[str]], Mapping[str, str]], Response]]:
        return {
            "/api/v1/segments": self._route(self.segments),
            "/api/v1/windows": self._route(self.windows),
            "/api/v1/explain": self._route(lambda q: explanation_json(self.explain(q))),
        }

    def _route(
        self, answer: Callable[[Mapping[str, list[str]]], Any]
    ) -> Callable[[Mapping[str, list[str]], Mapping[str, str]], Response]:
        def route(query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Response:
            try:
                body = answer(query)
            except ApiError as error:
                _log.info("API request refused: %s: %s", error.status, error.reason[:200])
                return Response(error.status, "application/json", _dumps({"error": error.reason}))
            return Response("200 OK", "application/json", _dumps(body))

        return route

    # -- answers ---------------------------------------------------------------------------

    def segments(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        out = []
        for segment, windows in sorted(self.store.segments().items()):
            newest = windows[-1].summary if windows else None
            out.append(
                {
                    "segment": segment_label(segment),
                    "labels": dict(segment),
                    "windows": len(windows),
                    "newest_start_ms": None if newest is None else newest.start_ms,
                    "newest_end_ms": None if newest is None else newest.end_ms,
                }
            )
        return {"segments": out, "keep_windows": self.store.keep}

    def windows(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        segment = self._segment(query, "segment")
        limit = _int(query, "limit", self.store.keep, 1, MAX_LIMIT)
        kept = self.store.windows(segment)
        if not kept and segment not in self.store.segments():
            raise ApiError(
                "404 Not Found", f"no window of segment {segment_label(segment)} is kept"
            )
        changes = version_changes(segment, kept, self.store.measures, self.bridge)
        return {
            "segment": segment_label(segment),
            "windows": [
                window_json(w, changes.get(w.summary.start_ms)) for w in reversed(kept[-limit:])
            ],
        }

    def explain(self, query: Mapping[str, list[str]]) -> Explanation:
        segment = self._segment(query, "segment")
        measure = self._measure(query)
        start = self._window_start(query, segment)
        window = self._kept(segment, start)
        after = window.query_values(measure)
        documents = _int(query, "documents", DEFAULT_DOCUMENTS, 0, MAX_LIMIT)
        against_segment = _one(query, "segment_against")
        if against_segment is not None:
            other = self._known_segment(against_segment)
            before_window = self._kept(other, start)
            before = before_window.query_values(measure)
            against: dict[str, Any] = {
                "kind": "segment",
                "segment": segment_label(other),
                "windows": [start],
            }
            before_source: tuple[Segment, list[KeptWindow]] = (other, [before_window])
        else:
            text = _one(query, "against") or "baseline"
            if text == "baseline":
                span = self._baseline_windows(measure)
                before, earlier = self.store.baseline(segment, start, measure, span, self.bridge)
                if not earlier:
                    raise ApiError(
                        "404 Not Found",
                        f"no kept window of {segment_label(segment)} before {start} "
                        "to form a baseline",
                    )
                headlines = [w.summary.means.get(measure, math.nan) for w in earlier]
                finite = [v for v in headlines if math.isfinite(v)]
                against = {
                    "kind": "baseline",
                    "segment": segment_label(segment),
                    "windows": [w.summary.start_ms for w in earlier],
                    # the drop rule's baseline: the trailing median of the headline values
                    "value": _num(statistics.median(finite)) if finite else None,
                }
                before_source = (segment, earlier)
            else:
                other_start = _int(query, "against", None, 0, None)
                before_window = self._kept(segment, other_start)
                before = before_window.query_values(measure)
                against = {
                    "kind": "window",
                    "segment": segment_label(segment),
                    "windows": [other_start],
                }
                before_source = (segment, [before_window])
        change = explain_change(before, after)
        rankings = self._rankings(
            segment,
            window=window,
            before=before_source,
            change=change,
            measure=measure,
            documents=documents,
        )
        churn = self._churn(segment, window=window, before=before_source, change=change,
                            measure=measure)  # fmt: skip
        texts = {r.query: t for r in change.rows if (t := self.query_texts.get(r.query))}
        return Explanation(segment, measure, window, against, change, rankings, churn, texts)

    # -- parts -----------------------------------------------------------------------------

    def _segment(self, query: Mapping[str, list[str]], name: str) -> Segment:
        text = _one(query, name)
        if text is None:
            raise ApiError(
                "400 Bad Request", f"parameter {name!r} is required, e.g. {name}=model=v1"
            )
        return self._known_segment(text)

    def _known_segment(self, text: str) -> Segment:
        """The kept segment whose label is `text`, else `text` parsed: a value may hold the
        `,` and `=` that the label joins on (`model=a,b` is one value of `model`)."""
        for segment in self.store.segments():
            if segment_label(segment) == text:
                return segment
        return parse_segment(text)

    def _window_start(self, query: Mapping[str, list[str]], segment: Segment) -> int:
        """`window=START_MS`, or `at=MS`: the newest kept window that ended by then (what a
        gauge scraped at that time showed; the dashboards' data links pass it)."""
        if _one(query, "window") is not None or _one(query, "at") is None:
            return _int(query, "window", None, 0, None)
        at = _int(query, "at", None, 0, None)
        ended = [w for w in self.store.windows(segment) if w.summary.end_ms <= at]
        if not ended:
            raise ApiError(
                "404 Not Found", f"no kept window of {segment_label(segment)} ended by {at}"
            )
        return ended[-1].summary.start_ms

    def explainable(self, measure: str) -> bool:
        """Whether a measure is explained query by query (coverage, for one, is not)."""
        try:
            return resolve_key(measure, self.store.measures) is not None
        except MeasureError:
            return False

    def _measure(self, query: Mapping[str, list[str]]) -> str:
        text = _one(query, "measure") or self.default_measure
        try:
            measure = resolve_key(text, self.store.measures)
        except MeasureError as error:
            raise ApiError("400 Bad Request", str(error)) from None
        if measure is None:
            raise ApiError(
                "400 Bad Request",
                f"measure {text!r} is not one rankmon computes ({', '.join(self.store.measures)})",
            )
        return measure

    def _kept(self, segment: Segment, start: int) -> KeptWindow:
        kept = self.store.find(segment, start)
        if kept is not None:
            return kept
        oldest = self.store.oldest_start(segment)
        if oldest is None:
            raise ApiError(
                "404 Not Found", f"no window of segment {segment_label(segment)} is kept"
            )
        raise ApiError(
            "404 Not Found",
            f"window {start} of segment {segment_label(segment)} is not kept: rankmon keeps the "
            f"last {self.store.keep} windows per segment, the oldest kept starts at {oldest}",
        )

    def _churn(
        self,
        segment: Segment,
        *,
        window: KeptWindow,
        before: tuple[Segment, list[KeptWindow]],
        change: Change,
        measure: str,
    ) -> Churn | None:
        """The mean churn over the common queries with a sampled ranking on both sides."""
        if self.samples is None:
            return None
        k = MeasureKey.parse(measure).k or self.samples.depth
        overlaps, sets, changed = [], [], 0
        for row in change.rows:
            if row.status != "common":
                continue
            after, earlier = self._sampled(segment, window, before, row.query)
            if after is None or earlier is None:
                continue
            overlaps.append(rbo(earlier[:k], after[:k]))
            sets.append(jaccard(earlier[:k], after[:k]))
            changed += list(earlier[:k]) != list(after[:k])
        if not overlaps:
            return None
        return Churn(k, len(overlaps), statistics.fmean(overlaps), statistics.fmean(sets), changed)

    def _sampled(
        self,
        segment: Segment,
        window: KeptWindow,
        before: tuple[Segment, list[KeptWindow]],
        query: str,
    ) -> tuple[Sequence[str] | None, Sequence[str] | None]:
        """The query's sampled ranking in `window`, and in the newest `before` window that
        has one."""
        assert self.samples is not None
        summary = window.summary
        after = self.samples.ranking(segment, query, summary.start_ms, summary.end_ms)
        earlier = None
        for kept in reversed(before[1]):
            earlier = self.samples.ranking(
                before[0], query, kept.summary.start_ms, kept.summary.end_ms
            )
            if earlier is not None:
                break
        return after, earlier

    def _rankings(
        self,
        segment: Segment,
        *,
        window: KeptWindow,
        before: tuple[Segment, list[KeptWindow]],
        change: Change,
        measure: str,
        documents: int,
    ) -> list[tuple[str, RankingChange]]:
        if self.samples is None or documents == 0:
            return []
        key = MeasureKey.parse(measure)
        k = key.k or self.samples.depth
        gain = key.gain or LINEAR
        evaluation_set = self._evaluation_set()
        out = []
        losers = [row for row in change.rows if row.contribution < 0][:documents]
        for row in losers:
            after, earlier = self._sampled(segment, window, before, row.query)
            if after is None and earlier is None:
                continue
            grades = evaluation_set.grades(row.query) if row.query in evaluation_set else {}
            out.append((row.query, ranking_change(earlier or [], after or [], grades, gain, k)))
        return out


def window_json(kept: KeptWindow, change: VersionChange | None = None) -> dict[str, Any]:
    """A kept window as the API gives it; `change`: the evaluation set changed at it."""
    s = kept.summary
    measures = {}
    for key in kept.measures:
        mean = s.means.get(key, math.nan)
        stderr = kept.stderr(key)
        measures[key] = {
            "mean": _num(mean),
            "stderr": _num(stderr),
            "ci_lower": _num(mean - 1.96 * stderr),
            "ci_upper": _num(mean + 1.96 * stderr),
        }
    return {
        "window": s.window,
        "start_ms": s.start_ms,
        "end_ms": s.end_ms,
        "evaluation_set_version": s.evaluation_set_version,
        "events": s.events,
        "queries": s.queries,
        "failed_queries": s.failed_queries,
        "replays": list(s.replays),
        "stopped_replays": list(s.stopped_replays),
        "coverage": s.coverage,
        "measures": measures,
        "version_change": None if change is None else change.to_json(),
    }


def explanation_json(e: Explanation) -> dict[str, Any]:
    return {
        "segment": segment_label(e.segment),
        "measure": e.measure,
        "window": {"start_ms": e.window.summary.start_ms, "end_ms": e.window.summary.end_ms},
        "against": e.against,
        **change_json(e.change, e.rankings, e.texts),
        "churn": None
        if e.churn is None
        else {
            "k": e.churn.k,
            "queries": e.churn.queries,
            "rbo": e.churn.rbo,
            "jaccard": e.churn.jaccard,
            "changed": e.churn.changed,
        },
    }


def change_json(
    change: Change,
    rankings: list[tuple[str, RankingChange]],
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The change and the rankings as the API writes them (`rankmon explain` too); a query
    row carries its `text` where `texts` has it."""
    texts = texts or {}
    return {
        "before": {"mean": _num(change.before), "queries": change.before_queries},
        "after": {"mean": _num(change.after), "queries": change.after_queries},
        "change": _num(change.change),
        "common": {"change": _num(change.common_change), "queries": change.common_queries},
        "mix": {"change": _num(change.mix_change)},
        "sum_of_contributions": _num(math.fsum(r.contribution for r in change.rows)),
        "counts": change.counts(),
        "queries": [
            {
                "query": r.query,
                "status": r.status,
                "before": _num(r.before),
                "after": _num(r.after),
                "difference": _num(r.difference),
                "contribution": r.contribution,
                **({"text": texts[r.query]} if r.query in texts else {}),
            }
            for r in change.rows
        ],
        "documents": [
            {
                "query": query,
                "k": rc.k,
                "before": [_doc(d) for d in rc.before],
                "after": [_doc(d) for d in rc.after],
                "entered": list(rc.entered),
                "left": list(rc.left),
                "gain_change": list(rc.gain_change),
                "rbo": rc.rbo,
                "jaccard": rc.jaccard,
                "cause": rc.cause,
            }
            for query, rc in rankings
        ],
    }


def _doc(d: Any) -> dict[str, Any]:
    return {"rank": d.rank, "document": d.document, "grade": d.grade, "gain": d.gain}


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS) + b"\n"


def _one(query: Mapping[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise ApiError("400 Bad Request", f"parameter {name!r} is given {len(values)} times")
    return values[0]


_MAX_DIGITS = 19  # every epoch millisecond and count fits; int64 has 19 digits


def _int(
    query: Mapping[str, list[str]], name: str, default: int | None, low: int, high: int | None
) -> int:
    text = _one(query, name)
    if text is None:
        if default is None:
            raise ApiError("400 Bad Request", f"parameter {name!r} is required")
        return default
    if (
        not text.isascii()
        or not text.isdigit()
        or len(text) > _MAX_DIGITS  # past int64 anyway; int() refuses past 4300 digits
        or (high is not None and int(text) > high)
        or int(text) < low
    ):
        bound = f" up to {high}" if high is not None else ""
        what = (
            "a window start in epoch milliseconds"
            if name in ("window", "against")
            else f"a whole number >= {low}{bound}"
        )
        raise ApiError("400 Bad Request", f"parameter {name!r} must be {what}, got {text[:40]!r}")
    return int(text)
