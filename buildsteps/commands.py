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


def command_test(args: list[str], repo: Path = REPO) -> int:
    if run_lint(ensure_venv(repo), repo):
        return 1
    python, env = prepare(repo)
    suites = ["tests/unit", "tests/reliability", "tests/e2e"]
    command = [str(python), "-m", "pytest", *suites, "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=repo, env=env).returncode


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
