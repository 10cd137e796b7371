"""Access to `../shared` (trec_eval conformance data, Grafana schemas).

A user's clone has no `../shared`: tests that need it skip there, and fail in CI (`CI=true`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


def shared_path(*parts: str) -> Path:
    """The path under `../shared`, skipping the test outside CI when it is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs {path} (the shared folder beside the clone)")
        pytest.skip(f"{path} is not here (only CI and the developers' machines have ../shared)")
    return path
