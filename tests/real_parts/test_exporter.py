"""The exported series and the HTTP endpoints that serve them."""

from __future__ import annotations

import datetime as dt
import math
import socket
import ssl
import statistics
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client import CollectorRegistry

from monitor.export.collectors import JudgingSeries
from monitor.export.exporter import Exporter
from monitor.export.http import MetricsServer
from monitor.export.series import PROCESS_SERIES, SAMPLED_ONLY, SERIES
from monitor.windows.summary import WindowSummary
from tests.support.realparts import Promtool


def summary(
    version: str = "v1", model: str = "v42", ndcg10: float = 0.625, queries: int = 4
) -> WindowSummary:
    means = {
        "ndcg@10:linear": ndcg10,
        "ndcg@10:exp": 0.5,
        "precision@10": 0.3,
        "recall@10": 0.75,
        "judged@10": 0.9,
        "mrr": 0.5,
        "map": 0.4,
        "dcg@10:linear": 3.5,  # computed, but not exported
        "ndcg:linear": 0.7,  # no cutoff: not exported
    }
    return WindowSummary(
        window="5m",
        start_ms=1_700_000_000_000,
        end_ms=1_700_000_300_000,
        segment=(("model", model),),
        evaluation_set_version=version,
        events=10,
        queries=queries,
        evaluation_set_queries=8,
        means=means,
        sums={key: mean * queries for key, mean in means.items()},
        event_means=means,
    )


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def exporter(registry: CollectorRegistry) -> Exporter:
    return Exporter(registry, segment_keys=["model"])


def window_labels(version: str = "v1", model: str = "v42") -> dict[str, str]:
    return {"window": "5m", "version": version, "model": model}


