#!/usr/bin/env python3
"""Builds Margin's unpacked extension into dist/margin/, and runs it, its tests and its bench.

    python3 build.py                       build dist/margin/
    python3 build.py run [--profile DIR]   build, then open Chromium with the extension loaded
    python3 build.py test [pytest args]    set up .venv, lint, set up Chromium, build, run pytest
    python3 build.py bench                 set up as for test, build, run bench/run.py
    python3 build.py reliability           the reliability suite and its table (tests/reliability)

Rules:
1. Standard library only: this file runs before anything is installed.
2. This is the one entry point, and only parses the command line: the steps live in the
   buildsteps/ package beside it, one module per concept (see buildsteps/__init__.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info < (3, 11):  # noqa: UP036 (this check is for the Python that is too old)
    sys.exit(
        f"build.py needs Python 3.11 or newer (it reads pyproject.toml with tomllib); "
        f"this is {sys.version.split()[0]}."
    )

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # buildsteps/, when build.py is loaded from elsewhere (the tests)

from buildsteps import BuildError  # noqa: E402 (needs the version check and sys.path above)
from buildsteps.commands import (  # noqa: E402
    command_bench,
    command_build,
    command_reliability,
    command_run,
    command_test,
)

USAGE = __doc__.split("\n\n")[1] if __doc__ else ""


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("build", [])
    try:
        if command == "build":
            return command_build()
        if command == "run":
            return command_run(rest)
        if command == "test":
            return command_test(rest)
        if command == "bench":
            return command_bench()
        if command == "reliability":
            return command_reliability(rest)
        if command in ("-h", "--help", "help"):
            print(USAGE)
            return 0
        known = "build (default), run, test, bench, reliability"
        print(f"Unknown command {command!r}. Commands: {known}.", file=sys.stderr)
        return 2
    except BuildError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
