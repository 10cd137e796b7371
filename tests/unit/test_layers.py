"""The package is its data flow: each stage imports only from the stages before it.

Read from the source (every `import` and `from ... import`, at any depth, type-checking
imports included), so an arrow that climbs back up the map fails here before it becomes a
circle. The order is the one docs/ARCHITECTURE.md draws.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "monitor"

# Earlier layers first; a module may import its own layer and any earlier one.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "values", "sections", "declare", "clock", "logs", "limits"),
    ("stats",),
    ("native", "_speedups"),
    ("kafka",),
    ("scoring",),
    ("windows",),
    ("comparisons",),
    ("ingest",),
    ("checkpoint",),
    ("export",),
    ("explain",),
    ("alerting",),
    ("group",),
    ("judging",),
    ("replay",),
    ("judge",),
    ("config",),
    ("dashboards", "trec"),
    ("service",),
    ("demo",),
    ("commands",),
    ("cli",),
)
TESTING = "testing"  # shared by tests and benches: may import anything, imported by nothing


def stage(module: str) -> str:
    """`monitor.windows.engine` -> `windows`; the package itself -> `` (its `__init__`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def rank(name: str) -> int:
    if name == "":
        return 0  # monitor/__init__.py: the version, nothing else
    if name == TESTING:
        return len(LAYERS)  # after everything: see test_no_product_module_imports_...
    for index, layer in enumerate(LAYERS):
        if name in layer:
            return index
    raise AssertionError(f"stage {name!r} is in no layer: add it to LAYERS and the map")


def module_name(path: Path) -> str:
    parts = ["monitor", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import of a rankmon module in the file, relative ones resolved."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            names = [".".join([*base, node.module] if node.module else base)]
        else:
            continue
        for name in names:
            if name == "monitor" or name.startswith("monitor."):
                yield node.lineno, name


def product_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if stage(module_name(p)) != TESTING)


def test_every_stage_imports_only_itself_and_the_stages_before_it() -> None:
    climbing = []
    for path in product_modules():
        own = stage(module_name(path))
        for line, target in imports(path):
            if rank(stage(target)) > rank(own):
                climbing.append(f"{path.relative_to(PACKAGE)}:{line} imports {target}")
    assert climbing == []


def test_no_product_module_imports_the_test_support() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line} imports {target}"
        for path in product_modules()
        for line, target in imports(path)
        if stage(target) == TESTING
    ]
    assert offenders == []


def test_modules_inside_a_stage_import_each_other_without_a_circle() -> None:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        graph[module_name(path)] = {target for _, target in imports(path)}
    modules = set(graph)  # a package is its __init__, which imports what it re-exports
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph.get(name, ())):
            if target not in modules or target == name:
                continue
            if state.get(target) == 1:
                circles.append(
                    [*trail[trail.index(target) :], target] if target in trail else [target]
                )
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = 2

    for name in sorted(modules):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_the_layer_table_names_every_stage_of_the_package() -> None:
    stages = {stage(module_name(path)) for path in PACKAGE.rglob("*.py")} - {"", TESTING}
    listed = {name for layer in LAYERS for name in layer}
    assert stages <= listed, sorted(stages - listed)
