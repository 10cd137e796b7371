"""The explanations' settings (`export.external_url`, `export.explain`), declared once
(`monitor.declare`)."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any

from monitor.declare import setting
from monitor.sections import as_duration, as_int, as_str
from monitor.values import Duration, parse_duration

__all__ = ["ExplainConfig", "external_url"]


def external_url(value: Any) -> str:
    """`export.external_url`: an http(s) URL without user info or a query, kept without its
    trailing slash."""
    text = as_str(value)
    parsed = urllib.parse.urlsplit(text)
    if "@" in parsed.netloc:
        # Never echoed: it is a credential. It would be printed by check-config and sent to
        # every alert receiver in each alert's generatorURL.
        raise ValueError(
            "carries user info (user:password@); it is every alert's public link: "
            "put the page behind an authenticating proxy instead"
        )
    if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.query:
        raise ValueError(f"expected an http(s) URL without a query, got {text!r}")
    return text.rstrip("/")


@dataclass(frozen=True, slots=True)
class ExplainConfig:
    """`keep_windows`: finalized windows kept per segment for `/api/v1/explain` and the page;
    `max_rankings`: sampled rankings held at most (one per query, segment and pane);
    `max_sample_bytes`: the memory those rankings may take (their JSON plus 256 bytes each);
    `max_segments`: segments kept at most. `external_url`: how users reach this instance's
    HTTP server (alerts and dashboards link to its page); None: no links. `refresh`: how often
    the page at `/` reloads itself (0: never; explanations never do)."""

    keep_windows: int = setting(
        12, read=as_int(1, 10_000), doc="finalized windows kept per segment to explain"
    )
    max_rankings: int = setting(
        50_000, read=as_int(0, 100_000_000), doc="sampled rankings held at most"
    )
    max_sample_bytes: int = setting(
        32 * 1024 * 1024, read=as_int(0, 1 << 40), doc="the memory those rankings may take"
    )
    max_segments: int = setting(1000, read=as_int(1, 1_000_000), doc="segments kept at most")
    external_url: str | None = None  # read in `export` (`export.external_url`)
    refresh: Duration = setting(
        parse_duration("30s"), read=as_duration, doc="how often the page at / reloads (0: never)"
    )