def test_quality_gauges_hold_the_window_means_with_their_labels(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.record_window(summary())
    labels = window_labels()

    assert registry.get_sample_value("rankmon_ndcg", {"k": "10", "gain": "linear", **labels}) == (
        0.625
    )
    assert registry.get_sample_value("rankmon_ndcg", {"k": "10", "gain": "exp", **labels}) == 0.5
    assert registry.get_sample_value("rankmon_precision", {"k": "10", **labels}) == 0.3
    assert registry.get_sample_value("rankmon_recall", {"k": "10", **labels}) == 0.75
    assert registry.get_sample_value("rankmon_judged", {"k": "10", **labels}) == 0.9
    assert registry.get_sample_value("rankmon_mrr", labels) == 0.5
    assert registry.get_sample_value("rankmon_map", labels) == 0.4


def test_mergeable_companions_carry_sums_counts_coverage_and_window_end(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.record_window(summary(queries=4))
    labels = window_labels()
    ndcg_labels = {"k": "10", "gain": "linear", **labels}

    assert registry.get_sample_value("rankmon_ndcg_sum_of_query_means", ndcg_labels) == 2.5
    assert registry.get_sample_value("rankmon_mrr_sum_of_query_means", labels) == 2.0
    assert registry.get_sample_value("rankmon_window_queries", labels) == 4
    assert registry.get_sample_value("rankmon_window_events", labels) == 10
    assert registry.get_sample_value("rankmon_coverage_ratio", labels) == 0.5
    assert registry.get_sample_value("rankmon_window_end_timestamp_seconds", labels) == (
        1_700_000_300.0
    )


def test_measures_without_a_gauge_are_not_exported(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.record_window(summary())
    names = {metric.name for metric in registry.collect()}

    assert not any(name.startswith("rankmon_dcg") for name in names)
    assert registry.get_sample_value("rankmon_ndcg", {"k": "", "gain": "linear"}) is None


def test_a_new_evaluation_set_version_replaces_the_segments_old_series(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.record_window(summary(version="v1", ndcg10=0.6))
    exporter.record_window(summary(version="v2", ndcg10=0.7))
    old = {"k": "10", "gain": "linear", **window_labels("v1")}
    new = {"k": "10", "gain": "linear", **window_labels("v2")}

    assert registry.get_sample_value("rankmon_ndcg", old) is None
    assert registry.get_sample_value("rankmon_window_queries", window_labels("v1")) is None
    assert registry.get_sample_value("rankmon_ndcg", new) == 0.7


def test_other_segments_keep_their_series_when_one_segment_changes_version(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.record_window(summary(version="v1", model="a", ndcg10=0.6))
    exporter.record_window(summary(version="v2", model="b", ndcg10=0.7))
    segment_a = {"k": "10", "gain": "linear", **window_labels("v1", "a")}

    assert registry.get_sample_value("rankmon_ndcg", segment_a) == 0.6


def test_a_window_without_a_defined_mean_exports_nan(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.record_window(summary(ndcg10=math.nan))
    value = registry.get_sample_value(
        "rankmon_ndcg", {"k": "10", "gain": "linear", **window_labels()}
    )

    assert value is not None and math.isnan(value)


def test_outcomes_are_counted_by_outcome_and_reason(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.count_outcome("accepted", amount=3)
    exporter.count_outcome("invalid", "invalid_json")
    exporter.count_outcome("invalid", "invalid_json")

    assert (
        registry.get_sample_value("rankmon_events_total", {"outcome": "accepted", "reason": ""})
        == 3
    )
    assert (
        registry.get_sample_value(
            "rankmon_events_total", {"outcome": "invalid", "reason": "invalid_json"}
        )
        == 2
    )


def test_revoked_partition_loses_its_watermark_and_lag(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.stream.set_watermark(0, 1_700_000_000_500)
    exporter.stream.set_consumer_lag(0, 12)
    exporter.stream.set_watermark(1, 1_700_000_001_000)
    exporter.stream.forget_partition(0)

    assert (
        registry.get_sample_value("rankmon_watermark_timestamp_seconds", {"partition": "0"}) is None
    )
    assert registry.get_sample_value("rankmon_consumer_lag_records", {"partition": "0"}) is None
    assert registry.get_sample_value("rankmon_watermark_timestamp_seconds", {"partition": "1"}) == (
        1_700_000_001.0
    )


def test_ready_only_when_evaluation_set_loaded_group_joined_and_broker_up(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    exporter.set_evaluation_set("abc123", queries=8)
    exporter.set_broker_up(True)
    before_join = registry.get_sample_value("rankmon_ready")
    exporter.readiness.group_joined = True

    assert before_join == 0
    assert exporter.readiness.missing() == []
    assert registry.get_sample_value("rankmon_ready") == 1
    assert registry.get_sample_value("rankmon_evaluation_set_info", {"version": "abc123"}) == 1


def test_segment_key_that_is_not_a_label_name_is_rejected(registry: CollectorRegistry) -> None:
    with pytest.raises(ValueError, match="market-id"):
        Exporter(registry, segment_keys=["market-id"])


# --- the HTTP endpoints -------------------------------------------------------------------


@pytest.fixture
def server(exporter: Exporter, registry: CollectorRegistry) -> Iterator[MetricsServer]:
    with MetricsServer(registry, exporter.readiness.missing, host="127.0.0.1", port=0) as served:
        yield served


def get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_metrics_endpoint_passes_promtool_check_metrics(
    exporter: Exporter, server: MetricsServer, promtool: Promtool
) -> None:
    exporter.record_window(summary())
    exporter.count_outcome("accepted")
    exporter.stream.set_watermark(0, 1_700_000_000_000)
    exporter.stream.set_consumer_lag(0, 3)
    exporter.set_broker_up(True)
    exporter.set_evaluation_set("abc123", 8)
    exporter.set_alert_firing("ndcg10-floor", "critical", (("model", "v42"),), True)
    exporter.count_alert_delivery("webhook", "delivered")
    status, text = get(f"{server.url}/metrics")
    result = promtool.check_metrics(text)

    assert status == 200
    assert 'rankmon_ndcg{gain="linear",k="10",model="v42",version="v1",window="5m"} 0.625' in text
    assert result.ok, result.output


def test_readyz_names_what_is_missing_until_everything_holds(
    exporter: Exporter, server: MetricsServer
) -> None:
    exporter.set_evaluation_set("abc123", 8)
    not_ready = get(f"{server.url}/readyz")
    exporter.set_broker_up(True)
    exporter.readiness.group_joined = True
    ready = get(f"{server.url}/readyz")

    assert not_ready == (503, "not ready: group_joined\nnot ready: broker_up\n")
    assert ready == (200, "ready\n")


def test_healthz_answers_while_not_ready_and_unknown_paths_are_404(server: MetricsServer) -> None:
    assert get(f"{server.url}/healthz") == (200, "ok\n")
    assert get(f"{server.url}/")[0] == 404


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_tls_endpoint_serves_metrics_to_a_client_trusting_its_certificate(
    exporter: Exporter, registry: CollectorRegistry, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    exporter.record_window(summary())
    trusting = ssl.create_default_context(cafile=str(cert))
    trusting.check_hostname = False
    tls = MetricsServer(
        registry,
        exporter.readiness.missing,
        host="127.0.0.1",
        port=0,
        certfile=str(cert),
        keyfile=str(key),
    )
    with tls:
        status, text = get(f"{tls.url}/metrics", trusting)
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            get(f"http://127.0.0.1:{tls.port}/metrics")

    assert tls.url.startswith("https://")
    assert status == 200
    assert "rankmon_ndcg{" in text


def test_a_stalled_client_on_the_tls_port_does_not_block_other_scrapes(
    exporter: Exporter, registry: CollectorRegistry, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    trusting = ssl.create_default_context(cafile=str(cert))
    trusting.check_hostname = False
    tls = MetricsServer(
        registry,
        exporter.readiness.missing,
        host="127.0.0.1",
        port=0,
        certfile=str(cert),
        keyfile=str(key),
    )
    with tls, socket.create_connection(("127.0.0.1", tls.port)):
        # The stalled connection above never starts its TLS handshake.
        status, _ = get(f"{tls.url}/healthz", trusting)

    assert status == 200


def test_window_with_too_few_queries_reports_no_mean_but_keeps_the_mergeable_sums(
    registry: CollectorRegistry,
) -> None:
    exporter = Exporter(registry, segment_keys=["model"], process_metrics=False, min_queries=5)
    exporter.record_window(summary(queries=4, ndcg10=0.625))
    labels = {"k": "10", "gain": "linear", **window_labels()}

    mean = registry.get_sample_value("rankmon_ndcg", labels)
    assert mean is not None and math.isnan(mean)
    assert registry.get_sample_value("rankmon_ndcg_sum_of_query_means", labels) == 2.5
    assert registry.get_sample_value("rankmon_window_queries", window_labels()) == 4

    exporter.record_window(summary(queries=5, ndcg10=0.625))
    assert registry.get_sample_value("rankmon_ndcg", labels) == 0.625


def test_every_quality_gauge_has_its_standard_error_and_sum_of_squares(
    exporter: Exporter, registry: CollectorRegistry
) -> None:
    values = [0.2, 0.9, 0.55, 0.7, 0.1]
    key = "ndcg@10:linear"
    window = replace(
        summary(queries=len(values)),
        query_means={f"q{i}": {key: v} for i, v in enumerate(values)},
        sums={key: math.fsum(values)},
        squares={key: math.fsum(v * v for v in values)},
        means={key: statistics.fmean(values)},
    )
    exporter.record_window(window)
    labels = {"k": "10", "gain": "linear", **window_labels()}

    expected = statistics.stdev(values) / math.sqrt(len(values))
    stderr = registry.get_sample_value("rankmon_ndcg_stderr", labels)
    assert stderr == pytest.approx(expected, rel=1e-12)
    squares = registry.get_sample_value("rankmon_ndcg_sum_of_squared_query_means", labels)
    assert squares == pytest.approx(sum(v * v for v in values))
    # a window published without its per-query means (too large) keeps its standard error
    trimmed = WindowSummary.from_json(replace(window, query_means={}).to_json())
    assert trimmed.stderr(key) == pytest.approx(expected, rel=1e-12)


def test_a_window_under_min_queries_exports_no_standard_error(registry: CollectorRegistry) -> None:
    exporter = Exporter(registry, segment_keys=["model"], min_queries=10)
    exporter.record_window(summary(queries=4))
    labels = {"k": "10", "gain": "linear", **window_labels()}
    assert math.isnan(registry.get_sample_value("rankmon_ndcg_stderr", labels) or 0.0)


def test_every_exported_family_has_the_type_and_help_of_the_series_table() -> None:
    registry = CollectorRegistry()
    Exporter(registry, segment_keys=("model",), process_metrics=False)
    table = {series.name: series for series in SERIES}
    families = list(registry.collect())
    # trec_eval's families' series come once they have a sample (test_provided_measures_served)
    declared = [series.name for series in SERIES if series.name not in SAMPLED_ONLY]
    assert [family.name for family in families] == declared
    for family in families:
        series = table[family.name]
        assert (family.type, family.documentation) == (series.type, series.help), family.name


def test_each_concern_is_one_collector_that_describes_its_families_without_samples() -> None:
    registry = CollectorRegistry()
    exporter = Exporter(registry, segment_keys=("model",), process_metrics=False)
    exporter.count_outcome("accepted")
    exporter.set_pairs_pending(3)
    concerns = (
        exporter.stream, exporter.status, exporter.evaluation_set, exporter.control,
        exporter.judging, exporter.alerts,
    )  # fmt: skip
    described: list[str] = []
    for concern in concerns:
        families = list(concern.describe())
        assert [family.name for family in families] == [f.name for f in concern.collect()]
        assert all(not family.samples for family in families)
        described += [family.name for family in families]
    # together, the loop's own series of the table, each once, in its order
    assert described == [series.name for series in PROCESS_SERIES]
    # the per-window collector describes what it may yield, sampled-only families included
    latest = {family.name for family in exporter.latest.describe()}
    assert latest == {s.name for s in SERIES} - {s.name for s in PROCESS_SERIES}
    # registering a concern twice is refused by name, from its description
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        registry.register(JudgingSeries())
