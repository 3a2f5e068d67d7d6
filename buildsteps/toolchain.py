"""What the tests need on the machine: .venv with the hashed test requirements, and Chromium.

Rules:
1. .venv/ gets requirements-test.txt with `--require-hashes`: every package, dependencies
   included, is pinned to a version and to the sha256 of its files, like the build's downloads.
2. pip runs only when requirements-test.txt changed (its sha256 is stamped inside .venv/).
3. Chromium is Debian's package (/usr/bin/chromium, or $CHROMIUM); as root it is installed with
   apt-get on the spot, otherwise the error names the command. Chromium's translations
   (chromium-l10n: `--lang=ja` needs them) and Debian's CJK fonts (fonts-noto-cjk: Chinese,
   Japanese and Korean text would render as boxes) come the same way; without root, a missing
   one is a warning, not an error.
4. axe-core (the accessibility checker of the e2e tests) is the verified npm tarball pinned in
   package-lock.json; its one script is unpacked once per version into the cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from buildsteps import REPO, BuildError
from buildsteps.fetch import cache_dir, has_pip, npm_pin, npm_tarball, read_npm_lock, read_tar_members
from buildsteps.sources import AXE_FILE, AXE_PACKAGE

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


# Rule 3: what the browser needs to show Margin in its seven languages: Chromium's own UI
# translations (without them chrome.i18n answers in English whatever --lang says) and CJK fonts.
LANGUAGE_PACKAGES = {
    "chromium-l10n": Path("/usr/lib/chromium/locales/ja.pak"),
    "fonts-noto-cjk": Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),
}


def ensure_language_packages() -> None:
    """Rule 3: installed on the spot when we are root; otherwise a warning naming the command."""
    missing = [name for name, marker in LANGUAGE_PACKAGES.items() if not marker.is_file()]
    if not missing:
        return
    command = ["apt-get", "install", "-y", *missing]
    if not is_root() or not shutil.which("apt-get"):
        print(
            f"warning: {', '.join(missing)} not installed: the language tests cannot start Chromium "
            f"in Japanese, and CJK text renders as boxes (sudo {' '.join(command)}).",
            file=sys.stderr,
        )
        return
    print(f"Installing {', '.join(missing)} ({' '.join(command)}) ...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in (["apt-get", "update"], command):
        if subprocess.run(step, env=env).returncode != 0:
            raise BuildError(f"`{' '.join(step)}` failed: install {', '.join(missing)} yourself.")


def axe_script(repo: Path = REPO, cache: Path | None = None) -> Path:
    """Rule 4: axe-core's script from its verified npm tarball, unpacked once per version."""
    cache = cache or cache_dir()
    pin = npm_pin(read_npm_lock(repo / "package-lock.json"), AXE_PACKAGE)
    script = cache / "axe-core" / pin.version / AXE_FILE
    stamp = script.with_name(".integrity")
    if script.is_file() and stamp.is_file() and stamp.read_text() == pin.integrity:
        return script
    data = read_tar_members(npm_tarball(pin, cache), {AXE_FILE}, f"{AXE_PACKAGE}@{pin.version}")[AXE_FILE]
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_bytes(data)
    stamp.write_text(pin.integrity)
    return script


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
