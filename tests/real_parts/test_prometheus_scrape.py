"""A real Prometheus scrapes the exporter; the Alertmanager and promtool fixtures work."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from monitor.export.exporter import Exporter
from monitor.export.http import MetricsServer
from tests.real_parts.test_exporter import summary
from tests.support.realparts import AlertmanagerServer, PrometheusServer, Promtool, WebhookReceiver


@pytest.fixture
def exporter_server() -> Iterator[tuple[Exporter, MetricsServer]]:
    registry = CollectorRegistry()
    exporter = Exporter(registry, segment_keys=["model"])
    with MetricsServer(registry, exporter.readiness.missing, host="127.0.0.1", port=0) as server:
        yield exporter, server


def test_prometheus_scrapes_the_ndcg_series_of_each_segment(
    exporter_server: tuple[Exporter, MetricsServer],
    start_prometheus: Callable[..., PrometheusServer],
) -> None:
    exporter, server = exporter_server
    exporter.record_window(summary(model="a", ndcg10=0.625))
    exporter.record_window(summary(model="b", ndcg10=0.5))
    prometheus = start_prometheus([f"127.0.0.1:{server.port}"])

    result = prometheus.wait_for('rankmon_ndcg{k="10",gain="linear"}')
    by_model = {series["metric"]["model"]: float(series["value"][1]) for series in result}

    assert by_model == {"a": 0.625, "b": 0.5}
    assert {series["metric"]["window"] for series in result} == {"5m"}


def test_the_documented_promql_merges_two_instances_into_the_global_mean(
    start_prometheus: Callable[..., PrometheusServer],
) -> None:
    # Two instances, each with its own queries: 4 queries at 0.625 and 1 query at 0.125.
    # The global mean over the 5 queries is (2.5 + 0.125) / 5 = 0.525.
    servers = []
    for ndcg10, queries in ((0.625, 4), (0.125, 1)):
        registry = CollectorRegistry()
        exporter = Exporter(registry, segment_keys=["model"], process_metrics=False)
        exporter.record_window(summary(ndcg10=ndcg10, queries=queries))
        servers.append(
            MetricsServer(registry, exporter.readiness.missing, host="127.0.0.1", port=0)
        )
    try:
        for server in servers:
            server.start()
        prometheus = start_prometheus([f"127.0.0.1:{server.port}" for server in servers])
        merged = (
            'sum without(instance) (rankmon_ndcg_sum_of_query_means{k="10",gain="linear"})'
            " / ignoring(k, gain) group_left"
            " sum without(instance) (rankmon_window_queries)"
        )
        prometheus.wait_for("count(up == 1) == 2")
        result = prometheus.wait_for(merged)
    finally:
        for server in servers:
            server.stop()

    assert [float(series["value"][1]) for series in result] == [pytest.approx(0.525)]


def test_alertmanager_fixture_delivers_a_posted_alert_to_the_webhook(
    start_alertmanager: Callable[..., AlertmanagerServer], webhook_receiver: WebhookReceiver
) -> None:
    alertmanager = start_alertmanager(webhook_receiver.url)
    alertmanager.post_alerts([{"labels": {"alertname": "ndcg10-floor", "severity": "critical"}}])

    def delivered(bodies: list[Any]) -> bool:
        return any(
            alert["labels"]["alertname"] == "ndcg10-floor"
            for body in bodies
            for alert in body["alerts"]
        )

    assert webhook_receiver.wait_for(delivered)
    assert alertmanager.alerts()[0]["labels"]["severity"] == "critical"


def test_promtool_fixture_reports_a_broken_rule_file(promtool: Promtool, tmp_path: Path) -> None:
    good = tmp_path / "good.yml"
    good.write_text("groups: [{name: g, rules: [{record: 'a:b', expr: 'up'}]}]\n")
    bad = tmp_path / "bad.yml"
    bad.write_text("groups: [{name: g, rules: [{record: 'a:b', expr: 'sum(('}]}]\n")

    assert promtool.check_rules(good).ok
    assert not promtool.check_rules(bad).ok
