"""`run_demo`: the whole loop on one machine, and everything it started stopped at the end.

Order of start: the embedded broker (a Tansu child process on a free port) and its topics,
the evaluation set written to a temporary qrels file (and its query texts to a topics file),
the monitor (its poll loop in a thread, `/metrics` on a free or given port), then per model
version a synthetic ranker served over HTTP (`http_ranker.py`) and a `rankmon replay`
replayer (`monitor.replay.Replayer`) replaying the evaluation set through it every 10 s. The
demo ends after `duration_s` or on Ctrl-C, and stops in the reverse order in `finally`
blocks, so an error in one stage still stops the ones started before it.
"""

from __future__ import annotations

import logging
import math
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.clock import Clock, SystemClock
from monitor.config.loader import Config
from monitor.declare import read_settings
from monitor.demo.broker import EmbeddedBroker, free_port
from monitor.demo.chat import DEMO_PROMPT, StandInJudge
from monitor.demo.http_ranker import RankerServer, write_topics
from monitor.demo.judges import LLM_SOURCE, DemoJudges
from monitor.demo.live_view import DemoState, LiveView
from monitor.demo.scenario import ALERT_FLOOR, ALERT_NAME, MEASURE, TOPIC, Scenario
from monitor.demo.snapshot_view import demo_state
from monitor.demo.synthetic import generate_corpus
from monitor.demo.transcript import Transcript
from monitor.errors import RankmonError
from monitor.judge.run import run_judge
from monitor.judge.worker import JudgeReport
from monitor.logs import fields
from monitor.replay.replayer import Replayer
from monitor.replay.runner import ReplayReport
from monitor.replay.settings import ReplayConfig
from monitor.sections import ConfigSection
from monitor.service import Monitor, MonitorIo
from monitor.service.wiring import query_texts

__all__ = ["DemoError", "DemoOptions", "DemoOutcome", "run_demo"]

_log = logging.getLogger(__name__)

_POLL_S = 0.25  # how often the demo reads the monitor's snapshot
_JOIN_S = 15.0  # the longest a stage may take to stop before the demo gives up on it


@dataclass(frozen=True)
class DemoOptions:
    """The command line's choices: duration (None: until Ctrl-C), seed, metrics port (0: free)."""

    duration_s: float | None = None
    seed: int = 42
    metrics_port: int = 0
    live: bool = True
    scenario: Scenario = field(default_factory=Scenario)


@dataclass(frozen=True)
class DemoOutcome:
    """What the demo saw: its last state, every window and alert change, its timeline, and
    the replays (epoch milliseconds: the start, the moment v1 degraded)."""

    state: DemoState
    transcript: Transcript
    start_ms: int
    degrade_at_ms: int
    events_sent: int  # the replays' records (rankings, failures, end markers)
    replays: dict[str, list[ReplayReport]] = field(default_factory=dict)  # model -> replays
    judging: str | None = None  # with --judges: what was judged, and v2's newest headline

    def first_bad_replay(self) -> ReplayReport | None:
        """v1's first replay that started after it degraded."""
        return next(
            (r for r in self.replays.get("v1", []) if r.started_ms >= self.degrade_at_ms), None
        )

    def page_delay_ms(self) -> int | None:
        """From the end of v1's first bad replay to the demo seeing the alert fire."""
        replay = self.first_bad_replay()
        fired = next(
            (
                change.at_ms
                for change in self.transcript.alert_changes
                if change.name == ALERT_NAME and "v1" in change.segment and change.state == "firing"
            ),
            None,
        )
        return None if replay is None or fired is None else fired - replay.ended_ms


