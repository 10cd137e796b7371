"""The explanations' settings (`export.external_url`, `export.explain`)."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.values import Duration, parse_duration

_THIRTY_SECONDS = parse_duration("30s")

__all__ = ["ExplainConfig"]


@dataclass(frozen=True, slots=True)
class ExplainConfig:
    """`keep_windows`: finalized windows kept per segment for `/api/v1/explain` and the page;
    `max_rankings`: sampled rankings held at most (one per query, segment and pane);
    `max_sample_bytes`: the memory those rankings may take (their JSON plus 256 bytes each);
    `max_segments`: segments kept at most. `external_url`: how users reach this instance's
    HTTP server (alerts and dashboards link to its page); None: no links. `refresh`: how often
    the page at `/` reloads itself (0: never; explanations never do)."""

    keep_windows: int = 12
    max_rankings: int = 50_000
    max_sample_bytes: int = 32 * 1024 * 1024
    max_segments: int = 1000
    external_url: str | None = None
    refresh: Duration = _THIRTY_SECONDS
