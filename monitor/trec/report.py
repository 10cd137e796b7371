"""What `rankmon eval` prints: trec_eval's lines, or the same numbers as JSON.

trec format (trec_eval's `meas_print_single.c` / `meas_print_final.c`): one line per value,
`printf("%-22s\\t%s\\t%6.4f\\n", measure, qid, value)`, counts (`num_ret`, `num_q`, ...) as
integers. With `-q` every evaluated query's lines come first, queries in `strcmp` order and
measures in trec_eval's table order within a query; then the summary lines for the
pseudo-query `all`: `runid` (the run's tag), `num_q`, and each measure's mean over the
evaluated queries, or its total for the counts.

JSON format: `{"per_query": {qid: {measure: value}}, "all": {measure: value}}` with the same
measure names (`ndcg_cut_10`, `P_10`, ...) at full float precision (shortest round-trip form);
counts stay integers. The run id is trec-only, so that every JSON value is a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import orjson

__all__ = [
    "ALL",
    "COUNTS",
    "NUM_Q",
    "RUN_ID",
    "EvaluationReport",
    "Value",
    "summarize",
    "trec_line",
]

Value = int | float

ALL = "all"  # trec_eval's pseudo query id of the summary lines
NUM_Q = "num_q"
RUN_ID = "runid"
# trec_eval's integer measures: their `all` line is the total over queries, not a mean.
COUNTS = frozenset({"num_ret", "num_rel", "num_rel_ret"})


@dataclass(frozen=True)
class EvaluationReport:
    """Per-query values and the `all` summary, both already in trec_eval's print order.

    `per_query[qid][name]` holds every name of `names`; `summary` starts with `num_q`.
    `run_id` is printed as the first summary line when it is not `None`.
    """

    names: tuple[str, ...]
    per_query: Mapping[str, Mapping[str, Value]]
    summary: Mapping[str, Value]
    run_id: str | None = None

    def trec_lines(self, *, per_query: bool) -> Iterator[str]:
        """trec_eval's output lines (without newlines); per-query lines only when asked."""
        if per_query:
            for qid, values in self.per_query.items():
                for name in self.names:
                    yield trec_line(name, qid, values[name])
        if self.run_id is not None:
            yield f"{RUN_ID:<22}\t{ALL}\t{self.run_id}"
        for name, value in self.summary.items():
            yield trec_line(name, ALL, value)

    def to_json(self) -> bytes:
        """The JSON document, indented, ending in a newline."""
        document = {"per_query": self.per_query, "all": self.summary}
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def trec_line(name: str, qid: str, value: Value) -> str:
    """One trec_eval line: the name padded to 22, a tab, the query, a tab, the value."""
    shown = str(value) if isinstance(value, int) else f"{value:6.4f}"
    return f"{name:<22}\t{qid}\t{shown}"


def summarize(
    names: Iterable[str], per_query: Mapping[str, Mapping[str, Value]], num_q: int
) -> dict[str, Value]:
    """trec_eval's `all` values: `num_q`, then for each name the total or the mean.

    The counts (`COUNTS`) are summed; float measures are summed in query order and
    divided by `num_q`, as trec_eval's `te_calc_avg_meas_s` does (with `-c` `num_q` counts
    the queries missing from the run, whose values are 0). With no query the means are 0.
    """
    summary: dict[str, Value] = {NUM_Q: num_q}
    for name in names:
        values = [query_values[name] for query_values in per_query.values()]
        if name in COUNTS:
            summary[name] = int(sum(values))
        else:
            total = 0.0
            for value in values:  # in order, not fsum: the same rounding as trec_eval's loop
                total += value
            summary[name] = total / num_q if num_q else 0.0
    return summary
