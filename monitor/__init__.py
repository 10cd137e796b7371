"""rankmon: watches the quality of a production ranker from its judged ranking events."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
