"""One row of the benchmark table, as every bench_*.py module reports it to bench/run.py."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any


def result(
    name: str,
    value: float | None,
    unit: str,
    target: float | None = None,
    *,
    compare: str = "below",
    samples: list[float] | None = None,
    note: str = "",
) -> dict[str, Any]:
    """`target` is the goal `value` should be `compare` ("below" or "above"); None: no goal."""
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "target": target,
        "compare": compare,
        "samples": samples or [],
        "note": note,
    }


def median(samples: list[float]) -> float:
    """The median, to the hundredth: the figure every table row reports of its samples."""
    return round(statistics.median(samples), 2)


def python_child(code: str, *args: str, what: str) -> Any:
    """Run `code` in a fresh CPython (so a first call includes its imports) with `args`; the JSON
    of its last line of output. A child that fails raises with the end of its stderr."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