def run_demo(options: DemoOptions, write: Callable[[str], None] = print) -> DemoOutcome:
    """Run the demo until its duration is over or Ctrl-C; `write` prints one line."""
    scenario = options.scenario
    if options.metrics_port:
        _check_port_free(options.metrics_port)
    clock = SystemClock()
    transcript = Transcript(None if options.live else write)
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rankmon-demo-")))
        corpus = generate_corpus(options.seed)
        qrels = corpus.write_qrels(workdir / "qrels.txt")
        topics = write_topics(corpus, workdir / "topics.tsv")
        broker = stack.enter_context(_broker(scenario))
        port = options.metrics_port or free_port()
        judge = people = None
        token = secrets.token_hex(16)
        if scenario.judges:
            chat = stack.enter_context(StandInJudge(corpus))
            judge = demo_judge(workdir, chat.url)
            people = workdir / "people.txt"
            people.write_text(f"you {token}\n", encoding="utf-8")
        config = scenario.config(broker.bootstrap_servers, qrels, port, judge, people)
        # The monitor writes rejects and window summaries, and the judging loop its pairs and
        # judgments, to the deployment's own topics; Tansu does not create them on first use.
        own = [config.kafka.dead_letter_topic, config.kafka.windows_topic]
        if config.judging.enabled:
            own += [config.judging.tojudge_topic, config.judging.judgments_topic]
        for name in own:
            broker.create_topic(name, exist_ok=True)
        monitor = Monitor(config, io=MonitorIo(clock=clock))
        stages = [stack.enter_context(_Stage("monitor", monitor.run))]
        judges = None
        worker = _Worker(config)
        if config.judging.enabled:
            # the LLM judge: rankmon judge's own worker against the stand-in endpoint
            stages.append(stack.enter_context(_Stage("LLM judge", worker.run)))
            judges = DemoJudges(
                corpus,
                broker.bootstrap_servers,
                tojudge_topic=config.judging.tojudge_topic,
                judgments_topic=config.judging.judgments_topic,
                audit_share=scenario.audit_share,
                llm=False,
            )
            stages.append(stack.enter_context(_Stage("people", judges.run)))
        start_ms = clock.now_ms()
        transcript.started_ms = start_ms
        versions = scenario.versions(start_ms)
        replayers: dict[str, Replayer] = {}
        for n, version in enumerate(versions):
            server = stack.enter_context(RankerServer(corpus, version, seed=options.seed + n))
            replay = read_settings(
                ReplayConfig,
                ConfigSection(scenario.replay_tree(topics, server.url, version.name), "replay", {}),
            )
            replayer = Replayer(
                replay,
                config.kafka,
                qrels,
                max_id_bytes=config.events.max_id_bytes,
                max_value_bytes=config.segments.max_value_bytes,
                max_document_bytes=config.events.max_document_bytes,
            )
            stack.callback(replayer.close)
            replayers[version.name] = replayer
            stages.append(
                stack.enter_context(_Stage(f"replayer {version.name}", replayer.scheduled))
            )
        intro = [
            f"broker at {broker.bootstrap_servers} (Tansu), topic {TOPIC}",
            f"metrics at {monitor.metrics_url}",
            f"page at {monitor.metrics_url.removesuffix('/metrics')}/ (why each window changed)",
            *(
                [
                    f"judge pairs yourself at {monitor.metrics_url.removesuffix('/metrics')}"
                    f"/judge#token={token} (the audit first; keys 0-3, s skip, u undo)"
                ]
                if people is not None
                else []
            ),
            f"rankers v1 and v2 over HTTP; rankmon replay sends them the {len(corpus.query_ids)} "
            f"queries every {scenario.replay_every}",
            f"v1 degrades {scenario.degrade_after_s:g}s after start; alert {ALERT_NAME} fires "
            f"when a window's nDCG@10 is below {ALERT_FLOOR}; Ctrl-C ends the demo",
        ]

        def state() -> DemoState:
            elapsed = (clock.now_ms() - start_ms) / 1000
            return demo_state(monitor.snapshot(), MEASURE, monitor.metrics_url, elapsed)

        last = _watch(state, transcript, options, clock, stages=stages, intro=intro, write=write)
        judged = None if judges is None else _judged(judges, worker, monitor)
    # After the stack closed: the replayers have stopped, so their reports are final.
    degrade_at_ms = versions[0].degrade_at_ms or start_ms
    reports = {name: list(replayer.reports) for name, replayer in replayers.items()}
    partitions = scenario.partitions
    sent = sum(r.queries + partitions for done in reports.values() for r in done)
    return DemoOutcome(last, transcript, start_ms, degrade_at_ms, sent, reports, judged)


