"""The benchmark keeps working: `python3 build.py bench` is not part of CI, so these run the
benchmark's CPython-side measurements (and load every metric module) with the suite."""

import ast
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

run = pytest.importorskip("run", reason="the benchmark needs playwright (build.py test installs it)")


def test_every_metric_module_loads_and_is_listed():
    names = [metric.__name__ for metric in run.all_metrics()]
    assert {
        "cold_start",
        "warm_round_trip",
        "first_paint_200",
        "request_bytes_ratio",
        "bound_in_browser",
        "search_and_open",
        "save_8mb",
        "attach_page",
        "tab_event_wakes",
    } <= set(names)


def test_request_bytes_rows_are_measured_from_the_real_request_builder():
    import bench_images

    rows = [run.Result(**row) for row in bench_images.request_bytes_ratio(grid=((10, 1),))]
    assert len(rows) == 1 and rows[0].unit == "x"
    assert 1.0 < rows[0].value < 1.05  # a placeholder costs a little; pixels would be ~100x


def test_slimming_rows_are_measured_without_a_browser_and_meet_the_prefix_goal():
    import bench_slimming

    assert bench_slimming.slimming_requests in run.browserless_metrics()
    ratio, share_all, share_after_breaks = (run.Result(**row) for row in bench_slimming.slimming_requests())
    assert 0.4 < ratio.value < 0.6  # three 50 K pages: each sent whole only until it turns cold
    assert share_all.value < 100.0  # the two one-time breaks
    assert share_after_breaks.value == 100.0 and share_after_breaks.passed


# The browser rows run Python inside the built extension from strings, where neither the linter nor
# mypy look: a module moved to its concept's package (margin.image_bound -> margin.images.bound)
# left bound_in_browser failing with an ImportError that only `build.py bench` showed.
_PY_IMPORT = re.compile(
    r"^\s*from (margin(?:\.\w+)*) import ([\w, ]+?)(?: as \w+)?\s*$|^\s*import (margin(?:\.\w+)+)", re.M
)
_PY_ROOT = Path(__file__).resolve().parents[2] / "py"


def _module_path(dotted: str) -> Path | None:
    base = _PY_ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def test_every_margin_import_in_the_bench_names_something_that_exists():
    broken = []
    for script in sorted(BENCH.glob("*.py")):
        for match in _PY_IMPORT.finditer(script.read_text(encoding="utf-8")):
            module, names, plain = match.groups()
            if plain:
                if _module_path(plain) is None:
                    broken.append(f"{script.name}: import {plain}")
                continue
            path = _module_path(module)
            if path is None:
                broken.append(f"{script.name}: from {module}")
                continue
            for name in (n.strip() for n in names.split(",") if n.strip()):
                if _module_path(f"{module}.{name}") is None and name not in _top_level_names(path):
                    broken.append(f"{script.name}: from {module} import {name}")
    assert not broken, broken
