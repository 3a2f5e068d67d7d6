"""The margin wheel, packed by hand from py/ (no setuptools: the build is standard library only).

Rules:
1. The wheel is pure Python (`py3-none-any`), installable by pip and by micropip, and holds only
   py/margin's .py files plus METADATA, WHEEL and a RECORD whose hashes match every entry.
2. It is deterministic: sorted entries, a fixed timestamp and fixed permissions, so the same
   sources give the same bytes (the service worker's snapshot key is a hash of them).
3. py/pyproject.toml's version names the wheel and must equal margin.__version__.
"""

from __future__ import annotations

import base64
import hashlib
import re
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from buildsteps import BuildError

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamp of every wheel entry (determinism)


def project_metadata(py_root: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((py_root / "pyproject.toml").read_text())["project"]
    return project


def wheel_filename(name: str, version: str) -> str:
    return f"{re.sub(r'[-_.]+', '_', name)}-{version}-py3-none-any.whl"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def build_wheel(py_root: Path, out_dir: Path) -> Path:
    """Pack py/margin into a pure-Python wheel that pip and micropip install. Deterministic."""
    project = project_metadata(py_root)
    name, version = project["name"], project["version"]
    dist_name = re.sub(r"[-_.]+", "_", name)
    package_dir = py_root / dist_name
    sources = sorted(p for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts)
    if not sources:
        raise BuildError(f"No .py files under {package_dir}: nothing to put in the wheel.")

    files = [(p.relative_to(py_root).as_posix(), p.read_bytes()) for p in sources]
    info = f"{dist_name}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if project.get("description"):
        metadata.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        metadata.append(f"Requires-Python: {project['requires-python']}")
    files.append((f"{info}/METADATA", ("\n".join(metadata) + "\n").encode()))
    wheel_meta = "Wheel-Version: 1.0\nGenerator: margin build.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files.append((f"{info}/WHEEL", wheel_meta.encode()))
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
        raise BuildError(
            f"py/pyproject.toml says version {declared} but py/margin/__init__.py "
            f"says __version__ = {match.group(1)!r}: make them the same."
        )
