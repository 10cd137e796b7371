"""`monitor/_speedups.pyi` is the one Python signature of the C module: every function the C
bindings parse by keyword takes, in the stub, exactly the names and order the C parses, and
every name the module exports is declared there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from monitor import native

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "monitor" / "_speedups.pyi"
KEYWORDS = re.compile(
    r"static char \*keywords\[\] = \{(?P<names>[^}]*)\};.*?"
    r'PyArg_ParseTupleAndKeywords\([^"]*"[^":]*:(?P<function>\w+)"',
    re.DOTALL,
)


def c_keywords() -> dict[str, list[str]]:
    """function (or type) name -> the keyword names its C binding parses, in order."""
    found: dict[str, list[str]] = {}
    for source in sorted((ROOT / "monitor").rglob("*.c")):
        for match in KEYWORDS.finditer(source.read_text(encoding="utf-8")):
            found[match["function"]] = re.findall(r'"(\w+)"', match["names"])
    return found


def stub_parameters() -> dict[str, list[str]]:
    """function (or class, for its __init__) name -> its parameter names in the stub."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            inits = [
                f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"
            ]
            function = inits[0] if inits else None
        else:
            function = node if isinstance(node, ast.FunctionDef) else None
        if function is not None and isinstance(node, ast.ClassDef | ast.FunctionDef):
            arguments = function.args
            every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            found[node.name] = [a.arg for a in every if a.arg != "self"]
    return found


def test_every_keyword_binding_takes_the_stub_s_names_in_the_stub_s_order() -> None:
    parsed, declared = c_keywords(), stub_parameters()
    assert {"decode_events", "measure_codes", "ideal_rows", "parse_records"} <= set(parsed)
    for function, names in parsed.items():
        assert declared[function] == names, function


def test_every_name_the_module_exports_is_declared_in_the_stub() -> None:
    if not native.speedups_built():
        pytest.skip("the C extension is not built")
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    declared = {
        target.id if isinstance(target, ast.Name) else ""
        for node in tree.body
        for target in (
            [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        )
    } | {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    exported = {name for name in dir(native.speedups) if not name.startswith("__")}
    assert exported <= declared, sorted(exported - declared)
