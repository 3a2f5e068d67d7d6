"""One row of the benchmark table, as every bench_*.py module reports it to bench/run.py."""

from __future__ import annotations

import statistics
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
