"""What only the tests and the benches share: crash points, mixed traffic, alert simulations.

Nothing in the product imports from here.
"""

from __future__ import annotations

__all__: list[str] = []
