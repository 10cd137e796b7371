"""`rankmon dashboards push` against a stand-in Grafana that checks its dashboard API.

No Grafana server installs here, so the stand-in (http.server on loopback) answers the way
Grafana's HTTP API does and refuses what Grafana would refuse: a missing or wrong bearer token,
a dashboard body without `dashboard`/`folderUid`/`overwrite`, an unknown folder, a second
folder with the same title, a dashboard uid that exists when `overwrite` is false.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import build_parser, main
from monitor.demo.broker import free_port

TOKEN = "glsa_s3cr3t-token-value"
CHECKED_IN = Path(__file__).resolve().parents[2] / "dashboards"
CHECKED_IN_CONFIG = CHECKED_IN / "rankmon.yaml"  # what the checked-in files are rendered from


@dataclass
class Request:
    method: str
    path: str
    authorization: str | None
    body: Any


@dataclass
class StandInGrafana:
    """The state of the stand-in: folders, dashboards (uid -> version), requests seen."""

    folders: dict[str, str] = field(default_factory=dict)  # uid -> title
    dashboards: dict[str, tuple[dict[str, Any], str, int]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    fail_dashboards: tuple[int, str] | None = None
    url: str = ""

    def answer(self, request: Request) -> tuple[int, Any]:
        self.requests.append(request)
        if request.authorization != f"Bearer {TOKEN}":
            return 401, {"message": "invalid API key"}
        route = (request.method, request.path.split("?")[0])
        if route == ("GET", "/api/folders"):
            return 200, [
                {"id": i, "uid": u, "title": t} for i, (u, t) in enumerate(self.folders.items())
            ]
        if route[0] == "GET" and route[1].startswith("/api/folders/"):
            uid = route[1].removeprefix("/api/folders/")
            if uid in self.folders:
                return 200, {"uid": uid, "title": self.folders[uid]}
            return 404, {"message": "folder not found"}
        if route == ("POST", "/api/folders"):
            return self.create_folder(request.body)
        if route == ("POST", "/api/dashboards/db"):
            return self.save_dashboard(request.body)
        return 404, {"message": "Not found"}

    def create_folder(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("title"), str):
            return 400, {"message": "bad request data"}
        if body["title"] in self.folders.values():
            return 409, {"message": "a folder with the same name already exists"}
        uid = body.get("uid") or f"f{len(self.folders)}"
        self.folders[uid] = body["title"]
        return 200, {"id": len(self.folders), "uid": uid, "title": body["title"]}

    def save_dashboard(self, body: Any) -> tuple[int, Any]:
        if self.fail_dashboards is not None:
            status, message = self.fail_dashboards
            return status, {"message": message}
        if not isinstance(body, dict) or set(body) - {
            "dashboard",
            "folderUid",
            "overwrite",
            "message",
        }:
            return 400, {"message": "bad request data"}
        dashboard, folder = body.get("dashboard"), body.get("folderUid")
        if not isinstance(dashboard, dict) or not dashboard.get("uid") or "id" in dashboard:
            return 400, {"message": "dashboard needs a uid and no id"}
        if folder not in self.folders:
            return 400, {"message": "folder not found"}
        uid = dashboard["uid"]
        if uid in self.dashboards and body.get("overwrite") is not True:
            return 412, {
                "message": "A dashboard with the same uid already exists",
                "status": "name-exists",
            }
        version = self.dashboards[uid][2] + 1 if uid in self.dashboards else 1
        self.dashboards[uid] = (dashboard, folder, version)
        url = f"/d/{uid}/{uid}"
        return 200, {"id": 1, "uid": uid, "url": url, "status": "success", "version": version}


def handler_for(grafana: StandInGrafana) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.respond(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = "<not json>"
            if self.headers.get("Content-Type", "").split(";")[0] != "application/json":
                body = "<not sent as application/json>"
            self.respond(body)

        def respond(self, body: Any) -> None:
            request = Request(self.command, self.path, self.headers.get("Authorization"), body)
            status, answer = grafana.answer(request)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep the test output clean

    return Handler


@pytest.fixture
def grafana() -> Iterator[StandInGrafana]:
    state = StandInGrafana()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAFANA_TOKEN", TOKEN)


def push(grafana: StandInGrafana, *options: str) -> int:
    return main(["dashboards", "push", "--url", grafana.url, *options])


def test_push_creates_the_folder_then_posts_every_dashboard_with_the_bearer_token(
    grafana: StandInGrafana, token_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert push(grafana, "--folder", "Ranking quality", "--config", str(CHECKED_IN_CONFIG)) == 0
    routes = [(r.method, r.path) for r in grafana.requests]
    assert routes == [
        ("GET", "/api/folders"),
        ("POST", "/api/folders"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
    ]
    assert {r.authorization for r in grafana.requests} == {f"Bearer {TOKEN}"}
    assert grafana.folders == {"ranking-quality": "Ranking quality"}
    for uid in ("rankmon-quality", "rankmon-pipeline"):
        dashboard, folder, _ = grafana.dashboards[uid]
        assert folder == "ranking-quality"
        assert dashboard == json.loads((CHECKED_IN / f"{uid}.json").read_text(encoding="utf-8"))
    assert all(r.body["overwrite"] is True for r in grafana.requests[2:])
    out = capsys.readouterr().out
    assert "pushed /d/rankmon-quality/" in out
    assert TOKEN not in out


def test_pushing_again_reuses_the_folder_and_overwrites_the_dashboards(
    grafana: StandInGrafana, token_env: None
) -> None:
    assert push(grafana) == 0
    assert push(grafana) == 0
    folder_posts = [r for r in grafana.requests if (r.method, r.path) == ("POST", "/api/folders")]
    assert len(folder_posts) == 1
    assert {uid: version for uid, (_, _, version) in grafana.dashboards.items()} == {
        "rankmon-quality": 2,
        "rankmon-pipeline": 2,
    }


def test_an_existing_folder_made_by_hand_is_found_by_title(
    grafana: StandInGrafana, token_env: None
) -> None:
    grafana.folders["abc123"] = "rankmon"
    assert push(grafana) == 0
    assert {folder for _, folder, _ in grafana.dashboards.values()} == {"abc123"}


def test_the_token_can_come_from_a_file(grafana: StandInGrafana, tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"{TOKEN}\n")
    assert push(grafana, "--token-file", str(path)) == 0
    assert {r.authorization for r in grafana.requests} == {f"Bearer {TOKEN}"}


def test_a_rejected_token_exits_2_with_one_line_that_does_not_show_it(
    grafana: StandInGrafana, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MY_TOKEN", "wrong-token-do-not-print")
    assert push(grafana, "--token-env", "MY_TOKEN") == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert "401" in captured.err
    assert "wrong-token-do-not-print" not in captured.err + captured.out
    assert grafana.dashboards == {}


def test_a_grafana_server_error_exits_2_with_grafanas_message_on_one_line(
    grafana: StandInGrafana, token_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    grafana.fail_dashboards = (500, "database is locked\nretry later")
    assert push(grafana) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "database is locked retry later" in err
    assert err.startswith("rankmon dashboards: ")


def test_an_unreachable_grafana_exits_2_with_one_line(
    token_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    assert main(["dashboards", "push", "--url", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"cannot reach Grafana at {url}" in err


def test_push_without_a_token_exits_2_naming_the_variable(
    grafana: StandInGrafana, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GRAFANA_TOKEN", raising=False)
    assert push(grafana) == 2
    assert "GRAFANA_TOKEN" in capsys.readouterr().err
    assert grafana.requests == []


def subcommand(*names: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in names:
        [subparsers] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = subparsers.choices[name]
    return parser


@pytest.mark.parametrize("action", ["render", "push"])
def test_every_dashboards_option_has_help_text(action: str) -> None:
    options = [a for a in subcommand("dashboards", action)._actions if a.option_strings]
    assert len(options) >= 3
    missing = [a.option_strings[0] for a in options if not (a.help or "").strip()]
    assert missing == []


@pytest.mark.parametrize(
    ("action", "shown"),
    [
        ("push", ("--token-env VAR", "(default: GRAFANA_TOKEN)", "--token-file FILE",
                  "--folder NAME", "(default: rankmon)")),
        ("render", ("--out DIR", "(default: dashboards)")),
    ],
)  # fmt: skip
def test_help_shows_the_token_variable_folder_and_output_defaults(
    action: str, shown: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["dashboards", action, "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    missing = [part for part in shown if part not in text]
    assert missing == []
