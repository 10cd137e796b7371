"""Restore merges window shares published per partition into the windows they came from."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from monitor.alerting import AlertEngine
from monitor.config.alerts import parse_alerting_config
from monitor.testing.alert_simulation import StreamModel, simulate_windows
from monitor.windows.merge import merge_window_shares
from monitor.windows.summary import WindowSummary

NDCG = "ndcg@10:linear"
MODEL = StreamModel(queries=80, events_per_query=2.0, segment=(("model", "v42"),))


def split(summary: WindowSummary) -> list[WindowSummary]:
    """Two shares of a window, as two partitions would publish them (even / odd queries)."""
    shares = []
    for parity in (0, 1):
        queries = {q: m for q, m in summary.query_means.items() if int(q[1:]) % 2 == parity}
        values = [m[NDCG] for m in queries.values()]
        total = math.fsum(values)
        shares.append(
            WindowSummary(
                window=summary.window,
                start_ms=summary.start_ms,
                end_ms=summary.end_ms,
                segment=summary.segment,
                evaluation_set_version=summary.evaluation_set_version,
                events=summary.events // 2 + parity * (summary.events % 2),
                queries=len(queries),
                evaluation_set_queries=summary.evaluation_set_queries,
                means={NDCG: total / len(values)},
                sums={NDCG: total},
                event_means={NDCG: total / len(values)},
                query_means=queries,
            )
        )
    return shares


def test_shares_of_a_window_merge_back_into_it() -> None:
    (whole,) = simulate_windows(MODEL, 1, seed=2)
    # Record round trip, as the shares come back from the windows topic.
    shares = [WindowSummary.from_json(share.to_json()) for share in split(whole)]
    (merged,) = merge_window_shares(shares)
    assert merged.query_means == whole.query_means
    assert (merged.queries, merged.events) == (whole.queries, whole.events)
    assert merged.means[NDCG] == pytest.approx(whole.means[NDCG])
    assert merged.sums[NDCG] == pytest.approx(whole.sums[NDCG])


def test_a_replays_failed_queries_survive_the_record_and_add_up_over_shares() -> None:
    (whole,) = simulate_windows(MODEL, 1, seed=2)
    even, odd = split(whole)
    shares = [replace(even, failed_queries=3), replace(odd, failed_queries=2)]
    back = [WindowSummary.from_json(share.to_json()) for share in shares]
    assert [share.failed_queries for share in back] == [3, 2]
    (merged,) = merge_window_shares(back)
    assert merged.failed_queries == 5
    assert merged.failure_share == 5 / (whole.queries + 5)


def test_different_windows_and_versions_are_not_merged() -> None:
    first, second = simulate_windows(MODEL, 2, seed=2)
    other_version = replace(first, evaluation_set_version="v2")
    assert len(merge_window_shares([second, first, other_version])) == 3


def test_restoring_shares_detects_a_drop_like_restoring_whole_windows() -> None:
    drop = {
        "name": "drop",
        "measure": "ndcg@10",
        "drop": {"relative": 0.05, "baseline_windows": 6, "significance": 0.01, "min_queries": 20},
    }
    config = parse_alerting_config(
        {"rules": [drop], "log": False},
        cutoffs=[10],
        gains=["linear"],
        segment_keys=["model"],
        window="5m",
    )
    history = simulate_windows(MODEL, 12, seed=3, drop_at=10, drop=0.15)
    whole = AlertEngine(config, start_ms=0)
    whole.restore(history[:10])
    shared = AlertEngine(config, start_ms=0)
    shared.restore([share for summary in history[:10] for share in split(summary)])
    baselines = [engine.find("drop", MODEL.segment) for engine in (whole, shared)]
    histories = [alert.track.history for alert in baselines if alert is not None]
    assert len(histories) == 2 and all(history is not None for history in histories)
    whole_history, shared_history = histories
    assert whole_history is not None and shared_history is not None
    # Every query's baseline is back, not only the queries of the first share read.
    assert shared_history.query_means() == pytest.approx(whole_history.query_means())
    assert shared_history.median() == pytest.approx(whole_history.median())
    live = history[10:]
    expected = [t.window for t in whole.observe(live, live[-1].end_ms)]
    assert expected
    assert [t.window for t in shared.observe(live, live[-1].end_ms)] == expected


def test_a_share_published_without_its_query_means_merges_from_the_sums() -> None:
    (whole,) = simulate_windows(MODEL, 1, seed=2)
    full, large = split(whole)
    trimmed = replace(large, query_means={})

    (merged,) = merge_window_shares([full, trimmed])

    assert merged.query_means == {}
    assert merged.queries == whole.queries
    assert merged.means[NDCG] == pytest.approx(whole.sums[NDCG] / whole.queries)
