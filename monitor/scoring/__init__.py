"""Scoring: the evaluation set and the measures, trec_eval's numbers for every ranking.

Enters: the graded judgments (TREC qrels or JSON Lines, reloaded when they change) and
rankings of document ids. Leaves: per ranking, one row of measure values in the catalog's
order (`MeasureKey`: `ndcg@10:linear`, `precision@5`, `mrr`, ...), from the vectorised
engine (`Scorer`: numpy columns, or the C kernel where a kind has a case).
"""

from __future__ import annotations

from monitor.scoring.catalog import MeasureKey, monitor_keys
from monitor.scoring.evalset import EvaluationSet, load_evaluation_set
from monitor.scoring.gain import Gain
from monitor.scoring.scorer import Scorer

__all__ = [
    "EvaluationSet",
    "Gain",
    "MeasureKey",
    "Scorer",
    "load_evaluation_set",
    "monitor_keys",
]
