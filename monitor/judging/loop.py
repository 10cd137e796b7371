"""`JudgingLoop`: the monitor's judging loop, one stage the service calls at its steps.

- on assignment, before the windows topic is read back, `catch_up`: both topics read to their
  ends, so the evaluation set scores with every judgment already sent (the same version a
  restarted or new instance had) and no pair is asked for twice;
- at each tick, `follow` (what came since on both topics), `note_window` for each finalized
  window (`monitor.judging.pairs`) and `publish` (the pairs due within the budget);
- `current()`: the evaluation set to score with, the file's and the accepted judgments
  (`monitor.judging.judgments`); the service makes a new one take effect from a window
  boundary, as a reload of the file does.

Refused judgments go to the dead-letter topic with outcome `judgment` (refused to-judge
records with outcome `tojudge`) when `dead_letter` is set: on the instance that decides for
the consumer group, so a bad judgment is dead-lettered once per read of the topic, not once
per instance (each restart of that instance reads the topic again: at least once).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol

import orjson

from monitor.ingest.handoff import RejectSink
from monitor.judging.correction import JudgeViews, correct_window
from monitor.judging.desk import JudgingDesk
from monitor.judging.documents import DocumentShelf, document_url
from monitor.judging.judgments import (
    Judgment,
    JudgmentBook,
    Refusal,
    decode_judgment,
    is_person,
)
from monitor.judging.pairs import PairQueue, pair_key
from monitor.judging.set_scores import SetScores
from monitor.judging.settings import JudgingConfig
from monitor.judging.topics import RecordFeed
from monitor.kafka.consumer import SourceRecord
from monitor.kafka.producer import RecordSink
from monitor.limits import RecordLimits
from monitor.logs import fields
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.stats.judges import JudgeReading, judge_reading
from monitor.windows.summary import WindowSummary

__all__ = ["JUDGMENT_OUTCOME", "TOJUDGE_OUTCOME", "JudgingCounter", "JudgingLoop"]

_log = logging.getLogger(__name__)

JUDGMENT_OUTCOME = "judgment"  # the dead-letter outcome of a refused judgment
TOJUDGE_OUTCOME = "tojudge"  # the dead-letter outcome of a refused to-judge record


class JudgingCounter(Protocol):
    """Where the loop's counts go (the exporter)."""

    def count_judgment(self, outcome: str, reason: str = "") -> None: ...

    def count_pairs(self, outcome: str, amount: int) -> None: ...

    def set_pairs_pending(self, pending: int) -> None: ...

    def count_refused(self, topic: str, reason: str) -> None: ...


