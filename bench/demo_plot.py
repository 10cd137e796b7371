"""Render docs/dashboard.png from a real `rankmon demo` run: nDCG@10 per model, alert marked.

    .venv/bin/python bench/demo_plot.py                  # run the demo (90 s), save, plot
    .venv/bin/python bench/demo_plot.py --from-data docs/dashboard.json   # re-plot only

Runs the demo in this process (broker, ranker, monitor: the same code as `rankmon demo
--no-live`), keeps every finalized window and alert change, saves them as JSON next to the
picture, and plots each window's nDCG@10 (mean over queries, linear gain) over the seconds
since the start, with the alert floor, the moment v1 degrades and the moment the alert fired.
Prints the figures it plotted.
"""

from __future__ import annotations

import argparse
import itertools
import math
import warnings
from pathlib import Path
from typing import Any

import matplotlib
import orjson

matplotlib.use("Agg")  # no display: render straight to a file
import matplotlib.pyplot as plt

# kafka-python 3.0.12 warns about its own use of importlib.resources at import time.
warnings.filterwarnings("ignore", r"(read_text|open_text) is deprecated", DeprecationWarning)

from monitor.demo.run import DemoOptions, DemoOutcome, run_demo  # noqa: E402
from monitor.demo.scenario import ALERT_FLOOR, ALERT_NAME, MEASURE  # noqa: E402

COLOURS = {"model=v1": "tab:red", "model=v2": "tab:blue"}


def demo_data(outcome: DemoOutcome) -> dict[str, Any]:
    """The run's windows and alert changes, in seconds since its start."""
    start_ms = outcome.start_ms
    windows = {
        label: [
            {
                "start_s": (w.start_ms - start_ms) / 1000,
                "end_s": (w.end_ms - start_ms) / 1000,
                MEASURE: w.means.get(MEASURE),
                "queries": w.queries,
                "events": w.events,
            }
            for w in sorted(by_start.values(), key=lambda w: w.start_ms)
        ]
        for label, by_start in sorted(outcome.transcript.windows.items())
    }
    alerts = [
        {
            "name": c.name,
            "segment": c.segment,
            "state": c.state,
            "at_s": (c.at_ms - start_ms) / 1000,
        }
        for c in outcome.transcript.alert_changes
    ]
    return {
        "degrade_at_s": (outcome.degrade_at_ms - start_ms) / 1000,
        "events_sent": outcome.events_sent,
        "outcomes": dict(outcome.state.outcomes),
        "windows": windows,
        "alerts": alerts,
    }


def plot(data: dict[str, Any], out: Path) -> None:
    """Draw the windows of `data` (see `demo_data`) to `out` (PNG)."""
    figure, axes = plt.subplots(figsize=(9, 4.5), dpi=110)
    for label, windows in data["windows"].items():
        values = [math.nan if w[MEASURE] is None else w[MEASURE] for w in windows]
        # A window's value holds over its whole span: a step from its start to its end.
        edges = [w["start_s"] for w in windows] + [windows[-1]["end_s"]]
        colour = COLOURS.get(label)
        axes.stairs(values, edges, baseline=None, label=label, color=colour, linewidth=2)
        middles = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
        axes.plot(middles, values, "o", color=colour, markersize=4)
    axes.axhline(ALERT_FLOOR, linestyle="--", color="grey", label=f"{ALERT_NAME} floor")
    axes.axvline(data["degrade_at_s"], linestyle=":", color="black", label="v1 degrades")
    for alert in data["alerts"]:
        if alert["state"] == "firing":
            axes.axvline(alert["at_s"], color="darkred", alpha=0.35, linewidth=6)
            axes.annotate(
                f"{alert['name']} firing\n{alert['segment']} at {alert['at_s']:.0f} s",
                (alert["at_s"], 0.25),
                xytext=(8, 0),
                textcoords="offset points",
                color="darkred",
            )
    axes.set_xlabel("seconds since the demo started")
    axes.set_ylabel("nDCG@10 (mean over queries)")
    axes.set_ylim(0, 1)
    axes.set_title("rankmon demo: nDCG@10 of each 10 s window, per model version")
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left")
    figure.tight_layout()
    figure.savefig(out)
    plt.close(figure)


def report(data: dict[str, Any]) -> None:
    """Print the plotted figures."""
    for label, windows in data["windows"].items():
        values = [None if w[MEASURE] is None else round(w[MEASURE], 3) for w in windows]
        print(f"{label}: {MEASURE} per window {values}")
    for alert in data["alerts"]:
        print(f"{alert['name']} {alert['segment']} {alert['state']} at {alert['at_s']:.1f} s")
    print(f"events sent: {data['events_sent']}; outcomes: {data['outcomes']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=90.0)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=Path("docs/dashboard.png"))
    parser.add_argument("--from-data", type=Path, default=None, help="re-plot a saved run")
    args = parser.parse_args()
    if args.from_data is not None:
        data = orjson.loads(args.from_data.read_bytes())
    else:
        outcome = run_demo(DemoOptions(duration_s=args.duration, seed=args.seed, live=False))
        data = demo_data(outcome)
        saved = args.out.with_suffix(".json")
        saved.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
        print(f"wrote {saved}")
    plot(data, args.out)
    report(data)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
