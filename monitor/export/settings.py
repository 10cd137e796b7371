"""The `export` settings, declared once (`monitor.declare`): the HTTP server of `/metrics`,
the probes, and the explanations' API and page (whose own settings, `export.explain` and
`export.external_url`, are `monitor.explain.settings.ExplainConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from monitor.declare import setting
from monitor.sections import as_int, as_path, as_str

__all__ = ["ExportConfig"]


@dataclass(frozen=True, slots=True)
class ExportConfig:
    """The `/metrics` endpoint (and the explanations' API and page); TLS when both files
    are set."""

    host: str = setting("0.0.0.0", read=as_str, doc="the address the HTTP server listens on")
    port: int = setting(9464, read=as_int(0, 65535), doc="its port (0: any free one)")
    max_connections: int = setting(
        1024,
        read=as_int(2, 1_000_000),
        doc="connections served at once; past it the one idle longest is closed",
    )
    tls_certfile: Path | None = setting(
        None, read=as_path, key="tls.certfile", path="file", doc="TLS certificate (PEM)"
    )
    tls_keyfile: Path | None = setting(
        None, read=as_path, key="tls.keyfile", path="file", doc="its private key (PEM)"
    )

    def problem(self) -> tuple[str, str] | None:
        """TLS takes both files or neither."""
        if (self.tls_certfile is None) != (self.tls_keyfile is None):
            return "tls.certfile", "TLS on the metrics endpoint needs both certfile and keyfile"
        return None
