"""What the tests need on the machine: .venv with the hashed test requirements, and Chromium.

Rules:
1. .venv/ gets requirements-test.txt with `--require-hashes`: every package, dependencies
   included, is pinned to a version and to the sha256 of its files, like the build's downloads.
2. pip runs only when requirements-test.txt changed (its sha256 is stamped inside .venv/).
3. Chromium is Debian's package (/usr/bin/chromium, or $CHROMIUM); as root it is installed with
   apt-get on the spot, otherwise the error names the command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from buildsteps import REPO, BuildError
from buildsteps.fetch import has_pip

NO_CHROMIUM = (
    "Chromium was not found at /usr/bin/chromium (or $CHROMIUM). Install it "
    "with `sudo apt-get install -y chromium`, or set CHROMIUM to its path."
)


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
        raise BuildError(NO_CHROMIUM)
    print("Installing Chromium (apt-get install -y chromium) ...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        if subprocess.run(command, env=env).returncode != 0:
            raise BuildError(
                f"`{' '.join(command)}` failed: install Chromium yourself, or set "
                f"CHROMIUM to an existing Chromium binary."
            )
    chromium = find_chromium()
    if not chromium:
        raise BuildError("apt-get installed chromium but /usr/bin/chromium is still missing.")
    return chromium


def chromium_command(chromium: Path, dist: Path, profile: Path) -> list[str]:
    command = [
        str(chromium),
        f"--load-extension={dist}",
        f"--disable-extensions-except={dist}",
        f"--user-data-dir={profile}",
        "--no-first-run",
    ]
    if is_root():
        command.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox on
    return command


def requirements_digest(requirements: Path) -> str:
    return hashlib.sha256(requirements.read_bytes()).hexdigest()


def pip_install_command(python: Path, requirements: Path) -> list[str]:
    return [
        str(python), "-m", "pip", "install", "--disable-pip-version-check",
        "--require-hashes", "--only-binary=:all:", "-r", str(requirements),
    ]  # fmt: skip


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
            raise BuildError(
                f"`{sys.executable} -m venv {venv}` failed; on Debian/Ubuntu install python3-venv first."
            )
    stamp = venv / ".requirements.sha256"
    digest = requirements_digest(requirements)
    if not stamp.exists() or stamp.read_text().strip() != digest:
        print(f"Installing {requirements.name} into {venv.name}/ ...", flush=True)
        if subprocess.run(pip_install_command(python, requirements)).returncode != 0:
            raise BuildError(
                f"pip could not install {requirements.name} into {venv}: see its "
                f"output above (is PyPI reachable? a hash mismatch names the file)."
            )
        stamp.write_text(digest + "\n")
    return python
