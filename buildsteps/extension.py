"""dist/margin's own files: the copy of extension/, the manifest, the vendored npm files, the contract.

Rules:
1. extension/** is copied to the root of dist keeping its folders; dev-only files (*.dev.*) and
   __pycache__ are left out.
2. Every file the manifest names (service worker, pages, icons) must exist in dist after the build.
3. A vendored file the extension imports must be an ES module (it exports something); a file it
   injects into tabs must be a classic script (no import/export statement) defining its global.
4. Each vendored package's license text is written to vendor/licenses/.
5. generated/contract.js is rendered by margin.app.contract from the sources being built.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import sys
import tarfile
import traceback
from pathlib import Path
from typing import Any

from buildsteps import BuildError, Report
from buildsteps.fetch import NpmPin, npm_pin, npm_tarball, read_tar_members
from buildsteps.sources import CLASSIC_SCRIPTS, ES_MODULES, NPM_FILES, NPM_FOLDERS, NPM_LICENSES

DEV_ONLY = "*.dev.*"

# An `export` the way an ES module writes one (a classic script never has one).
EXPORT = rb"\bexport\s*(\{|default\b|const\b|function\b|class\b|let\b|var\b)"
# An `import` or `export` statement at the start of a line: a SyntaxError in a classic script.
MODULE_STATEMENT = (
    rb"^\s*(export\s*(\{|\*|default\b|const\b|function\b|class\b|let\b|var\b)"
    rb"|import(\s+[\w{*]|\s*[{*\"']))"
)


def copy_extension(src: Path, dist: Path) -> int:
    """extension/** to the root of dist, keeping folders, leaving out dev-only files (*.dev.*)."""
    if not src.is_dir() or not any(src.iterdir()):
        raise BuildError(
            f"{src} is missing or empty: the extension's pages and service worker "
            f"live there; nothing to build."
        )
    copied = 0
    for path in sorted(src.rglob("*")):
        if path.is_dir() or fnmatch.fnmatch(path.name, DEV_ONLY) or "__pycache__" in path.parts:
            continue
        target = dist / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied += 1
    return copied


def copy_manifest(repo: Path, dist: Path) -> dict[str, Any]:
    source = repo / "manifest.json"
    if not source.exists():
        raise BuildError(f"{source} is missing: the extension cannot be loaded without it.")
    try:
        manifest: dict[str, Any] = json.loads(source.read_text())
    except json.JSONDecodeError as exc:
        raise BuildError(f"{source} is not valid JSON ({exc}).") from exc
    shutil.copyfile(source, dist / "manifest.json")
    return manifest


def manifest_paths(value: object) -> set[str]:
    """Files the manifest points at (service worker, pages, icons), to check they were built."""
    found: set[str] = set()
    if isinstance(value, dict):
        for item in value.values():
            found |= manifest_paths(item)
    elif isinstance(value, list):
        for item in value:
            found |= manifest_paths(item)
    elif isinstance(value, str) and re.fullmatch(r"[\w./-]+\.(js|mjs|html|png|css|json)", value):
        found.add(value.lstrip("/"))
    return found


def check_es_module(rel: str, data: bytes) -> None:
    if not re.search(EXPORT, data):
        raise BuildError(
            f"{rel} is not an ES module (no `export` found): the extension imports it "
            f"with `import`; pick the package's ES build in buildsteps/sources.py."
        )


def check_classic_script(rel: str, data: bytes, global_name: str) -> None:
    if re.search(MODULE_STATEMENT, data, re.M):
        raise BuildError(
            f"{rel} is an ES module (it has an `import` or `export` statement): it is "
            f"injected into tabs as a classic script; pick the package's plain build "
            f"in buildsteps/sources.py."
        )
    name = re.escape(global_name.encode())
    if not re.search(rb"^(function\s+|class\s+|var\s+)" + name + rb"\b", data, re.M):
        raise BuildError(
            f"{rel} does not define `{global_name}` at its top level: the code "
            f"injected after it expects that global; the package layout changed."
        )


def license_name(package: str) -> str:
    return package.replace("@", "").replace("/", "-") + ".txt"


def _wanted_members() -> dict[str, set[str]]:
    wanted: dict[str, set[str]] = {}
    for package, member, _ in NPM_FILES:
        wanted.setdefault(package, set()).add(member)
    for package, license_file in NPM_LICENSES.items():
        wanted.setdefault(package, set())
        if license_file:
            wanted[package].add(license_file)
    return wanted


def place_npm_folder(tarball: Path, folder: str, suffix: str, dest: Path, label: str) -> None:
    """The files of `folder` (ending in `suffix`) of a verified npm tarball, into `dest`."""
    placed = 0
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball, "r:gz") as tar:
        for info in tar:
            name = info.name.split("/", 1)[-1]
            rest = name[len(folder) :] if name.startswith(folder) else ""
            if not info.isfile() or not rest.endswith(suffix) or "/" in rest or rest.startswith("."):
                continue
            handle = tar.extractfile(info)
            if handle is not None:
                (dest / rest).write_bytes(handle.read())
                placed += 1
    if not placed:
        raise BuildError(
            f"{label} has no {folder}*{suffix}: the package layout changed; "
            f"update NPM_FOLDERS in buildsteps/sources.py."
        )


def place_npm_files(pins: dict[str, NpmPin], dist: Path, cache: Path, report: Report) -> dict[str, Any]:
    """Vendor files and the Pyodide core from their verified tarballs. Returns pyodide-lock.json."""
    pyodide_lock: dict[str, Any] = {}
    for package, members_wanted in sorted(_wanted_members().items()):
        pin = npm_pin(pins, package)
        members = read_tar_members(
            npm_tarball(pin, cache, report), members_wanted, f"{package}@{pin.version}"
        )
        for pkg, member, dest in NPM_FILES:
            if pkg != package:
                continue
            if dest in ES_MODULES:
                check_es_module(dest, members[member])
            if dest in CLASSIC_SCRIPTS:
                check_classic_script(dest, members[member], CLASSIC_SCRIPTS[dest])
            (dist / dest).parent.mkdir(parents=True, exist_ok=True)
            (dist / dest).write_bytes(members[member])
            if member == "pyodide-lock.json":
                pyodide_lock = json.loads(members[member])
        for pkg, folder, suffix, dest in NPM_FOLDERS:
            if pkg == package:
                place_npm_folder(
                    npm_tarball(pin, cache, report), folder, suffix, dist / dest, f"{package}@{pin.version}"
                )
        licenses = dist / "vendor" / "licenses"
        licenses.mkdir(parents=True, exist_ok=True)
        license_file = NPM_LICENSES.get(package)
        if license_file:
            text = members[license_file]
        else:
            text = (
                f"{package}@{pin.version} is distributed under the license its package.json "
                f"declares in the npm registry (pyodide: MPL-2.0); the npm package ships no "
                f"license text. Full text: https://www.mozilla.org/en-US/MPL/2.0/\n"
            ).encode()
        (licenses / license_name(package)).write_bytes(text)
    return pyodide_lock


def render_contract(py_root: Path, wheel_name: str) -> str:
    """generated/contract.js, rendered by margin.app.contract from the sources in py_root."""
    if str(py_root) not in sys.path:
        sys.path.insert(0, str(py_root))
    try:
        from margin.app import contract

        rendered: str = contract.render_js(wheel_name)
        return rendered
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise BuildError(
            f"generated/contract.js: margin.app.contract.render_js failed with "
            f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno}). "
            f"Fix py/margin, then build again."
        ) from exc
