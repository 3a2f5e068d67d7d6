"""The steps of Margin's build, run by `build.py` (the one entry point): each module is one concept.

    sources     what comes from where: the npm files, the Pyodide wheels, the JS linter's binary
    fetch       downloads into the cache, each verified against its pinned hash before use
    wheel       the margin wheel, packed by hand from py/
    icons       the toolbar icons, drawn as PNGs
    extension   dist/margin's files: the copy of extension/, the manifest, the vendored npm files
    bundle      the side panel's modules as one file in dist (esbuild, pinned like the rest)
    dist        one build of dist/margin from all of the above, and its summary line
    toolchain   what tests need on the machine: .venv (hashed requirements) and Chromium
    lint        the linters `build.py test` runs before pytest
    commands    build / run / test / bench, as `build.py` calls them

Rules:
1. Standard library only: this package runs before anything is installed (Python 3.11+).
2. Every byte taken from elsewhere is pinned and verified before it is used (see `fetch`).
3. A failure the user can act on is a `BuildError` whose message is one or two plain sentences
   naming the file or command; `build.py` prints it and exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class BuildError(Exception):
    """A failure the user can act on; its message is one or two plain sentences."""


@dataclass
class Report:
    """What a build did, for the summary line."""

    downloaded: list[str] = field(default_factory=list)
