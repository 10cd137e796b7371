"""Hostile input and secrets: each attack of the security review, as input.

hash flood        doc ids crafted to share their hashes' low bits
credentials       URLs with user info, tokens in paths and queries; tokens from files
alias bomb        a 400-byte YAML "billion laughs"
wire arithmetic   record timestamps past int64
log injection     a segment value with a newline
slow clients      150 connections dripping bytes; oversized and odd requests
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from monitor import native
from monitor.alerting.messages import AlertMessage
from monitor.alerting.sinks import WebhookSink
from monitor.config.loader import load_config
from monitor.errors import ConfigError, InputError
from monitor.export import http
from monitor.export.exporter import Exporter
from monitor.export.http import MetricsServer, Response
from monitor.ingest.events import EventDecoder
from monitor.ingest.handoff import Handoff
from monitor.ingest.intake import Intake
from monitor.kafka.consumer import SourceRecord
from monitor.logs import TextFormatter, fields
from monitor.scoring.catalog import monitor_keys
from monitor.scoring.evalset import EvaluationSet
from monitor.scoring.scorer import Scorer
from monitor.sections import expansion_problem
from monitor.testing.clock import FakeClock
from monitor.windows.engine import EventWindows
from monitor.windows.segments import SegmentLabeler
from monitor.windows.spec import WindowSpec

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = "kafka: {topic: events}\nevaluation_set: {path: q.txt}\n"


# -- hash flood ------------------------------------------------------------------------


def _load_bench(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _intake(
    evaluation_set: EvaluationSet, *, speedups: bool
) -> tuple[Callable[[list[SourceRecord], int], None], Scorer, list[tuple[str, str]]]:
    """Intake and handoff on tumbling minute windows, nDCG@10, no segments, as one call on a
    poll; the scorer; the outcomes counted."""
    keys = monitor_keys((10,), ("linear",))
    scorer = Scorer(evaluation_set, keys, speedups=speedups)
    labeler = SegmentLabeler((), 1)
    windows = EventWindows(
        WindowSpec.tumbling(60_000),
        [str(k) for k in keys],
        FakeClock(1_000_000),
        version=evaluation_set.version,
        labeler=labeler,
    )
    outcomes: list[tuple[str, str]] = []

    class Counts:
        def count_outcome(self, outcome: str, reason: str = "", amount: int = 1) -> None:
            outcomes.extend([(outcome, reason)] * amount)

    class Sink:
        def reject(
            self, record: SourceRecord, outcome: str, reason: str = "", detail: str = ""
        ) -> None:
            pass

    intake, handoff = Intake(EventDecoder(), labeler, windows), Handoff(windows, Sink(), Counts())

    def process(records: list[SourceRecord], now_ms: int) -> None:
        handoff.deliver(intake.take(records, {evaluation_set.version: scorer}, now_ms))

    return process, scorer, outcomes


@pytest.mark.skipif(not native.speedups_built(), reason="the C extension is not built")
def test_ids_crafted_against_the_hash_key_go_to_the_reference_decoder_not_a_quadratic_scan() -> (
    None
):
    hashflood = _load_bench("hashflood")
    key = (0x1234_5678_9ABC_DEF0, 0x0F0F_0F0F_0F0F_0F0F)
    crafted = hashflood.crafted_ids(200, key, slots=512)  # one probe chain of 200
    speedups = pytest.importorskip("monitor._speedups")
    speedups.set_hash_seed(key[0].to_bytes(8, "little") + key[1].to_bytes(8, "little"))
    try:
        evaluation_set = EvaluationSet({"q1": {crafted[0]: 2}}, None)
        process, scorer, outcomes = _intake(evaluation_set, speedups=True)
        value = orjson.dumps({"event_id": "e1", "query_id": "q1", "ranking": crafted})
        record = SourceRecord("events", 0, 0, 1_000_000, None, value)
        statuses = hashflood.scan_statuses(scorer.judgment_index, [value], 1_000_000)
        process([record], 1_000_000)
    finally:
        speedups.set_hash_seed(os.urandom(16))
    assert list(statuses) == [1]  # punted: the probe bound, not 200 x 200 probes
    assert outcomes == [("accepted", "")]  # and the reference decoder took it


def test_the_hashflood_bench_keeps_crafted_ids_within_twice_ordinary_ones() -> None:
    pytest.importorskip("monitor._speedups")
    done = subprocess.run(
        [
            sys.executable,
            "-P",
            str(ROOT / "bench" / "hashflood.py"),
            "--docs",
            "400",
            "--events",
            "60",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "within 2x of ordinary: met" in done.stdout


# -- credentials -----------------------------------------------------------------------


def check_config(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    path = tmp_path / "rankmon.yaml"
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "check-config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_check_config_masks_credentials_in_alertmanager_and_webhook_urls(tmp_path: Path) -> None:
    text = MINIMAL + (
        "alerts:\n"
        '  alertmanager: {url: "https://admin:PASSWORD@am.example:9093/am?token=QUERYSECRET"}\n'
        '  webhook: {url: "https://hooks.slack.com/services/T000/B000/PATHSECRET"}\n'
    )
    code, out = check_config(tmp_path, text)
    assert code == 0, out
    for secret in ("admin", "PASSWORD", "QUERYSECRET", "PATHSECRET", "T000"):
        assert secret not in out
    alerts = yaml.safe_load(out)["alerts"]
    assert alerts["alertmanager"]["url"] == "https://***@am.example:9093/am?***"
    assert alerts["webhook"]["url"] == "https://hooks.slack.com/***"


def test_urls_and_tokens_come_from_the_environment_or_a_file_and_are_never_printed(
    tmp_path: Path,
) -> None:
    (tmp_path / "token").write_text("FILETOKEN\n")
    text = MINIMAL + (
        "alerts:\n"
        "  alertmanager: {url_env: AM_URL, token_file: token}\n"
        "  webhook: {url_env: HOOK_URL, token_env: HOOK_TOKEN}\n"
    )
    env = {
        "AM_URL": "https://u:ENVPASSWORD@am:9093",
        "HOOK_URL": "https://hooks.example/ENVPATH",
        "HOOK_TOKEN": "ENVTOKEN",
    }
    code, out = check_config(tmp_path, text, env)
    assert code == 0, out
    for secret in ("ENVPASSWORD", "ENVPATH", "ENVTOKEN", "FILETOKEN"):
        assert secret not in out
    alerts = yaml.safe_load(out)["alerts"]
    assert alerts["alertmanager"]["url_env"] == "AM_URL"
    assert alerts["alertmanager"]["token_file"].endswith("token")
    assert alerts["webhook"]["token_env"] == "HOOK_TOKEN"
    config = load_config(tmp_path / "rankmon.yaml", env)
    assert config.alerts.alertmanager.url is not None
    assert config.alerts.alertmanager.url.reveal() == env["AM_URL"]
    assert config.alerts.webhook.token is not None
    assert config.alerts.webhook.token.reveal() == "ENVTOKEN"
    assert "ENVPASSWORD" not in repr(config) and "ENVTOKEN" not in repr(config)


def test_an_inline_token_is_refused_like_every_other_secret(tmp_path: Path) -> None:
    text = MINIMAL + 'alerts:\n  webhook: {url: "http://h/x", token: "t0k3n"}\n'
    code, out = check_config(tmp_path, text)
    assert code == 2 and "alerts.webhook.token" in out and "t0k3n" not in out


def test_the_bearer_token_reaches_the_receiver_and_no_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        with caplog.at_level(logging.DEBUG):
            WebhookSink(url, token="s3cr3t").send([AlertMessage({"alertname": "a"}, {}, 0)], 0)
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["Bearer s3cr3t"]
    assert "s3cr3t" not in caplog.text


# -- alias bomb and bounded messages ---------------------------------------------------

BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{n}: &{n} [{','.join(['*' + p] * 9)}]"
            for p, n in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "kafka: {topic: *i}",
        "evaluation_set: {path: q.txt}",
    ]
)


def test_a_yaml_alias_bomb_is_refused_at_once_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 500  # 9^9 values once expanded
    started = time.perf_counter()
    with pytest.raises(InputError, match="alias bomb") as caught:
        load_config(path, {})
    assert time.perf_counter() - started < 1.0
    assert "\n" not in str(caught.value)
    code, out = check_config(tmp_path, BOMB)
    assert code == 2 and out.count("\n") == 1 and "alias bomb" in out


def test_an_alias_inside_itself_is_refused() -> None:
    looped: list[Any] = []
    looped.append(looped)
    assert expansion_problem(looped) == "not accepted: a YAML alias refers to a value inside itself"


def test_a_huge_bad_value_gives_a_short_one_line_error(tmp_path: Path) -> None:
    huge = "x" * 1_000_000 + "\nforged line"
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"kafka": {"topic": "t", "group_id": [huge]}}))
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    lines = str(caught.value).split("\n")  # this one, and the missing evaluation_set.path
    assert [line.split("'")[1] for line in lines] == ["kafka.group_id", "evaluation_set.path"]
    assert all(len(line) < 500 and line.startswith("config key '") for line in lines)


yaml_texts = st.lists(
    st.sampled_from([*list(" :-[]{}&*!|>'\"#\n,?%@`abc015"), "kafka", "topic", "&a", "*a", "<<"]),
    max_size=120,
).map("".join)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=yaml_texts)
def test_any_yaml_text_gives_a_config_or_one_line_naming_the_problem(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(text)
    try:
        load_config(path, {})
    except (InputError, ConfigError) as error:
        assert "\n" not in str(error) and len(str(error)) < 1_000


# -- wire arithmetic -------------------------------------------------------------------


@pytest.mark.parametrize("speedups", [True, False])
def test_a_record_timestamp_past_int64_is_rejected_not_a_crash(speedups: bool) -> None:
    if speedups and not native.speedups_built():
        pytest.skip("the C extension is not built")
    evaluation_set = EvaluationSet({"q1": {"d1": 1}}, None)
    process, _, outcomes = _intake(evaluation_set, speedups=speedups)
    value = orjson.dumps({"event_id": "e1", "query_id": "q1", "ranking": ["d1"]})
    good = orjson.dumps(
        {"event_id": "e2", "query_id": "q1", "ranking": ["d1"], "event_time": 500_000_000_000}
    )
    records = [
        SourceRecord("events", 0, 0, 2**63 + 6, None, value),  # what kafka-python reads
        SourceRecord("events", 0, 1, 0, None, good),
    ]
    process(records, 500_000_060_000)
    assert outcomes == [("invalid", "too_far_in_future"), ("accepted", "")]


# -- log injection ---------------------------------------------------------------------


def test_a_segment_value_with_a_newline_stays_on_its_log_line() -> None:
    record = logging.LogRecord(
        "monitor.service", logging.INFO, __file__, 1, "window finalized", (), None
    )
    record.fields = fields(segment="model=v1\n2026-12-01 ERROR monitor: forged")["fields"]
    line = TextFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert "\n" not in line
    assert line == (
        "INFO monitor.service: window finalized segment=model=v1\\n2026-12-01 ERROR monitor: forged"
    )


# -- slow and odd clients --------------------------------------------------------------


@pytest.fixture
def server() -> Any:
    registry = CollectorRegistry()
    exporter = Exporter(registry, process_metrics=False)

    def echo(body: bytes, headers: Mapping[str, str]) -> Response:
        return Response("200 OK", "text/plain", b"took " + str(len(body)).encode())

    with MetricsServer(
        registry, exporter.readiness.missing, host="127.0.0.1", port=0, posts={"/post": echo}
    ) as served:
        yield served


def raw_request(server: MetricsServer, data: bytes, timeout_s: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout_s) as conn:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_metrics_answer_while_150_clients_drip_bytes(server: MetricsServer) -> None:
    # Each dripping client holds its connection for the whole request deadline (10 s): a
    # server that served them in turn would not answer within the client's timeout.
    stalled = []
    try:
        for _ in range(150):
            conn = socket.create_connection(("127.0.0.1", server.port))
            conn.sendall(b"GET /metr")  # and never more
            stalled.append(conn)
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
            body = response.read()
    finally:
        for conn in stalled:
            conn.close()
    assert b"rankmon_broker_up" in body


def test_a_client_that_drips_its_request_is_cut_off_at_the_whole_request_deadline(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "REQUEST_DEADLINE_S", 1.0)  # read when each connection starts
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        started = time.perf_counter()
        closed = False
        for _ in range(40):  # a byte every 100 ms: every read is quick, the whole is not
            try:
                conn.sendall(b"G")
            except OSError:
                closed = True
                break
            time.sleep(0.1)
            conn.settimeout(0.01)
            try:
                if conn.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                pass
            conn.settimeout(10)
    assert closed and time.perf_counter() - started < 2.5


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\n\r\n", b"414"),
        (b"GET /metrics HTTP/1.1\r\n" + b"X-A: b\r\n" * 100 + b"\r\n", b"431"),
        (b"GET /metrics HTTP/1.1\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n", b"431"),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", b"405"),
        (b"GET /metrics HTTP/1.1\r\nContent-Length: 9\r\n\r\n123456789", b"413"),
        (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", b"400"),  # TLS on plain HTTP
        (b"GET /nope HTTP/1.1\r\n\r\n", b"404"),
        # POST to a route that takes it: the body's length given, within MAX_BODY_BYTES
        (b"POST /post HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", b"200"),
        (b"POST /post HTTP/1.1\r\nContent-Length: 9000\r\n\r\n", b"413"),
        (b"POST /post HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc", b"411"),
        (b"POST /post HTTP/1.1\r\nContent-Length: \xb2\r\n\r\nabc", b"411"),
        (b"POST /post HTTP/1.1\r\n\r\n", b"411"),
        (b"PUT /post HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", b"405"),
    ],
)
def test_oversized_and_odd_requests_are_refused_with_their_status(
    server: MetricsServer, request_bytes: bytes, status: bytes
) -> None:
    answer = raw_request(server, request_bytes)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:80]


def test_connections_past_the_cap_make_room_by_closing_the_longest_idle_one(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "MAX_CONNECTIONS", 5)
    held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    try:
        time.sleep(0.2)
        answer = raw_request(server, b"GET /healthz HTTP/1.1\r\n\r\n", timeout_s=5.0)
        assert answer.endswith(b"ok\n")
        assert (server.evicted, server.refused) == (1, 0)
        held[0].settimeout(5)
        # The oldest idle connection was closed: an end of stream or a reset.
        with contextlib.suppress(ConnectionResetError):
            assert held[0].recv(1) == b""
    finally:
        for conn in held:
            conn.close()
    time.sleep(0.2)
    assert raw_request(server, b"GET /healthz HTTP/1.1\r\n\r\n").endswith(b"ok\n")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    line=st.binary(max_size=300),
    headers=st.lists(st.binary(max_size=80), max_size=8),
)
def test_any_request_line_and_headers_get_an_http_answer_or_a_close_never_a_dead_server(
    server: MetricsServer, line: bytes, headers: list[bytes]
) -> None:
    data = line + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"
    answer = raw_request(server, data)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 ")
    assert raw_request(server, b"GET /healthz HTTP/1.1\r\n\r\n").endswith(b"ok\n")


def test_metrics_honour_openmetrics_gzip_and_name_filters(server: MetricsServer) -> None:
    request = urllib.request.Request(
        f"{server.url}/metrics?name[]=rankmon_broker_up",
        headers={"Accept": "application/openmetrics-text", "Accept-Encoding": "gzip"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        body = gzip.decompress(response.read()).decode()
        assert response.headers["Content-Type"].startswith("application/openmetrics-text")
    assert "rankmon_broker_up" in body and "rankmon_ready" not in body
    assert body.rstrip().endswith("# EOF")
