"""The commands of `build.py`: build, run, test, bench and reliability, each returning an exit status.

Rules:
1. `test` and `bench` set up what they need first (.venv, Chromium, a fresh build) and hand the
   built extension to pytest / bench/run.py through MARGIN_DIST and CHROMIUM.
2. `test` runs the linters (buildsteps.lint) before pytest; when one fails, pytest does not run
   and the command exits 1 after naming the linter and how to reproduce it.
3. A user's mistake is a BuildError; `build.py` prints it and exits 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from buildsteps import REPO, BuildError
from buildsteps.dist import build_and_report
from buildsteps.lint import run_lint
from buildsteps.toolchain import (
    NO_CHROMIUM,
    axe_script,
    chromium_command,
    ensure_chromium,
    ensure_language_packages,
    ensure_venv,
    find_chromium,
)


def prepare(repo: Path = REPO) -> tuple[Path, dict[str, str]]:
    """Everything tests and bench need: venv, Chromium, a fresh build. Returns python + env."""
    python = ensure_venv(repo)
    chromium = ensure_chromium()
    ensure_language_packages()
    dist = build_and_report(repo)
    env = dict(
        os.environ, MARGIN_DIST=str(dist.resolve()), CHROMIUM=str(chromium), MARGIN_AXE=str(axe_script(repo))
    )
    return python, env


def command_build(repo: Path = REPO) -> int:
    build_and_report(repo)
    return 0


# The end-to-end tests spend most of their time waiting on Chromium, Pyodide and the fake
# providers (the whole run's CPU time is about half its wall time on 2 cores), so three of them
# run at a time (pytest-xdist), each file on one worker: a module-scoped browser (the code
# sandbox's, ~15 s to boot) is then started once per file, as without -n. Measured: the 184 tests
# in 10 min 57 s with three, 14 min 27 s with two (a busier machine).
E2E_RUN_IN_PARALLEL = ["-n", "3", "--dist", "loadfile"]
NO_TESTS_COLLECTED = 5  # pytest's exit status when a -k or a path selects nothing in a run


def command_test(args: list[str], repo: Path = REPO) -> int:
    """Lint, then the CPython suites, then the end-to-end suite; arguments go to both pytest runs.

    Two runs, not one: the end-to-end run is parallel, and the reliability suite's table is made
    from the one process's ledger. With paths among the arguments, one plain run of just those.
    """
    if run_lint(ensure_venv(repo), repo):
        return 1
    python, env = prepare(repo)
    pytest = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if any((repo / arg.split("::")[0]).exists() for arg in args if not arg.startswith("-")):
        return subprocess.run([*pytest, *args], cwd=repo, env=env).returncode
    runs = [
        [*pytest, "tests/unit", "tests/reliability", *args],
        [*pytest, "tests/e2e", *E2E_RUN_IN_PARALLEL, *args],
    ]
    statuses = [subprocess.run(run, cwd=repo, env=env).returncode for run in runs]
    return combined_status(statuses)


def combined_status(statuses: list[int]) -> int:
    """The first failure's status; "no tests collected" only when no run collected any."""
    failures = [status for status in statuses if status not in (0, NO_TESTS_COLLECTED)]
    if failures:
        return failures[0]
    return NO_TESTS_COLLECTED if all(s == NO_TESTS_COLLECTED for s in statuses) else 0


def command_bench(repo: Path = REPO) -> int:
    python, env = prepare(repo)
    return subprocess.run([str(python), str(repo / "bench" / "run.py")], cwd=repo, env=env).returncode


def command_reliability(args: list[str], repo: Path = REPO) -> int:
    """The reliability suite alone (CPython, no browser); pytest prints its table
    (tests/reliability/conftest.py)."""
    python = ensure_venv(repo)
    command = [str(python), "-m", "pytest", "tests/reliability", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=repo).returncode


def command_run(args: list[str], repo: Path = REPO) -> int:
    profile: Path | None = None
    if args[:1] == ["--profile"] and len(args) == 2:
        profile = Path(args[1]).expanduser().resolve()
    elif args:
        raise BuildError("usage: python3 build.py run [--profile DIR]")
    chromium = find_chromium()
    if not chromium:
        raise BuildError(NO_CHROMIUM)
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        raise BuildError(
            "No display (DISPLAY is not set), so Chromium has no window to open. "
            "Run it under a virtual display: `xvfb-run python3 build.py run`."
        )
    dist = build_and_report(repo).resolve()
    profile = profile or Path(tempfile.mkdtemp(prefix="margin-profile-"))
    profile.mkdir(parents=True, exist_ok=True)
    print(f"Starting Chromium with the extension (profile {profile}); close it to stop.", flush=True)
    return subprocess.run(chromium_command(chromium, dist, profile)).returncode
