"""The side panel's code in dist as one bundle (and the chunks it shares with its lazy imports).

The panel's first paint waited for its ~30 modules to be issued, fetched and compiled one file at
a time on a busy main thread (README.md "Measured"); one file of the same code is issued once.

Rules:
1. Source stays separate ES modules in extension/; dist's sidepanel.js is esbuild's bundle of its
   static import graph (panel/early_read.js included), made from the files already copied into
   dist (generated/contract.js included). What it imports with import() stays lazy: each such
   module is an entry of its own (LAZY_ENTRIES), bundled at its own path, and what the entries
   share is split into chunks (`--splitting`), so no module ever runs twice in the page
   (common/i18n.js holds the page's language) and `import("./panel/sessions/drawer.js")` from the
   page (a test, the bench) gets the panel's own instance. A lazy import that is not in
   LAZY_ENTRIES stops the build.
2. vendor/ is never bundled: the verified files are imported as they are (external), from any
   folder (`./vendor/…` from the root, `../vendor/…` from panel/).
3. The chunks are written at dist's root, beside the entries: a module bundled into a file of
   another folder that builds a relative URL from `import.meta.url` is refused (the URL would
   change): it builds one from the extension's root instead.
4. sidepanel.html loads sidepanel.js as its one module script, with no modulepreload of its own
   (either would load an unbundled copy of a module, run a second time); the build adds a
   modulepreload for each chunk the bundle imports statically, fetched with the bundle, not after,
   right before the module script (in the template first_frame.js starts once the kept frame is
   on screen: sidepanel.html, panel/first_frame.js).
5. The page's stylesheets (`INLINED_STYLESHEETS`, in <head>) are put into it as <style> in dist:
   the kept first frame (panel/first_frame.js, a classic script) cannot run before every stylesheet is
   in, and three requests through the extension's protocol handler came first (README.md
   "Measured"). The extension pages' CSP restricts scripts, not styles; a stylesheet with a url()
   or an @import is refused (inlined, its relative URLs would be the page's).
6. The page's two classic scripts (`CLASSIC_SCRIPTS`, at the end of <body>) are one file in dist,
   panel/first_frame.js with event_handlers.js's text before its own: the parser fetched the
   second only after running the first, ~5 ms before the kept frame could start (docs/performance.md
   "First paint"). Each is a self-contained IIFE, so joined they run as they ran apart.
7. esbuild's native binary comes from its platform's npm package, pinned in package-lock.json and
   checked against the lock's sha512 like every download (fetch.npm_binary). Its output is
   deterministic (chunk names are hashes of their content).
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from buildsteps import REPO, BuildError, Report
from buildsteps.fetch import cache_dir, npm_binary, npm_pin, read_npm_lock
from buildsteps.sources import ESBUILD_BINARY, ESBUILD_PACKAGES

ENTRY = "sidepanel.js"
LAZY_ENTRIES = ("panel/markdown.js", "panel/sessions/drawer.js")  # what the panel imports with import()
PAGE = "sidepanel.html"
SCRIPT_TAG = f'<script type="module" src="{ENTRY}"></script>'
INLINED_STYLESHEETS = ("common/theme.css", "panel/sidepanel.css", "panel/sessions/drawer.css")
CLASSIC_SCRIPTS = ("panel/event_handlers.js", "panel/first_frame.js")  # joined into the last (rule 6)
WORK = ".bundle"  # esbuild's output folder inside dist, emptied into dist's root, then removed

MODULE_SCRIPT = re.compile(r"""<script\b[^>]*\btype=["']module["'][^>]*>""")
MODULEPRELOAD = re.compile(r"""<link\b[^>]*\brel=["']modulepreload["'][^>]*>""")
# new URL("./x", import.meta.url) / new URL(`../x/${y}`, import.meta.url): rule 3.
RELATIVE_META_URL = re.compile(r"""new\s+URL\(\s*["'`]\.{1,2}/[^)]*?,\s*import\.meta\.url""")


def esbuild_package(system: str = sys.platform, machine: str = "") -> str:
    machine = machine or platform.machine()
    package = ESBUILD_PACKAGES.get((system, machine.lower()))
    if package is None:
        known = ", ".join(f"{s} {m}" for s, m in ESBUILD_PACKAGES)
        raise BuildError(
            f"No esbuild binary is pinned for {system} {machine} (the build bundles the side panel "
            f"with it; pinned: {known}): add its @esbuild/ package to ESBUILD_PACKAGES in "
            f"buildsteps/sources.py."
        )
    return package


def esbuild_binary(repo: Path = REPO, cache: Path | None = None, report: Report | None = None) -> Path:
    """Rule 6: esbuild's binary for this machine, from its verified npm tarball."""
    pin = npm_pin(read_npm_lock(repo / "package-lock.json"), esbuild_package())
    return npm_binary(pin, ESBUILD_BINARY, cache or cache_dir(), report)


def check_page(html: str) -> None:
    """Rule 4: the page loads the bundle's entry and nothing else as a module."""
    scripts = MODULE_SCRIPT.findall(html)
    preloads = MODULEPRELOAD.findall(html)
    if scripts != [SCRIPT_TAG[: -len("</script>")]] or preloads:
        raise BuildError(
            f"{PAGE} must load {ENTRY} as its one module script and preload no module (found "
            f"{len(scripts)} module script(s), {len(preloads)} modulepreload(s)): the build bundles "
            f"{ENTRY}'s imports, and an unbundled copy of one of them would run a second time. "
            f"Import the module from {ENTRY} instead."
        )


def check_inputs(dist: Path, meta: dict[str, Any]) -> None:
    """Rules 2 and 3, on the files esbuild put into each output (paths relative to dist)."""
    for output, facts in meta["outputs"].items():
        folder = Path(output).relative_to(WORK).parent
        for rel in facts.get("inputs", {}):
            if rel.startswith("vendor/"):
                raise BuildError(
                    f"{rel} was bundled: vendor/ files must stay as verified (bundle.py rule 2)."
                )
            moved = Path(rel).parent != folder
            if moved and RELATIVE_META_URL.search((dist / rel).read_text(encoding="utf-8")):
                raise BuildError(
                    f"extension/{rel} builds a relative URL from import.meta.url: bundled into "
                    f"{Path(output).relative_to(WORK)}, it would point elsewhere. Build it from the "
                    f'extension\'s root (new URL("/{Path(rel).parent.as_posix()}/…", import.meta.url)).'
                )


def check_lazy_imports(meta: dict[str, Any]) -> None:
    """Rule 1: every file an output imports with import() is one of the entries, at its own path."""
    entries = {f"{WORK}/{name}" for name in (ENTRY, *LAZY_ENTRIES)}
    for output, facts in meta["outputs"].items():
        for item in facts.get("imports", []):
            if (
                item.get("kind") == "dynamic-import"
                and not item.get("external")
                and item["path"] not in entries
            ):
                source = facts.get("entryPoint", output)
                raise BuildError(
                    f"{source} imports {Path(item['path']).name} with import(), which is not one of "
                    f"LAZY_ENTRIES in buildsteps/bundle.py: add the module it loads there, so it keeps "
                    f"its own path in dist."
                )


def static_chunks(meta: dict[str, Any]) -> list[str]:
    """The files the entry's output imports statically (the chunks to preload), by name."""
    entry = meta["outputs"][f"{WORK}/{ENTRY}"]
    found = [
        Path(item["path"]).name
        for item in entry.get("imports", [])
        if item.get("kind") == "import-statement" and not item.get("external")
    ]
    return sorted(set(found))


def bundle_panel(dist: Path, esbuild: Path) -> list[str]:
    """Rules 1-6 on a dist whose files are in place; returns the files written at its root."""
    page = dist / PAGE
    html = page.read_text(encoding="utf-8")
    check_page(html)
    work = dist / WORK
    shutil.rmtree(work, ignore_errors=True)
    command = [
        str(esbuild), ENTRY, *LAZY_ENTRIES, "--bundle", "--splitting", "--format=esm",
        f"--outdir={WORK}", "--outbase=.", "--entry-names=[dir]/[name]", "--chunk-names=[name]-[hash]",
        "--external:./vendor/*", "--charset=utf8", f"--metafile={WORK}/meta.json", "--log-level=warning",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=dist, capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise BuildError(f"esbuild could not bundle {ENTRY}:\n{(done.stderr or done.stdout).strip()}")
    try:
        meta = json.loads((work / "meta.json").read_text())
        check_inputs(dist, meta)
        check_lazy_imports(meta)
        chunks = static_chunks(meta)
        written = []
        for output in sorted(meta["outputs"]):
            name = Path(output).relative_to(WORK).as_posix()
            shutil.copyfile(dist / output, dist / name)
            written.append(name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    preloads = "".join(f'<link rel="modulepreload" href="{name}">\n  ' for name in chunks)
    html = inline_stylesheets(html.replace(SCRIPT_TAG, preloads + SCRIPT_TAG), dist)
    html = join_classic_scripts(html, dist)
    page.write_text(html, encoding="utf-8")
    return written


def inline_stylesheets(html: str, dist: Path) -> str:
    """Rule 5: each of INLINED_STYLESHEETS, linked once by the page, becomes a <style> of its text."""
    for name in INLINED_STYLESHEETS:
        tag = f'<link rel="stylesheet" href="{name}">'
        if html.count(tag) != 1:
            raise BuildError(f"{PAGE} must link {name} once as {tag} (bundle.py rule 5 inlines it).")
        css = (dist / name).read_text(encoding="utf-8")
        if "url(" in css or "@import" in css or "</style" in css.lower():
            raise BuildError(
                f"{name} has a url(), an @import or '</style': inlined into {PAGE} it would change "
                f"meaning (bundle.py rule 5). Keep it out of INLINED_STYLESHEETS."
            )
        html = html.replace(tag, f"<style>/* {name} */\n{css}</style>")
    return html


def join_classic_scripts(html: str, dist: Path) -> str:
    """Rule 6: CLASSIC_SCRIPTS, loaded one after the other by the page, become its last one."""
    tags = [f'<script src="{name}"></script>' for name in CLASSIC_SCRIPTS]
    together = "\n  ".join(tags)
    if html.count(together) != 1:
        raise BuildError(
            f"{PAGE} must load {', '.join(CLASSIC_SCRIPTS)} in this order, next to each other "
            "(bundle.py rule 6)."
        )
    texts = [(dist / name).read_text(encoding="utf-8") for name in CLASSIC_SCRIPTS]
    joined = "".join(
        f"// {name}\n{text.rstrip()}\n;\n" for name, text in zip(CLASSIC_SCRIPTS, texts, strict=True)
    )
    (dist / CLASSIC_SCRIPTS[-1]).write_text(joined, encoding="utf-8")
    return html.replace(together, tags[-1])
