"""The linters `build.py test` runs before pytest; any finding fails the command.

    ruff check, ruff format --check   py/, build.py, buildsteps/, bench/, tests/   (ruff.toml)
    mypy                              py/margin, build.py, buildsteps/, bench/      (mypy.ini)
    biome lint                        extension/ without vendor/ and generated/    (biome.jsonc)
    node --check                      every extension/**/*.js, as a module or a classic script

Rules:
1. Every linter is pinned: ruff and mypy by requirements-test.txt (hashed), Biome by
   package-lock.json, its native binary fetched from the npm tarball of BIOME_PACKAGE and checked
   against the lock's sha512 like every other download (npm itself is not needed).
2. All linters run, then each one that failed is named with the command that reproduces it.
3. node checks a file as an ES module when the extension loads it as one (the manifest's module
   service worker, a `<script type="module">` page script, or anything they import), and as a
   classic script otherwise (content scripts injected into tabs), where `import` would not parse.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from buildsteps import REPO, BuildError, Report
from buildsteps.fetch import cache_dir, npm_pin, npm_tarball, read_npm_lock
from buildsteps.sources import BIOME_BINARY, BIOME_PACKAGE

PYTHON_PATHS = ("py", "build.py", "buildsteps", "bench", "tests")
MYPY_PATHS = ("py/margin", "build.py", "buildsteps", "bench")
JS_ROOT = "extension"
JS_SKIPPED = ("vendor", "generated")  # not ours: fetched or rendered by the build

IMPORT_FROM = re.compile(r"""^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]""", re.M)
BARE_IMPORT = re.compile(r"""^\s*import\s*['"]([^'"]+)['"]""", re.M)
DYNAMIC_IMPORT = re.compile(r"""\bimport\(\s*['"]([^'"]+)['"]\s*\)""")
# A module Worker started by a module (`new Worker(new URL("./x.js", import.meta.url), {type: "module"})`);
# a path from the extension's root ("/panel/sessions/x.js") is one too (buildsteps/bundle.py rule 3).
MODULE_WORKER = re.compile(
    r"""new\s+Worker\(\s*new\s+URL\(\s*["']([./][^"']+)["']\s*,\s*import\.meta\.url\s*\)\s*,\s*\{\s*type:\s*["']module["']"""
)
MODULE_SCRIPT = re.compile(r"""<script\b[^>]*\btype=["']module["'][^>]*\bsrc=["']([^"']+)["']""")


@dataclass(frozen=True)
class Check:
    name: str
    command: list[str]
    stdin: Path | None = None  # a file fed to the command's standard input

    def shown(self, repo: Path) -> str:
        words = [_relative(word, repo) for word in self.command]
        text = " ".join(shlex.quote(word) for word in words)
        return text + (f" < {_relative(str(self.stdin), repo)}" if self.stdin else "")


def _relative(word: str, repo: Path) -> str:
    path = Path(word)
    if path.is_absolute() and path.is_relative_to(repo):
        return str(path.relative_to(repo))
    return word


# --- Biome -------------------------------------------------------------------------------------


def biome_binary(repo: Path = REPO, cache: Path | None = None, report: Report | None = None) -> Path:
    """Biome's binary from its verified npm tarball, unpacked once per version into the cache."""
    cache = cache or cache_dir()
    pin = npm_pin(read_npm_lock(repo / "package-lock.json"), BIOME_PACKAGE)
    tarball = npm_tarball(pin, cache, report)
    binary = cache / "biome" / pin.version / BIOME_BINARY
    stamp = binary.with_name(".integrity")
    if binary.is_file() and stamp.is_file() and stamp.read_text() == pin.integrity:
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball, "r:gz") as tar:
        member = next((m for m in tar if m.isfile() and m.name == f"package/{BIOME_BINARY}"), None)
        handle = tar.extractfile(member) if member else None
        if handle is None:
            raise BuildError(
                f"{BIOME_PACKAGE}@{pin.version} has no package/{BIOME_BINARY}: the package "
                f"layout changed; update BIOME_BINARY in buildsteps/sources.py."
            )
        partial = binary.with_name(BIOME_BINARY + ".part")
        partial.write_bytes(handle.read())
    partial.chmod(0o755)
    partial.replace(binary)
    stamp.write_text(pin.integrity)
    return binary


# --- node --check ------------------------------------------------------------------------------


def js_sources(extension: Path) -> list[Path]:
    return sorted(
        p for p in extension.rglob("*.js") if not set(p.relative_to(extension).parts[:-1]) & set(JS_SKIPPED)
    )


def module_entry_points(repo: Path) -> set[Path]:
    """The scripts the browser loads as ES modules: the module service worker, page modules."""
    extension = repo / JS_ROOT
    manifest = json.loads((repo / "manifest.json").read_text())
    background = manifest.get("background", {})
    entries = set()
    if background.get("type") == "module" and background.get("service_worker"):
        entries.add(extension / background["service_worker"])
    for page in extension.rglob("*.html"):
        for src in MODULE_SCRIPT.findall(page.read_text()):
            entries.add(page.parent / src)
    return {p.resolve() for p in entries}


def es_modules(repo: Path) -> set[Path]:
    """The entry points and every file they import, statically or with import(), or start as a
    module Worker, followed transitively (relative specifiers only: bare ones are not files of
    the extension)."""
    seen: set[Path] = set()
    todo = list(module_entry_points(repo))
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        text = path.read_text()
        for specifier in [
            *IMPORT_FROM.findall(text),
            *BARE_IMPORT.findall(text),
            *DYNAMIC_IMPORT.findall(text),
            *MODULE_WORKER.findall(text),
        ]:
            if specifier.startswith("."):
                todo.append((path.parent / specifier).resolve())
            elif specifier.startswith("/"):  # from the extension's root
                todo.append((repo / JS_ROOT / specifier.lstrip("/")).resolve())
    return seen


def node_checks(repo: Path, node: str) -> list[Check]:
    modules = es_modules(repo)
    checks = []
    for path in js_sources(repo / JS_ROOT):
        kind = "module" if path.resolve() in modules else "commonjs"
        rel = path.relative_to(repo)
        checks.append(Check(f"node --check ({kind}) {rel}", [node, f"--input-type={kind}", "--check"], path))
    return checks


# --- all of them -------------------------------------------------------------------------------


def lint_checks(
    python: Path, repo: Path = REPO, cache: Path | None = None
) -> tuple[list[Check], list[Check]]:
    """The linters, and the node syntax check of each script."""
    node = shutil.which("node")
    if not node:
        raise BuildError(
            "node was not found: the extension's scripts are checked with it. "
            "Install it with `sudo apt-get install -y nodejs`."
        )
    biome = biome_binary(repo, cache)
    py = str(python)
    linters = [
        Check("ruff check", [py, "-m", "ruff", "check", *PYTHON_PATHS]),
        Check("ruff format --check", [py, "-m", "ruff", "format", "--check", *PYTHON_PATHS]),
        Check("mypy", [py, "-m", "mypy", *MYPY_PATHS]),
        Check("biome lint", [str(biome), "lint", "--error-on-warnings", JS_ROOT]),
    ]
    return linters, node_checks(repo, node)


def _passes(check: Check, repo: Path) -> bool:
    with check.stdin.open("rb") if check.stdin else open(os.devnull, "rb") as stdin:
        done = subprocess.run(check.command, cwd=repo, stdin=stdin, env=dict(os.environ, NO_COLOR="1"))
    return done.returncode == 0


def run_lint(python: Path, repo: Path = REPO, cache: Path | None = None) -> list[Check]:
    """Run every linter from repo; returns the ones that failed (after naming them)."""
    linters, scripts = lint_checks(python, repo, cache)
    failed = []
    for check in linters:
        print(f"lint: {check.name}", flush=True)
        if not _passes(check, repo):
            failed.append(check)
    print(f"lint: node --check on {len(scripts)} scripts", flush=True)
    failed += [check for check in scripts if not _passes(check, repo)]
    if failed:
        print(f"\nlint: {len(failed)} check(s) failed; reproduce each from {repo}:", flush=True)
        for check in failed:
            print(f"  {check.name}: {check.shown(repo)}", flush=True)
    else:
        print("lint: all clean", flush=True)
    return failed
