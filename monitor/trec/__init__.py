"""`rankmon eval`: the scoring stage offline on TREC files, printed as trec_eval prints.

Enters: a qrels file and a run file. Leaves: trec_eval's lines (or JSON) per query and for
all; the measures the stream computes too come from its engine, the others from `families`.
"""

from __future__ import annotations

from monitor.trec.evaluate import evaluate_run
from monitor.trec.runfile import read_run
from monitor.trec.selection import select_measures

__all__ = ["evaluate_run", "read_run", "select_measures"]
