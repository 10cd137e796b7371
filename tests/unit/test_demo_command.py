"""`rankmon demo`'s command line and its live view's redraw."""

from __future__ import annotations

import io
import socket

import pytest
from rich.console import Console

from monitor.cli import build_parser, main
from monitor.demo.live_view import DemoState, LiveView


def test_demo_options_default_to_run_until_ctrl_c_with_the_live_view() -> None:
    args = build_parser().parse_args(["demo"])
    assert (args.duration, args.seed, args.port, args.live) == (None, 42, 0, True)
    assert args.judges  # the judging loop's synthetic judges run unless --no-judges


def test_demo_takes_duration_seed_port_no_live_and_no_judges() -> None:
    argv = ["demo", "--duration", "75", "--seed", "7", "--port", "9500", "--no-live"]
    args = build_parser().parse_args([*argv, "--no-judges"])
    assert (args.duration, args.seed, args.port, args.live) == (75.0, 7, 9500, False)
    assert not args.judges


@pytest.mark.parametrize("argv", [["--duration", "0"], ["--duration", "x"], ["--port", "70000"]])
def test_demo_refuses_a_bad_duration_or_port_with_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["demo", *argv])
    assert exit_info.value.code == 2
    assert "demo" in capsys.readouterr().err


def test_live_view_draws_the_current_state_when_it_closes() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100, color_system=None)
    states = iter(
        [DemoState("ndcg@10:linear", "http://127.0.0.1:9/metrics", float(n)) for n in range(1000)]
    )
    with LiveView(lambda: next(states), console=console, refreshes_per_second=20):
        pass
    assert "http://127.0.0.1:9/metrics" in screen.getvalue()
    assert "events by outcome" in screen.getvalue()


def test_demo_with_a_busy_port_says_so_in_one_line_before_starting_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["demo", "--port", str(port), "--no-live", "--duration", "5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"rankmon demo: --port {port}: Address already in use\n"
