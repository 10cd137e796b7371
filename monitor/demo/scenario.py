"""The demo's scenario: its timeline, its two model versions, its alert rule and its config.

Each model version is a synthetic ranker served over HTTP; `rankmon replay` replays the
evaluation set through each every 10 s (the first at start, then on multiples of 10 s, where
the 10 s windows start). The timeline is short so that the alert fires within about half a
minute of start:

```
t = 0s      broker, monitor, the two rankers and their replayers start; a replay per model
t = 20s     v1 degrades (quality 0.8 -> 0.3: nDCG@10 about 0.82 -> 0.47); v2 stays at 0.6 (~0.72)
t = 20-30s  v1's first replay after the drop starts on the next 10 s boundary; its end markers
            close its window at the next tick (<= 2 s), and ndcg10-floor (nDCG@10 < 0.6 for
            1 window) fires for model=v1 only
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.config.loader import Config, config_from_tree
from monitor.demo.ranker import ModelVersion

__all__ = ["ALERT_FLOOR", "ALERT_NAME", "MEASURE", "TOPIC", "Scenario"]

TOPIC = "ranking-events"
MEASURE = "ndcg@10:linear"
ALERT_NAME = "ndcg10-floor"
# Halfway between v1's degraded nDCG@10 (~0.47) and v2's (~0.72): far from both, in units
# of a 10 s window's standard error (~0.02), so only the drop crosses it.
ALERT_FLOOR = 0.6


@dataclass(frozen=True)
class Scenario:
    """What the demo runs: sizes, rates and the moment v1 degrades (seconds after start)."""

    seed: int = 42
    replay_every: str = "10s"  # each model's evaluation set replayed this often
    depth: int = 20  # documents a replay asks each ranker for
    degrade_after_s: float = 20.0
    window: str = "10s"
    allowed_lateness: str = "2s"
    tick: str = "2s"
    partitions: int = 2
    # The judging loop with a synthetic LLM judge and people auditing whole queries
    # (`monitor.demo.judges`; `rankmon demo --no-judges` leaves it out), and the share of the
    # queries they audit.
    judges: bool = True
    audit_share: float = 0.2

    def versions(self, start_ms: int) -> tuple[ModelVersion, ModelVersion]:
        """v1 degrades `degrade_after_s` after `start_ms`; v2 never does."""
        degrade_at_ms = start_ms + round(self.degrade_after_s * 1000)
        return (
            ModelVersion("v1", quality=0.8, degraded_quality=0.3, degrade_at_ms=degrade_at_ms),
            ModelVersion("v2", quality=0.6),
        )

    def replay_tree(self, topics: Path, ranker_url: str, model: str) -> dict[str, Any]:
        """The `replay:` section of one model's replayer, as a user would write it."""
        return {
            "topics": str(topics),
            "depth": self.depth,
            "ranker": {"url": ranker_url, "preset": "json", "timeout": "5s", "concurrency": 8},
            "segment": {"model": model},
            "schedule": {"interval": self.replay_every, "run_at_start": True},
        }

    def config(
        self,
        bootstrap_servers: str,
        qrels: Path,
        metrics_port: int,
        judge: Mapping[str, Any] | None = None,
        people_tokens: Path | None = None,
    ) -> Config:
        """The monitor's config: short windows, the demo's topic and one alert rule; `judge`:
        the `judge:` section of `rankmon judge`'s worker (with the judging loop on);
        `people_tokens`: the judging page's people (the page is served with it)."""
        tree = self.config_tree(bootstrap_servers, qrels, metrics_port)
        if judge is not None:
            tree["judge"] = dict(judge)
            tree["evaluation_set"]["topics"] = str(qrels.parent / "topics.tsv")
        if people_tokens is not None:
            tree["judging"].update(page=True, people_header="", people_tokens=str(people_tokens))
        return config_from_tree(tree, {}, {}, qrels.parent)

    def config_tree(self, bootstrap_servers: str, qrels: Path, metrics_port: int) -> dict[str, Any]:
        """The config as the YAML a user would write (environment overrides do not apply)."""
        return {
            "kafka": {
                "bootstrap_servers": [bootstrap_servers],
                "topic": TOPIC,
                "group_id": "rankmon-demo",
                # Tansu makes a consumer-group join wait half the session timeout.
                "session_timeout_ms": 6000,
            },
            "evaluation_set": {"path": str(qrels), "reload": {"watch": False}},
            "metrics": {"cutoffs": [5, 10, 20], "gains": ["linear", "exp"]},
            "events": {"max_depth": 100},
            "windows": {
                "size": self.window,
                "allowed_lateness": self.allowed_lateness,
                "idle_timeout": "5s",  # another replayer without end markers: 5 s after
            },
            "schedule": {"interval": self.tick},
            "segments": {"keys": ["model"]},
            "export": {"host": "127.0.0.1", "port": metrics_port},
            "logging": {"level": "WARNING"},
            "judging": {
                "enabled": self.judges,
                # every unjudged document of a window's top 10 at once: the demo is short
                "budget_per_hour": 1_000_000,
                "audit_pairs": 50,
                "audit_rate": self.audit_share,
            },
            "alerts": {
                # The demo shows alerts itself; log lines would run through the live view.
                "log": False,
                "rules": [
                    {
                        "name": ALERT_NAME,
                        "measure": "ndcg@10",
                        "gain": "linear",
                        "severity": "critical",
                        "below": ALERT_FLOOR,
                        "for": 1,
                        "keep_firing_for": 0,
                    }
                ],
            },
        }