class _Worker:
    """`rankmon judge`'s worker as a stage; `graded`: the pairs it graded so far."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.report = JudgeReport()

    def run(self, stop: threading.Event) -> None:
        config = self.config
        assert config.judge is not None  # the demo writes its judge section
        texts = query_texts(config)
        run_judge(config.judge, config.kafka, config.judging, texts, once=False, stop=stop,
                  report=self.report)  # fmt: skip

    @property
    def graded(self) -> int:
        return self.report.outcomes["graded"]


def demo_judge(workdir: Path, url: str) -> dict[str, Any]:
    """The demo's `judge:` section: the stand-in endpoint at `url` and the demo's prompt,
    written to `workdir`. No documents file: the rankers answer each document's title and
    snippet, which the replays carry to the monitor and its to-judge records to the worker."""
    prompt = workdir / "prompt.txt"
    prompt.write_text(DEMO_PROMPT, encoding="utf-8")
    return {
        "url": url,
        "model": "synthetic",
        "source": LLM_SOURCE,
        "prompt_file": str(prompt),
        "concurrency": 8,
        "retries": 2,
        "backoff": "100ms",
    }


def _judged(judges: DemoJudges, worker: _Worker, monitor: Monitor) -> str:
    """What the judges did, and v2's newest window: raw, corrected and between its bounds."""
    said = (
        f"judging: the LLM judge graded {worker.graded} pairs, people {judges.checked} of "
        f"them ({len(judges.audited)} queries audited in full)"
    )
    windows = monitor.explain_store.windows((("model", "v2"),))
    if not windows:
        return said
    newest = windows[-1]
    means, corrected = newest.summary.means, newest.corrected
    raw, upper = means.get(MEASURE, math.nan), means.get(f"ndcg_upper@{MEASURE[5:]}", math.nan)
    said += f"; v2's newest window: {MEASURE} {raw:.3f} (at most {upper:.3f} for unjudged ones)"
    estimate = float(corrected.get("estimate", math.nan))
    if math.isfinite(estimate):
        lower, high = float(corrected["lower"]), float(corrected["upper"])
        said += f", corrected {estimate:.3f} (95 % {lower:.3f} to {high:.3f})"
    return said


def _watch(
    state: Callable[[], DemoState],
    transcript: Transcript,
    options: DemoOptions,
    clock: Clock,
    *,
    stages: Sequence[_Stage],
    intro: Sequence[str],
    write: Callable[[str], None],
) -> DemoState:
    """Print `intro`, then show the state and record it until the duration is over or Ctrl-C.

    Raises `DemoError` as soon as a stage stops on its own.
    """
    deadline = None if options.duration_s is None else clock.monotonic() + options.duration_s
    # Ctrl-C is the ordinary way to end the demo: from the first line printed on, it ends
    # the watch quietly and the caller stops everything.
    with suppress(KeyboardInterrupt), ExitStack() as stack:
        for line in intro:
            write(line)
        if options.live:
            stack.enter_context(LiveView(state))
        while deadline is None or clock.monotonic() < deadline:
            for stage in stages:
                stage.check()
            transcript.update(state(), clock.now_ms())
            time.sleep(_POLL_S)
    last = state()
    transcript.update(last, clock.now_ms())
    return last


def _check_port_free(port: int) -> None:
    # Before anything starts: a busy port is the user's to fix, not a stage failure.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise DemoError(f"--port {port}: {error.strerror}") from error


@contextmanager
def _broker(scenario: Scenario) -> Iterator[EmbeddedBroker]:
    broker = EmbeddedBroker()
    broker.start()
    try:
        broker.create_topic(TOPIC, partitions=scenario.partitions)
        yield broker
    finally:
        broker.stop()


class DemoError(RankmonError):
    """A stage of the demo (the monitor, the ranker) stopped on its own."""


class _Stage:
    """`target(stop)` in a thread, as a context manager that sets `stop` and joins on exit."""

    def __init__(self, name: str, target: Callable[[threading.Event], object]) -> None:
        self.name = name
        self._target = target
        self._stop = threading.Event()
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name=f"demo-{name}", daemon=True)

    def check(self) -> None:
        """Raise `DemoError` if the stage is no longer running (it should run until told)."""
        if not self._thread.is_alive():
            raise DemoError(f"the {self.name} stopped unexpectedly: {self._error!r}")

    def _run(self) -> None:
        try:
            self._target(self._stop)
        except Exception as error:
            self._error = error
            _log.exception("demo stage failed", extra=fields(stage=self.name))

    def __enter__(self) -> _Stage:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(_JOIN_S)
        if self._thread.is_alive():
            _log.warning("demo stage did not stop in time", extra=fields(stage=self.name))
