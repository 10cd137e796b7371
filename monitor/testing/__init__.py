"""What only the tests and the benches share: a fake clock, crash points, mixed traffic, alert
simulations.

Nothing in the product imports from here, and the wheel leaves it out (pyproject.toml
`packages.find.exclude`): the checkout's editable install has it.
"""

from __future__ import annotations

__all__: list[str] = []
