"""Window aggregates: the means a summary reports, worked out by hand from the formulas."""

from __future__ import annotations

import math

import numpy as np

from monitor.windows.aggregate import CellRegistry, WindowAggregate
from monitor.windows.spec import WindowSpec
from monitor.windows.summary import WindowSummary
from tests.unit.test_windows import KEYS, Ev, add, windows

SPEC = WindowSpec.tumbling(10, label="10ms")
REGISTRY = CellRegistry()  # cell ids are per run: shared by every aggregate of this module


def aggregate_of(cells: list[tuple[str, int, list[float]]]) -> WindowAggregate:
    """A window whose query `q` on partition `p` saw events with these nDCG values."""
    aggregate = WindowAggregate(0, "v1", measures=2, set_queries=8)
    events: list[int] = []
    values: list[list[float]] = []
    for query, partition, scores in cells:
        key = (query, (), partition)
        cell = REGISTRY.ids.get(key)
        if cell is None:
            cell = REGISTRY.register(key)
        events += [cell] * len(scores)
        values += [[score, 1.0] for score in scores]
    aggregate.add(np.array(events, dtype=np.intp), np.array(values))
    return aggregate


def only(summaries: list[tuple[WindowSummary, frozenset[int]]]) -> WindowSummary:
    [(summary, _partitions)] = summaries
    return summary


def test_headline_is_the_mean_of_query_means_so_frequent_queries_do_not_dominate() -> None:
    # q1: 0.2, 0.4, 0.6 -> 0.4; q2: 1.0 -> 1.0.  means = (0.4 + 1.0) / 2 = 0.7,
    # sums = 1.4, event mean = (0.2 + 0.4 + 0.6 + 1.0) / 4 = 0.55.
    summary = only(
        aggregate_of([("q1", 0, [0.2, 0.4, 0.6]), ("q2", 0, [1.0])]).summaries(SPEC, KEYS, REGISTRY)
    )
    assert math.isclose(summary.query_means["q1"]["ndcg@10:linear"], 0.4)
    assert math.isclose(summary.means["ndcg@10:linear"], 0.7)
    assert math.isclose(summary.sums["ndcg@10:linear"], 1.4)
    assert math.isclose(summary.event_means["ndcg@10:linear"], 0.55)
    assert (summary.events, summary.queries, summary.evaluation_set_queries) == (4, 2, 8)
    assert summary.coverage == 0.25
    assert (summary.start_ms, summary.end_ms, summary.window) == (0, 10, "10ms")


def test_query_excluded_by_nan_is_left_out_of_that_measure_only() -> None:
    # q2 has IDCG = 0 and the scorer marks its nDCG NaN: the headline is q1's alone, while
    # the second measure (always 1.0) still averages both queries.
    summary = only(
        aggregate_of([("q1", 0, [0.5, 0.7]), ("q2", 0, [math.nan, math.nan])]).summaries(
            SPEC, KEYS, REGISTRY
        )
    )
    assert math.isclose(summary.means["ndcg@10:linear"], 0.6)
    assert math.isclose(summary.sums["ndcg@10:linear"], 0.6)
    assert math.isclose(summary.event_means["ndcg@10:linear"], 0.6)
    assert math.isnan(summary.query_means["q2"]["ndcg@10:linear"])
    assert summary.means["precision@5"] == 1.0
    assert summary.queries == 2


def test_measure_undefined_for_every_query_is_nan_without_a_warning() -> None:
    summary = only(aggregate_of([("q1", 0, [math.nan])]).summaries(SPEC, KEYS, REGISTRY))
    assert math.isnan(summary.means["ndcg@10:linear"])
    assert math.isnan(summary.event_means["ndcg@10:linear"])
    assert summary.sums["ndcg@10:linear"] == 0.0


def test_query_seen_on_two_partitions_is_one_query_of_the_window() -> None:
    # Records not keyed by query id: q1's events came on partitions 0 and 1.
    [(summary, partitions)] = aggregate_of([("q1", 0, [0.2]), ("q1", 1, [0.4, 0.6])]).summaries(
        SPEC, KEYS, REGISTRY
    )
    assert partitions == {0, 1}
    assert summary.queries == 1
    assert math.isclose(summary.means["ndcg@10:linear"], 0.4)


def test_dropping_a_partition_keeps_the_other_partitions_sums_intact() -> None:
    aggregate = aggregate_of([("q1", 0, [0.2]), ("q2", 1, [0.4])])
    aggregate.drop_cells(REGISTRY.of_partitions({1}))
    assert only(aggregate.summaries(SPEC, KEYS, REGISTRY)).query_means == {
        "q1": {"ndcg@10:linear": 0.2, "precision@5": 1.0}
    }


def test_sums_do_not_depend_on_how_the_stream_was_cut_into_batches() -> None:
    # 0.1 + 0.2 + 0.7 in float64 depends on grouping; the aggregate adds in stream order.
    events = [Ev(t, f"e{t}", score=(0.1, 0.2, 0.7, 0.3)[t % 4], offset=t) for t in range(9)]
    closing = Ev(20, "z", offset=9)
    whole, _ = windows(size=10)
    add(whole, *events, closing)
    piecewise, _ = windows(size=10)
    for cut in ([0, 1], [2, 3, 4], [5], [6, 7, 8]):
        add(piecewise, *(events[i] for i in cut))
    add(piecewise, closing)
    assert whole.finalize() == piecewise.finalize()


def test_window_with_more_queries_than_initial_rows_grows_and_keeps_every_sum() -> None:
    cells = [(f"q{n}", 0, [n / 1000]) for n in range(300)]
    summary = only(aggregate_of(cells).summaries(SPEC, KEYS, REGISTRY))
    assert summary.queries == 300
    assert summary.query_means["q299"]["ndcg@10:linear"] == 0.299
    assert math.isclose(summary.sums["ndcg@10:linear"], sum(n / 1000 for n in range(300)))
