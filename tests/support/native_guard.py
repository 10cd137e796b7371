"""The parity tests of the C accelerators need them built and switched on.

A user's install without a C compiler has no `monitor._speedups`: those tests skip there, and
fail in CI (`CI` set), which must test the C path. A caller's RANKMON_SPEEDUPS=off must not
turn them into comparisons of the Python path with itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from monitor import native


def require_speedups() -> None:
    """Call at module level: skip the module (fail it in CI) when the extension is missing."""
    if native.speedups_built():
        return
    if os.environ.get("CI"):
        pytest.fail(
            "the C extension monitor._speedups was not built: CI must test the C path "
            "(pip install -e . builds it with gcc)",
            pytrace=False,
        )
    pytest.skip(
        "the C extension monitor._speedups is not built (no C compiler at install time)",
        allow_module_level=True,
    )


@pytest.fixture(autouse=True, scope="module")
def speedups_switched_on() -> Iterator[None]:
    """Imported by a test module: RANKMON_SPEEDUPS is unset while its tests run."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("RANKMON_SPEEDUPS", raising=False)
        yield
