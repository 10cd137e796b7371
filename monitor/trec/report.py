"""What `rankmon eval` prints: trec_eval's lines, or the same numbers as JSON.

trec format (trec_eval's `meas_print_single.c` / `meas_print_final.c`): one line per value,
`printf("%-22s\\t%s\\t%6.4f\\n", measure, qid, value)`, counts (`num_ret`, `num_q`, ...) as
integers. With `-q` every evaluated query's lines come first, queries in `strcmp` order and
measures in trec_eval's table order within a query; then the summary lines for the
pseudo-query `all`: `runid` (the run's tag), `num_q`, and each measure's mean over the
evaluated queries, or its total for the counts.

JSON format: `{"per_query": {qid: {measure: value}}, "all": {measure: value}}` with the same
measure names (`ndcg_cut_10`, `P_10`, ...) at full float precision (shortest round-trip form);
counts stay integers, relstring is a string, NaN is null, summary-only values (gm_map, num_q)
are in `all` only and `-n` leaves `all` out. The run id is trec-only.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, reduce
from typing import Literal

import orjson

__all__ = [
    "ALL",
    "NUM_Q",
    "RUN_ID",
    "Column",
    "EvaluationReport",
    "Value",
    "summarize",
    "trec_line",
]

Value = int | float | str

ALL = "all"  # trec_eval's pseudo query id of the summary lines
NUM_Q = "num_q"
RUN_ID = "runid"


@dataclass(frozen=True)
class Column:
    """One printed value: its name, whether each query prints it, and its `all` line.

    `summary`: "mean" over the evaluated queries, "total" (the counts), "geometric" (each
    query's value is a log: gm_map, gm_bpref), or "none" (relstring has no `all` line).
    """

    name: str
    summary: Literal["mean", "total", "geometric", "none"] = "mean"
    per_query: bool = True
    count: bool = False


@dataclass(frozen=True)
class EvaluationReport:
    """Per-query values and the `all` summary, both already in trec_eval's print order.

    `queries` are the evaluated queries in print order; `values[name][i]` is column `name`'s
    value for `queries[i]`. `summary` starts with `num_q` when it was asked for. `run_id` is
    printed as the first summary line when it is not `None`.
    """

    columns: tuple[Column, ...]
    queries: Sequence[str]
    values: Mapping[str, Sequence[Value]]
    summary: Mapping[str, Value]
    run_id: str | None = None

    def __post_init__(self) -> None:
        for column in self.columns:
            if len(self.values[column.name]) != len(self.queries):
                raise ValueError(
                    f"{column.name}: {len(self.values[column.name])} values for "
                    f"{len(self.queries)} queries"
                )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    @cached_property
    def per_query(self) -> dict[str, dict[str, Value]]:
        """qid -> name -> value, every column's (made when first asked)."""
        return self._rows([column.name for column in self.columns])

    def _rows(self, names: Sequence[str]) -> dict[str, dict[str, Value]]:
        if not names:
            return {qid: {} for qid in self.queries}
        # Every column has one value per query (checked on construction): zip unchecked, as
        # the strict check costs a third of this loop on a large run.
        rows = zip(*(self.values[name] for name in names), strict=False)
        return {
            qid: dict(zip(names, row, strict=False))
            for qid, row in zip(self.queries, rows, strict=False)
        }

    def trec_lines(self, *, per_query: bool, summary: bool = True) -> Iterator[str]:
        """trec_eval's output lines (without newlines): each query's when asked (`-q`), then
        the summary unless `summary` is False (`-n`)."""
        if per_query:
            shown = [column.name for column in self.columns if column.per_query]
            columns = [self.values[name] for name in shown]
            for row, qid in enumerate(self.queries):
                for name, column in zip(shown, columns, strict=True):
                    yield trec_line(name, qid, column[row])
        if not summary:
            return
        if self.run_id is not None:
            yield f"{RUN_ID:<22}\t{ALL}\t{self.run_id}"
        for name, value in self.summary.items():
            yield trec_line(name, ALL, value)

    def to_json(self, *, summary: bool = True) -> bytes:
        """The JSON document, indented, ending in a newline (NaN is null)."""
        shown = [column.name for column in self.columns if column.per_query]
        document: dict[str, object] = {"per_query": self._rows(shown)}
        if summary:
            document["all"] = self.summary
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def trec_line(name: str, qid: str, value: Value) -> str:
    """One trec_eval line: the name padded to 22, a tab, the query, a tab, the value.

    Integers print as integers, strings quoted (relstring), floats as C's `%6.4f` (NaN as
    glibc prints it: `-nan` when its sign bit is set, as 0.0 / 0.0 makes it).
    """
    if isinstance(value, str):
        shown = f"'{value}'"
    elif isinstance(value, int):
        shown = str(value)
    elif math.isnan(value):
        shown = f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    else:
        shown = f"{value:6.4f}"
    return f"{name:<22}\t{qid}\t{shown}"


def summarize(
    columns: Iterable[Column], values: Mapping[str, Sequence[Value]], num_q: int
) -> dict[str, Value]:
    """trec_eval's `all` values of the columns that have one, in order.

    Counts are summed; means are summed in query order and divided by `num_q`, as
    trec_eval's `te_calc_avg_meas_s` does (with `-c` `num_q` counts the queries missing from
    the run, whose values are 0); a geometric mean is exp of the mean of the per-query logs.
    With no query the means are 0.
    """
    summary: dict[str, Value] = {}
    for column in columns:
        if column.summary == "none":
            continue
        column_values = values[column.name]
        if column.summary == "total":
            summary[column.name] = int(sum(int(value) for value in column_values))
            continue
        # Added in order, not fsum: the same rounding as trec_eval's loop (int + float adds
        # as float(int) + float for the small ints a mean column may hold).
        total = reduce(operator.add, column_values, 0.0)
        mean = float(total) / num_q if num_q else 0.0
        summary[column.name] = math.exp(mean) if column.summary == "geometric" and num_q else mean
    return summary