class JudgingLoop:
    """The judging loop of one instance (module docstring)."""

    def __init__(
        self,
        config: JudgingConfig,
        base: EvaluationSet,
        *,
        gain: str,
        producer: RecordSink,
        dead_letters: RejectSink,
        counter: JudgingCounter,
        asked: RecordFeed,
        judgments: RecordFeed,
        limits: RecordLimits,
        now_ms: Callable[[], int],
        new_scorer: Callable[[EvaluationSet], Scorer],
        keep: Collection[str] = (),
        texts: Mapping[str, str] | None = None,
        shelf: DocumentShelf | None = None,
        desk: JudgingDesk | None = None,
    ) -> None:
        """`keep`: the sources whose grades score (`evaluation_set.sources`; none: all);
        `limits` and `now_ms`: what the records of both topics are held to; `texts` (each
        query's text) and `shelf` (what events said of their documents): what the to-judge
        records carry for their judges; `desk`: the judging page's work, if it is served."""
        self.config = config
        self.book = JudgmentBook.for_config(config, base, keep)
        self.queue = PairQueue(config.cutoff, gain, config.budget_per_hour, config.max_pending)
        self._producer = producer
        self._dead_letters = dead_letters
        self._counter = counter
        self._asked = asked
        self._judgments = judgments
        self._limits = limits
        self._now_ms = now_ms
        self.caught_up = False
        self._dropped = 0  # the queue's drops counted so far
        self._audited = 0  # audit pairs read when the judges were last read
        self._views: tuple[str, JudgeViews | None] | None = None  # of the merged version
        self._view_scores = SetScores(new_scorer)
        self._texts = texts or {}
        self.shelf = shelf
        self.desk = desk

    def current(self) -> EvaluationSet:
        """The evaluation set to score with: the file's judgments and the accepted ones."""
        return self.book.merged()

    def rebase(self, base: EvaluationSet) -> None:
        """The evaluation set's file was reloaded."""
        self.book.rebase(base)

    def catch_up(self, *, dead_letter: bool) -> bool:
        """Read both topics to their ends (`KafkaUnavailableError` if they cannot be read:
        the caller retries). True once done."""
        self._asked.catch_up(lambda record: self._asked_record(record, dead_letter))
        self._judgments.catch_up(lambda record: self._judgment_record(record, dead_letter))
        self.caught_up = True
        if self.desk is not None:
            self.desk.refresh(self.book)
        _log.info(
            "judging topics read",
            extra=fields(
                asked=len(self.queue.asked),
                judgments=len(self.book.in_effect),
                version=self.current().version,
            ),
        )
        return True

    def follow(self, *, dead_letter: bool) -> None:
        """Take what both topics got since the last call."""
        for record in self._asked.poll():
            self._asked_record(record, dead_letter)
        for record in self._judgments.poll():
            self._judgment_record(record, dead_letter)
        if self.desk is not None:
            self.desk.refresh(self.book)

    def note_window(
        self,
        summary: WindowSummary,
        ranking_of: Callable[[str], Sequence[str] | None],
        evaluation_set: EvaluationSet,
    ) -> None:
        """Take the unjudged pairs of a finalized window (scored with `evaluation_set`)."""
        merged = self.book.merged()

        def grades_of(query: str) -> Mapping[str, int] | None:
            if query not in evaluation_set:
                return None
            grades = evaluation_set.grade_dict(query)
            if merged is not evaluation_set and query in merged:
                # judged since the window was scored: asked for no more
                return {**grades, **merged.grade_dict(query)}
            return grades

        self.queue.note_window(summary, ranking_of, grades_of)

    def publish(self, now_ms: int) -> int:
        """Send the pairs due now to the to-judge topic; return how many."""
        due = self.queue.due(now_ms)
        for pair in due:
            value = pair.to_json(self.readable(pair.query_id, pair.doc_id))
            self._producer.send(
                self.config.tojudge_topic, pair_key(pair.query_id, pair.doc_id), value, []
            )
        if due:
            self._counter.count_pairs("asked", len(due))
        dropped, self._dropped = self.queue.dropped - self._dropped, self.queue.dropped
        if dropped:
            self._counter.count_pairs("dropped", dropped)
        self._counter.set_pairs_pending(len(self.queue.pending))
        return len(due)

    def readable(self, query_id: str, doc_id: str) -> dict[str, str]:
        """What a judge reads of a pair, where known: the query's text, the document's
        title, snippet and url as the events said, and its link (`judging.document_url`)."""
        readable: dict[str, str] = {}
        text = self._texts.get(query_id)
        if text:
            readable["query_text"] = text
        if self.shelf is not None:
            readable.update(self.shelf.get(query_id, doc_id))
        if self.config.document_url:
            readable["document_url"] = document_url(self.config.document_url, doc_id)
        return readable

    def readings(self) -> list[JudgeReading] | None:
        """Each model judge against the people, over its newest `judging.audit_pairs` audit
        pairs; None when no audit pair came since the last call."""
        pairs = self.book.pairs
        if len(pairs) == self._audited:
            return None
        self._audited = len(pairs)
        by_source: dict[str, tuple[list[int], list[int]]] = {}
        for source, person, model in pairs:
            human_grades, model_grades = by_source.setdefault(source, ([], []))
            human_grades.append(person)
            model_grades.append(model)
        grades = sorted(self.book.grades.union(*((p, m) for _, p, m in pairs)))
        return [
            judge_reading(source, human, model, grades, self.config.audit_pairs)
            for source, (human, model) in sorted(by_source.items())
        ]

    def correct(
        self,
        summary: WindowSummary,
        ranking_of: Callable[[str], Sequence[str] | None],
    ) -> dict[str, float] | None:
        """The window's headline nDCG@k corrected by the people's audit of the model judges
        (`monitor.judging.correction`): `estimate`, `lower`, `upper` (NaN: too few audited
        queries) and `audited`; None while no model graded a pair."""
        views = self._judge_views()
        if views is None:
            return None
        key = self.queue.lower_key

        def score(
            evaluation_set: EvaluationSet,
            queries: Sequence[str],
            rankings: Sequence[Sequence[str]],
        ) -> list[float]:
            return self._view_scores(evaluation_set, key, queries, rankings)

        correction = correct_window(
            summary,
            ranking_of,
            views,
            score,
            self.config.cutoff,
            min_audited=self.config.min_audited_queries,
        )
        interval = correction.interval
        nan = math.nan
        return {
            "estimate": nan if interval is None else interval.estimate,
            "lower": nan if interval is None else interval.lower,
            "upper": nan if interval is None else interval.upper,
            "audited": float(correction.audited),
        }

    def _judge_views(self) -> JudgeViews | None:
        """The merged set as the model and the people see it, made once per version; None
        while no model graded a pair."""
        book = self.book
        version = book.merged().version
        if self._views is None or self._views[0] != version:
            models = bool(book.audit) or not all(
                is_person(j.source) for j in book.in_effect.values()
            )
            self._views = (version, JudgeViews.of(book) if models else None)
            self._view_scores.forget_all()
        return self._views[1]

    def close(self) -> None:
        self._asked.close()
        self._judgments.close()

    def _asked_record(self, record: SourceRecord, dead_letter: bool) -> None:
        """A pair some instance asked for. One that names no query of the set, an id past
        `events.max_id_bytes` or a time past `events.max_future` is refused (counted, and
        dead-lettered with outcome `tojudge` where `dead_letter`): it would hold memory, or
        spend the hourly budget until the time it claims."""
        try:
            key = orjson.loads(record.key or b"")
        except orjson.JSONDecodeError:
            key = None
        refusal: str | None = None
        if not (isinstance(key, list) and len(key) == 2 and all(isinstance(i, str) for i in key)):
            refusal = "invalid_key"
        elif self._limits.too_long(key[0]) or self._limits.too_long(key[1]):
            refusal = "string_too_long"
        elif key[0] not in self.book.base:
            refusal = "unknown_query"
        elif self._limits.time_refusal(record.timestamp_ms, 0, self._now_ms()) is not None:
            refusal = "too_far_in_future"
        if refusal is None:
            self.queue.was_asked((key[0], key[1]), record.timestamp_ms)
            if self.desk is not None:
                self.desk.asked((key[0], key[1]), _object(record.value))
            return
        self._counter.count_refused("tojudge", refusal)
        if dead_letter:
            detail = "a pair the to-judge topic holds, refused for an event's limits"
            self._dead_letters.reject(record, TOJUDGE_OUTCOME, refusal, detail)

    def _judgment_record(self, record: SourceRecord, dead_letter: bool) -> None:
        decoded = decode_judgment(record, self._limits, self._now_ms())
        outcome = decoded if isinstance(decoded, Refusal) else self.book.add(decoded)
        if isinstance(outcome, Refusal):
            self._counter.count_judgment("refused", outcome.reason)
            if dead_letter:
                self._dead_letters.reject(record, JUDGMENT_OUTCOME, outcome.reason, outcome.detail)
            return
        assert isinstance(decoded, Judgment)
        self._counter.count_judgment(outcome)
        self.queue.judged((decoded.query_id, decoded.doc_id))
        if self.desk is not None:
            self.desk.graded((decoded.query_id, decoded.doc_id), decoded.source)


def _object(value: bytes | None) -> dict[str, object]:
    """A record value's JSON object (empty: none)."""
    try:
        parsed = orjson.loads(value or b"")
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
