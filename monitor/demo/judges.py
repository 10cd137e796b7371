"""The demo's judges: a synthetic LLM judge with a known bias, and people auditing a share of
the queries.

Both answer the pairs the monitor asks for on the to-judge topic (docs/judging.md) with
judgments on the judgments topic. The LLM judge (source `llm:synthetic@v1`) grades every pair
one grade above what a careful person would (`SyntheticCorpus.true_grade`), at most 3: a known
upward bias. The demo runs it as `rankmon judge`'s worker against a stand-in chat endpoint
(`monitor.demo.chat`) and this stage as the people alone (`llm=False`); with `llm` on, this
stage grades as the LLM judge too, without the worker. People (source `human`) grade every
pair of the queries the judging page draws for the audit at `audit_share`
(`monitor.judging.desk.audit_draw`, the same draw as `judging.audit_rate`), exactly: whole
queries audited, the sample the corrected headline stands on (`monitor.judging.correction`)
and the judge is held to; a person at the demo's /judge page gets the same audit work.
"""

from __future__ import annotations

import logging
import threading

import orjson
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from monitor.demo.synthetic import SyntheticCorpus
from monitor.judging.desk import audit_draw
from monitor.logs import fields

__all__ = ["LLM_SOURCE", "DemoJudges"]

_log = logging.getLogger(__name__)

LLM_SOURCE = "llm:synthetic@v1"


class DemoJudges:
    """The LLM judge and the people, as one stage: `run(stop)` until `stop` is set."""

    def __init__(
        self,
        corpus: SyntheticCorpus,
        bootstrap_servers: str,
        *,
        tojudge_topic: str,
        judgments_topic: str,
        audit_share: float = 0.05,
        llm: bool = True,
    ) -> None:
        self._corpus = corpus
        self._bootstrap = bootstrap_servers
        self._tojudge = tojudge_topic
        self._judgments = judgments_topic
        queries = list(corpus.query_ids)
        self.audited = frozenset(q for q in queries if audit_draw(q) < audit_share)
        self.llm = llm
        self.graded = 0  # pairs the LLM judge graded
        self.checked = 0  # pairs people graded

    def grade_of_llm(self, query_id: str, doc_id: str) -> int:
        """The LLM judge's grade: one above the true one, at most 3."""
        return min(3, self._corpus.true_grade(query_id, doc_id) + 1)

    def run(self, stop: threading.Event) -> None:
        """Answer every pair asked for, until `stop`."""
        consumer = KafkaConsumer(
            bootstrap_servers=self._bootstrap, group_id=None, enable_auto_commit=False
        )
        producer = KafkaProducer(bootstrap_servers=self._bootstrap, linger_ms=50)
        try:
            partitions = [
                TopicPartition(self._tojudge, p)
                for p in sorted(consumer.partitions_for_topic(self._tojudge) or ())
            ]
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            while not stop.is_set():
                for records in consumer.poll(timeout_ms=200).values():
                    for record in records:
                        self._answer(producer, record.key, record.value)
                producer.flush()
        finally:
            consumer.close()
            producer.close()
            _log.info(
                "demo judges stopped",
                extra=fields(llm_graded=self.graded, people_graded=self.checked),
            )

    def _answer(self, producer: KafkaProducer, key: bytes | None, value: bytes | None) -> None:
        pair = orjson.loads(value or b"{}")
        query, doc = pair.get("query_id"), pair.get("doc_id")
        if not isinstance(query, str) or not isinstance(doc, str):
            return
        answers = [(LLM_SOURCE, self.grade_of_llm(query, doc))] if self.llm else []
        if query in self.audited:  # after the model's: the person's grade takes its place
            answers.append(("human", self._corpus.true_grade(query, doc)))
        for source, grade in answers:
            judgment = {"query_id": query, "doc_id": doc, "grade": grade, "source": source}
            producer.send(self._judgments, key=key, value=orjson.dumps(judgment))
        self.graded += self.llm
        self.checked += query in self.audited
