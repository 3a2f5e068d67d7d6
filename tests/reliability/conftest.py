"""The reliability suite: one module per attack surface, each case a hostile input.

Provides the `ledger` fixture (tests/reliability/ledger.py) and, at the end of the run, a table of
cases tried, passed and bytes lost per surface (also written to bench/reliability.json).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from .ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
_tally: dict[str, dict[str, int]] = defaultdict(lambda: {"tried": 0, "passed": 0, "bytes_lost": 0})


@pytest.fixture
def ledger(request: pytest.FixtureRequest) -> Ledger:
    return Ledger(request.node)


def _surface(nodeid: str) -> str:
    name = Path(nodeid.split("::", 1)[0]).stem
    return name.removeprefix("test_")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "tests/reliability/" not in report.nodeid.replace("\\", "/"):
        return
    if report.when == "call" or (report.when == "setup" and report.failed):
        row = _tally[_surface(report.nodeid)]
        row["tried"] += 1
        row["passed"] += int(report.passed)
        row["bytes_lost"] += max((v for k, v in report.user_properties if k == "bytes_lost"), default=0)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _tally:
        return
    rows = sorted(_tally.items())
    total = {k: sum(r[k] for _, r in rows) for k in ("tried", "passed", "bytes_lost")}
    write = terminalreporter.write_line
    write("")
    write(f"{'reliability surface':<28} {'tried':>7} {'passed':>7} {'bytes lost':>11}")
    for name, row in [*rows, ("total", total)]:
        write(f"{name:<28} {row['tried']:>7} {row['passed']:>7} {row['bytes_lost']:>11}")
    report = {"surfaces": dict(rows), "total": total}
    (REPO / "bench" / "reliability.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
