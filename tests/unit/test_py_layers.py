"""Convention tests for the Python package's layout: subpackages in layers, imports one way.

Rules checked:
1. The layers are listed once, lowest first, in the docstring of py/margin/__init__.py (`- name/`
   lines); every subpackage of py/margin is in that list and every entry is a subpackage. The top
   of py/margin holds at most 12 modules.
2. Every import of a margin module counts: top level or inside a function, relative or absolute,
   `import margin.x` or `from .x import y`; only an `if TYPE_CHECKING:` block is left out (it
   never runs). No cycle among the modules.
3. A module imports from its own layer or a lower one, never from a higher one, unless ALLOWED
   names the edge with its reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_js_imports import find_cycles

ROOT = Path(__file__).resolve().parents[2]
PY = ROOT / "py"
PACKAGE = PY / "margin"

# (importer, imported) -> why this upward import is right. Keep it empty or tiny.
ALLOWED: dict[tuple[str, str], str] = {}


def module_name(path: Path, root: Path = PY) -> str:
    """`margin.images.bound` for py/margin/images/bound.py, `margin.images` for its __init__.py."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def imported_modules(source: str, name: str, is_package: bool, known: set[str]) -> list[str]:
    """Every margin module `source` (the module `name`) imports, in order, TYPE_CHECKING aside.
    `from x import y` counts as x.y when that is a module (`known`), else as x."""
    found: list[tuple[int, str]] = []

    def resolve(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join([*base, *([node.module] if node.module else [])])

    def visit(nodes: list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(list(node.orelse))
                continue
            if isinstance(node, ast.Import):
                found.extend((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "margin")
            elif isinstance(node, ast.ImportFrom):
                target = resolve(node)
                if target.split(".")[0] == "margin":
                    for alias in node.names:
                        full = f"{target}.{alias.name}"
                        found.append((node.lineno, full if full in known else target))
            visit(list(ast.iter_child_nodes(node)))

    visit([ast.parse(source)])
    return [module for _, module in sorted(found)]


def import_graph(package: Path = PACKAGE) -> dict[str, list[str]]:
    """{module: [margin modules it imports]} over every .py file under `package`."""
    paths = sorted(package.rglob("*.py"))
    root = package.parent
    known = {module_name(p, root) for p in paths}
    graph = {}
    for path in paths:
        name = module_name(path, root)
        imported = imported_modules(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)
        graph[name] = [m for m in dict.fromkeys(imported) if m != name]
    return graph


def layer_order(package: Path = PACKAGE) -> list[str]:
    """The layers, lowest first, from the package docstring's `- name/` lines (rule 1)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return re.findall(r"^- (\w+)/", doc, re.M)


def layer_of(module: str) -> str | None:
    """The subpackage a module belongs to (`margin.images.bound` -> images); None at the top."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] != "__init__") else None


def upward_imports(graph: dict[str, list[str]], order: list[str]) -> list[tuple[str, str]]:
    """Every edge from a lower layer to a higher one (rule 3), ALLOWED or not."""
    rank = {layer: i for i, layer in enumerate(order)}
    upward = []
    for module, targets in graph.items():
        here = layer_of(module)
        for target in targets:
            there = layer_of(target)
            if here in rank and there in rank and rank[there] > rank[here]:
                upward.append((module, target))
    return upward


# --- the parser -----------------------------------------------------------------------------------


def test_the_parser_sees_every_kind_of_import():
    source = """
from __future__ import annotations
import json
from typing import TYPE_CHECKING
import margin.storage.keys
from ..base.errors import MarginError
from .. import images
from . import bound as image_bound
if TYPE_CHECKING:
    from ..turn.chat import Outcome
else:
    from ..base import clock

def later():
    from ..settings.options import read_options  # inside a function: it counts too
    import margin.app.api as api
"""
    known = {"margin.images", "margin.images.bound", "margin.settings.options", "margin.base.clock"}
    assert imported_modules(source, "margin.images.figures", False, known) == [
        "margin.storage.keys",
        "margin.base.errors",
        "margin.images",
        "margin.images.bound",
        "margin.base.clock",
        "margin.settings.options",
        "margin.app.api",
    ]
    # A package's __init__ resolves `.` to itself.
    assert imported_modules("from .parts import x", "margin.images", True, set()) == ["margin.images.parts"]


def test_an_upward_import_is_found():
    graph = {
        "margin.base.errors": ["margin.images.parts"],
        "margin.images.parts": ["margin.base.errors", "margin.images.codec"],
        "margin.images.codec": [],
        "margin.turn.chat": ["margin.images.parts"],
    }
    assert upward_imports(graph, ["base", "images", "turn"]) == [
        ("margin.base.errors", "margin.images.parts")
    ]
    assert find_cycles(graph) == [["margin.base.errors", "margin.images.parts", "margin.base.errors"]]


# --- the package ----------------------------------------------------------------------------------


def test_the_layers_are_listed_once_and_name_every_subpackage():
    order = layer_order()
    assert len(order) == len(set(order)) >= 8, f"the layer list in py/margin/__init__.py reads {order}"
    folders = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    assert sorted(order) == folders, "py/margin/__init__.py lists other layers than the subpackages"
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, f"the top of py/margin holds {len(top)} modules: {top}"


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "margin.storage.history" in graph.get("margin.turn.chat", []), "the graph lost chat's imports"
    cycles = find_cycles(graph)
    assert not cycles, "import cycles in py/margin: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_layer_imports_a_higher_one():
    graph = import_graph()
    upward = [edge for edge in upward_imports(graph, layer_order()) if edge not in ALLOWED]
    assert not upward, "upward imports (move the name down, or inject it):\n" + "\n".join(
        f"  {a} -> {b}" for a, b in upward
    )


def test_every_allowed_edge_exists_and_says_why():
    graph = import_graph()
    for (module, target), reason in ALLOWED.items():
        assert target in graph.get(module, []), f"ALLOWED names an import that is gone: {module} -> {target}"
        assert len(reason.split()) >= 5, f"say why {module} may import {target}"
