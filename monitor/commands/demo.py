"""`rankmon demo [--duration S] [--seed N] [--port P] [--no-live] [--no-judges]`: the whole
loop locally.

Starts the embedded broker, two synthetic rankers over HTTP (v1 degrades 20 s in), `rankmon
replay` replaying the evaluation set through each every 10 s, the monitor with 10 s windows
and `/metrics`, and shows a live view (or, with `--no-live`, one line per window and alert
change); at the end it prints how long after v1's first bad replay ended the alert fired.
It also runs the judging loop (docs/judging.md; `--no-judges` leaves it out): a synthetic LLM
judge that grades one grade high and people auditing 20 % of the queries in full answer the
pairs rankmon asks for, and at the end it prints what they judged and v2's newest nDCG@10
raw, corrected by the audit and under its upper bound.
Ends after `--duration` seconds or on Ctrl-C (or SIGTERM), stopping every process and thread
it started; exit 0.
"""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

__all__ = ["register", "run"]


def _positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port (0: a free one), got {text}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `demo` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="run the whole loop on this machine: broker, synthetic ranker, monitor, alerts",
        description=(
            "Start an embedded Kafka-compatible broker, two synthetic rankers over HTTP "
            "(model v1 degrades 20 s in, v2 does not), rankmon replay replaying the evaluation "
            "set through each every 10 s, and the monitor with 10 s windows; show nDCG@10 per "
            "model, events by outcome and alerts until --duration or Ctrl-C."
        ),
    )
    parser.add_argument(
        "--duration", type=_positive_seconds, default=None, metavar="S",
        help="stop after S seconds (default: run until Ctrl-C)",
    )  # fmt: skip
    parser.add_argument(
        "--seed", type=int, default=42, metavar="N",
        help="seed of the synthetic evaluation set and ranker (default: 42)",
    )  # fmt: skip
    parser.add_argument(
        "--port", type=_port, default=0, metavar="P",
        help="port of the /metrics endpoint (default: a free port)",
    )  # fmt: skip
    parser.add_argument(
        "--no-live", dest="live", action="store_false",
        help="print one line per window and alert change instead of the live view",
    )  # fmt: skip
    parser.add_argument(
        "--no-judges", dest="judges", action="store_false",
        help=(
            "leave out the judging loop (by default a synthetic LLM judge grading one grade "
            "high and people auditing 20 %% of the queries answer the pairs rankmon asks for)"
        ),
    )  # fmt: skip
    parser.set_defaults(handler=run)


def _stop(signum: int, frame: FrameType | None) -> None:
    # SIGTERM and SIGINT end the demo like Ctrl-C, so the cleanup in run_demo stops the
    # broker. SIGINT is set too: a process started with it ignored (`rankmon demo &`, nohup,
    # a CI script) gets no KeyboardInterrupt from Python otherwise.
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Run the demo; it stops everything it started before returning."""
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        from monitor.demo.run import DemoOptions, run_demo  # the demo's imports when it runs
        from monitor.demo.scenario import Scenario

        options = DemoOptions(
            duration_s=args.duration,
            seed=args.seed,
            metrics_port=args.port,
            live=args.live,
            scenario=Scenario(judges=args.judges),
        )
        outcome = run_demo(options, write=lambda line: print(line, flush=True))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    fired = sorted({f"{a.name} {a.segment}" for a in outcome.state.alerts if a.state == "firing"})
    replays = sum(len(done) for done in outcome.replays.values())
    print(
        f"{replays} replays, {outcome.events_sent} records; "
        f"firing at the end: {', '.join(fired) or 'none'}"
    )
    bad, delay = outcome.first_bad_replay(), outcome.page_delay_ms()
    if bad is not None and delay is not None:
        start = outcome.start_ms
        print(
            f"v1's first replay after the drop ran +{(bad.started_ms - start) / 1000:.1f}s to "
            f"+{(bad.ended_ms - start) / 1000:.1f}s; the alert fired {delay / 1000:.1f}s after "
            "it ended (a tick is 2s)"
        )
    if outcome.judging is not None:
        print(outcome.judging)
    sys.stdout.flush()
    return 0
