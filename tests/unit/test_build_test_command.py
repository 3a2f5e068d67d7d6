"""`python3 build.py test`: what it runs, and the exit status it gives CI.

The CPython suites run once, serially (the reliability table is made from the one process's
ledger); the end-to-end suite runs two files at a time. A status of 5 ("no tests collected") from
one run is not a failure when the other ran tests (`build.py test -k sessions_e2e`), and a failure
in the first run does not skip the second: CI reports every failing test at once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from buildsteps import commands


@pytest.fixture
def runs(monkeypatch):
    """Each pytest command build.py would start, answered with the next scripted status."""
    started: list[list[str]] = []
    statuses: list[int] = []

    def fake_run(command, cwd=None, env=None):
        started.append(command)
        return subprocess.CompletedProcess(command, statuses.pop(0))

    monkeypatch.setattr(commands, "run_lint", lambda python, repo: 0)
    monkeypatch.setattr(commands, "ensure_venv", lambda repo: Path("python"))
    monkeypatch.setattr(commands, "prepare", lambda repo: (Path("python"), {}))
    monkeypatch.setattr(commands.subprocess, "run", fake_run)
    return started, statuses


def test_the_cpython_suites_run_first_then_the_e2e_suite_two_files_at_a_time(runs):
    started, statuses = runs
    statuses.extend([0, 0])
    assert commands.command_test(["-k", "sessions"]) == 0
    core, e2e = started
    assert core[-4:] == ["tests/unit", "tests/reliability", "-k", "sessions"] and "-n" not in core
    assert e2e[e2e.index("tests/e2e") :] == ["tests/e2e", "-n", "3", "--dist", "loadfile", "-k", "sessions"]


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([5, 0], 0),  # -k matched only end-to-end tests
        ([0, 5], 0),  # -k matched only unit tests
        ([5, 5], 5),  # -k matched nothing: pytest's own status, as before
        ([1, 0], 1),  # a unit test failed: the e2e run still ran, the status is the failure's
        ([0, 1], 1),
        ([5, 2], 2),  # the e2e run was interrupted
    ],
)
def test_the_status_is_the_first_failure_and_no_tests_only_when_no_run_had_any(runs, statuses, expected):
    started, scripted = runs
    scripted.extend(statuses)
    assert commands.command_test([]) == expected
    assert len(started) == 2


def test_a_path_among_the_arguments_runs_just_that_in_one_plain_run(runs):
    started, statuses = runs
    statuses.append(0)
    assert commands.command_test(["tests/unit/test_build.py", "-x"]) == 0
    (only,) = started
    assert only[-2:] == ["tests/unit/test_build.py", "-x"] and "-n" not in only
