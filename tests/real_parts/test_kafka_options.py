"""The config reaches kafka-python unchanged: security options, consumer and producer settings.

Tansu cannot speak TLS or SASL, so those options are checked as the keyword arguments
kafka-python receives (and against the options kafka-python itself declares); PLAINTEXT is
checked end to end against the real broker.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from kafka import KafkaConsumer, KafkaProducer

from monitor.checkpoint.windows_topic import WindowsTopic
from monitor.config.loader import load_config
from monitor.kafka.options import consumer_options, producer_options
from monitor.kafka.settings import KafkaConfig
from monitor.logs import JsonLinesFormatter, fields

SECRETS = {"KAFKA_PASSWORD": "pw-very-secret", "KEY_PASSWORD": "key-phrase-secret"}


def kafka_config(tmp_path: Path, kafka: dict[str, Any]) -> KafkaConfig:
    tree = {"kafka": {"topic": "events", **kafka}, "evaluation_set": {"path": "q.txt"}}
    path = tmp_path / "rankmon.yaml"
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return load_config(path, SECRETS).kafka


@pytest.fixture
def mtls_scram(tmp_path: Path) -> KafkaConfig:
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("-----BEGIN-----\n", encoding="utf-8")
    security = {
        "protocol": "SASL_SSL",
        "sasl": {"mechanism": "SCRAM-SHA-512", "username": "rk", "password_env": "KAFKA_PASSWORD"},
        "ssl": {
            "cafile": "ca.pem",
            "certfile": "client.pem",
            "keyfile": "client.key",
            "key_password_env": "KEY_PASSWORD",
            "check_hostname": False,
        },
    }
    servers = ["b1:9093", "b2:9093"]
    return kafka_config(tmp_path, {"bootstrap_servers": servers, "security": security})


def test_sasl_ssl_scram_and_mtls_options_reach_kafka_python_unchanged(
    tmp_path: Path, mtls_scram: KafkaConfig
) -> None:
    options = consumer_options(mtls_scram)
    assert options["bootstrap_servers"] == ["b1:9093", "b2:9093"]
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "rk"
    assert options["sasl_plain_password"] == "pw-very-secret"
    assert options["ssl_cafile"] == str(tmp_path.resolve() / "ca.pem")
    assert options["ssl_certfile"] == str(tmp_path.resolve() / "client.pem")
    assert options["ssl_keyfile"] == str(tmp_path.resolve() / "client.key")
    assert options["ssl_password"] == "key-phrase-secret"
    assert options["ssl_check_hostname"] is False
    assert producer_options(mtls_scram)["sasl_plain_password"] == "pw-very-secret"


def test_the_windows_topic_reader_gets_the_same_security_options_as_the_consumer(
    tmp_path: Path, mtls_scram: KafkaConfig
) -> None:
    consumer_class = mock.MagicMock()
    consumer_class.return_value.partitions_for_topic.return_value = set()  # nothing to read
    with (
        mock.patch("monitor.checkpoint.share_reader.bootstrap_reachable", return_value=True),
        mock.patch("monitor.checkpoint.share_reader.KafkaConsumer", consumer_class),
    ):
        WindowsTopic(mtls_scram).read(lambda share: None)

    options = consumer_class.call_args.kwargs
    assert options["bootstrap_servers"] == ["b1:9093", "b2:9093"]
    expected = consumer_options(mtls_scram)
    security = {key for key in expected if key.startswith(("security_", "sasl_", "ssl_"))}
    assert security == {
        "security_protocol",
        "sasl_mechanism",
        "sasl_plain_username",
        "sasl_plain_password",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_password",
        "ssl_check_hostname",
    }
    assert {key: options[key] for key in security} == {key: expected[key] for key in security}
    assert options["sasl_plain_password"] == "pw-very-secret"
    assert options["ssl_keyfile"] == str(tmp_path.resolve() / "client.key")
    # A plain reader: no group, nothing committed; and nothing kafka-python would refuse.
    assert (options["group_id"], options["enable_auto_commit"]) == (None, False)
    assert set(options) <= set(KafkaConsumer.DEFAULT_CONFIG)


def test_every_option_is_one_kafka_python_declares(mtls_scram: KafkaConfig) -> None:
    # kafka-python refuses unknown keyword arguments at construction.
    assert set(consumer_options(mtls_scram)) <= set(KafkaConsumer.DEFAULT_CONFIG)
    assert set(producer_options(mtls_scram)) <= set(KafkaProducer.DEFAULT_CONFIG)


def test_printed_options_mask_the_secrets(mtls_scram: KafkaConfig) -> None:
    for options in (consumer_options(mtls_scram), producer_options(mtls_scram)):
        for printed in (repr(options), str(options), f"{options}", str(options.masked())):
            assert "pw-very-secret" not in printed
            assert "key-phrase-secret" not in printed
            assert "'sasl_plain_password': '***'" in printed


def test_options_logged_as_json_fields_mask_the_secrets(
    mtls_scram: KafkaConfig, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("monitor.test")
    with caplog.at_level(logging.INFO, logger="monitor.test"):
        logger.info("connecting", extra=fields(options=consumer_options(mtls_scram)))
    line = JsonLinesFormatter().format(caplog.records[0])
    assert "SCRAM-SHA-512" in line
    assert "pw-very-secret" not in line
    assert "key-phrase-secret" not in line


def test_with_changes_adds_options_and_keeps_the_masking(mtls_scram: KafkaConfig) -> None:
    options = consumer_options(mtls_scram).with_changes(consumer_timeout_ms=100)
    assert options["consumer_timeout_ms"] == 100
    assert options["sasl_plain_password"] == "pw-very-secret"
    assert "pw-very-secret" not in repr(options)


def test_plaintext_sends_no_sasl_or_tls_options(tmp_path: Path) -> None:
    options = consumer_options(kafka_config(tmp_path, {}))
    assert options["security_protocol"] == "PLAINTEXT"
    assert not [key for key in options if key.startswith(("sasl_", "ssl_"))]


def test_consumer_commits_only_by_hand_in_the_configured_group(tmp_path: Path) -> None:
    config = kafka_config(tmp_path, {"group_id": "g1", "client_id": "c1", "max_poll_records": 7})
    options = consumer_options(config)
    assert options["enable_auto_commit"] is False
    assert (options["group_id"], options["client_id"]) == ("g1", "c1")
    assert options["max_poll_records"] == 7
    assert "session_timeout_ms" not in options  # kafka-python's default stays


def test_fetch_and_request_sizes_leave_room_for_the_largest_accepted_record(
    tmp_path: Path,
) -> None:
    config = kafka_config(tmp_path, {"max_record_bytes": 8_000_000})
    assert consumer_options(config)["max_partition_fetch_bytes"] > 8_000_000
    assert producer_options(config)["max_request_size"] > 8_000_000


@pytest.mark.broker
def test_plaintext_options_produce_and_consume_through_the_real_broker(
    tmp_path: Path, tansu: Any, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    kafka = {
        "bootstrap_servers": [tansu.bootstrap_servers],
        "topic": topic,
        "group_id": f"g-{uuid.uuid4().hex[:8]}",
        "session_timeout_ms": 6000,
    }
    config = kafka_config(tmp_path, kafka)
    producer = KafkaProducer(**producer_options(config))
    producer.send(topic, b"hello", key=b"q1").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(topic, **consumer_options(config), consumer_timeout_ms=10_000)
    try:
        record = next(iter(consumer), None)  # the first record, or None after the timeout
    finally:
        consumer.close()
    assert record is not None
    assert (record.key, record.value) == (b"q1", b"hello")
