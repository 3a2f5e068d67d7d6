"""buildsteps/bundle.py: the side panel's code in dist as one bundle, made by the pinned esbuild.

Checked: the bundle runs each module once, what was imported with import() stays a file of its
own loaded on demand, vendor/ is imported as it is, the page preloads the bundle's static chunks,
and the mistakes bundling would turn into bugs (a second module script, a module outside the
root building a relative URL from import.meta.url, a vendor file bundled) stop the build. The
tests that run esbuild take it from the build's cache (`python3 build.py` puts it there; `build.py
test` builds before pytest runs) and never download.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_tgz, no_network, sri

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from buildsteps import BuildError, bundle, fetch, sources


def cached_esbuild() -> Path | None:
    try:
        package = bundle.esbuild_package()
        pin = fetch.read_npm_lock(REPO / "package-lock.json")[package]
    except (BuildError, KeyError):
        return None
    binary = fetch.cache_dir() / "bin" / package.replace("/", "__") / pin.version / "esbuild"
    return binary if binary.is_file() else None


needs_esbuild = pytest.mark.skipif(
    cached_esbuild() is None or shutil.which("node") is None,
    reason="needs the cached esbuild (python3 build.py) and node",
)

PAGE = """<!doctype html>
<html><head>
  <link rel="stylesheet" href="common/theme.css">
  <link rel="stylesheet" href="panel/sidepanel.css">
  <link rel="stylesheet" href="panel/sessions/drawer.css">
</head><body>
  <script type="module" src="sidepanel.js"></script>
  <script src="panel/event_handlers.js"></script>
  <script src="panel/first_frame.js"></script>
</body></html>
"""

# A small panel: a static graph, a module shared with a lazy import (it counts its runs), the lazy
# import itself (one of LAZY_ENTRIES: a module of panel/ that reaches vendor/ and builds a URL from
# import.meta.url), and the other lazy entry, one folder deeper, which the build bundles at its path too.
FILES = {
    "sidepanel.html": PAGE,
    "sidepanel.js": (
        'import { first } from "./early.js";\nimport { part } from "./panel/part.js";\n'
        "globalThis.order.push('entry');\n"
        'export const lazy = () => import("./panel/markdown.js");\nexport const seen = [first, part];\n'
    ),
    "early.js": "globalThis.order = ['early'];\nexport const first = 1;\n",
    "panel/part.js": 'import { shared } from "../shared.js";\nexport const part = shared();\n',
    "shared.js": "globalThis.runs = (globalThis.runs || 0) + 1;\nexport const shared = () => globalThis.runs;\n",
    "panel/markdown.js": (
        'import { shared } from "../shared.js";\nimport lib from "../vendor/lib.js";\n'
        'export const url = new URL("../vendor/style.css", import.meta.url).href;\n'
        "export const value = [shared(), lib];\n"
    ),
    "vendor/lib.js": "export default 'vendor';\n",
    "panel/sessions/drawer.js": 'import { shared } from "../../shared.js";\nexport const opened = shared();\n',
    **{name: f".{Path(name).stem} {{ color: red; }}\n" for name in bundle.INLINED_STYLESHEETS},
    **{name: f"globalThis.{Path(name).stem} = 1;\n" for name in bundle.CLASSIC_SCRIPTS},
}


def make_dist(root: Path, files: dict[str, str] = FILES) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@needs_esbuild
def test_the_bundle_runs_each_module_once_and_keeps_lazy_imports_lazy(tmp_path):
    dist = make_dist(tmp_path / "dist")
    esbuild = cached_esbuild()
    assert esbuild is not None
    written = bundle.bundle_panel(dist, esbuild)

    assert "sidepanel.js" in written and not (dist / ".bundle").exists()
    entry = (dist / "sidepanel.js").read_text()
    assert "import(" in entry and "globalThis.order = ['early']" not in entry.split("import(")[1]
    assert {"panel/markdown.js", "panel/sessions/drawer.js"} <= set(
        written
    )  # each lazy entry at its own path
    assert 'from "../vendor/lib.js"' in (dist / "panel/markdown.js").read_text()  # vendor/ stays as it is
    html = (dist / "sidepanel.html").read_text()
    chunks = [name for name in written if name.startswith("chunk-")]
    assert chunks  # shared.js, shared by the bundle and the lazy import
    preloads = "".join(f'<link rel="modulepreload" href="{chunk}">\n  ' for chunk in sorted(chunks))
    assert preloads + '<script type="module" src="sidepanel.js">' in html

    # Run it: each module once, early.js before the rest, the lazy part loaded on demand and the
    # same instance as the page's own import of its path.
    script = (
        "const m = await import('./sidepanel.js');\n"
        "const before = globalThis.runs;\n"
        "const lazy = await m.lazy();\n"
        "const same = lazy === (await import('./panel/markdown.js'));\n"
        "const sessions = await import('./panel/sessions/drawer.js');\n"
        "console.log(JSON.stringify({ order: globalThis.order, before, runs: globalThis.runs, seen: m.seen,"
        " value: lazy.value, url: lazy.url.endsWith('/dist/vendor/style.css'), same, opened: sessions.opened }));\n"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script], cwd=dist, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == {
        "order": ["early", "entry"],
        "before": 1,
        "runs": 1,
        "seen": [1, 1],
        "value": [1, "vendor"],
        "url": True,
        "same": True,
        "opened": 1,
    }


@needs_esbuild
def test_the_bundle_is_the_same_bytes_every_build(tmp_path):
    esbuild = cached_esbuild()
    assert esbuild is not None
    outputs = []
    for name in ("one", "two"):
        dist = make_dist(tmp_path / name)
        written = bundle.bundle_panel(dist, esbuild)
        outputs.append({f: (dist / f).read_bytes() for f in [*written, "sidepanel.html"]})
    assert outputs[0] == outputs[1]


@needs_esbuild
def test_a_module_outside_the_root_building_a_relative_url_stops_the_build(tmp_path):
    files = {**FILES, "panel/part.js": 'export const part = new URL("./x.css", import.meta.url).href;\n'}
    dist = make_dist(tmp_path / "dist", files)
    esbuild = cached_esbuild()
    assert esbuild is not None
    with pytest.raises(
        BuildError, match=r"extension/panel/part.js builds a relative URL from import.meta.url"
    ):
        bundle.bundle_panel(dist, esbuild)
    assert not (dist / ".bundle").exists()
    assert (dist / "sidepanel.js").read_text() == FILES["sidepanel.js"]  # nothing written


@needs_esbuild
def test_a_lazy_import_not_listed_as_an_entry_stops_the_build(tmp_path):
    files = {
        **FILES,
        "panel/part.js": 'export const part = 1;\nglobalThis.later = () => import("./extra.js");\n',
    }
    dist = make_dist(tmp_path / "dist", {**files, "panel/extra.js": "export default 1;\n"})
    esbuild = cached_esbuild()
    assert esbuild is not None
    with pytest.raises(
        BuildError, match=r"imports extra-\w+\.js with import\(\), which is not one of LAZY_ENTRIES"
    ):
        bundle.bundle_panel(dist, esbuild)


def test_a_page_loading_another_module_or_preloading_one_stops_the_build():
    bundle.check_page(PAGE)
    second = PAGE.replace("<script", '<script type="module" async src="early.js"></script>\n  <script', 1)
    with pytest.raises(BuildError, match="one module script"):
        bundle.check_page(second)
    with pytest.raises(BuildError, match="1 modulepreload"):
        bundle.check_page(
            PAGE.replace("<script", '<link rel="modulepreload" href="panel/part.js">\n<script', 1)
        )
    with pytest.raises(BuildError, match="0 module script"):
        bundle.check_page("<html></html>")


def test_the_page_stylesheets_are_inlined_and_one_that_would_change_meaning_stops_the_build(tmp_path):
    page = "".join(f'<link rel="stylesheet" href="{name}">\n' for name in bundle.INLINED_STYLESHEETS)
    for name in bundle.INLINED_STYLESHEETS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f".{Path(name).stem} {{ color: red; }}\n", encoding="utf-8")
    inlined = bundle.inline_stylesheets(page, tmp_path)
    assert "<link" not in inlined
    assert inlined.count("<style>") == len(bundle.INLINED_STYLESHEETS)
    assert ".sidepanel { color: red; }" in inlined
    for css in ('.a { background: url("x.png"); }', '@import "other.css";', "/* </style><script> */"):
        (tmp_path / "common/theme.css").write_text(css, encoding="utf-8")
        with pytest.raises(BuildError, match=r"theme\.css has a url"):
            bundle.inline_stylesheets(page, tmp_path)
    (tmp_path / "common/theme.css").write_text(".theme {}", encoding="utf-8")
    with pytest.raises(BuildError, match=r"must link panel/sidepanel\.css once"):
        bundle.inline_stylesheets(page.replace('href="panel/sidepanel.css"', 'href="other.css"'), tmp_path)


def test_the_two_classic_scripts_are_one_file_in_the_order_the_page_ran_them(tmp_path):
    page = "<body>\n  " + "\n  ".join(f'<script src="{name}"></script>' for name in bundle.CLASSIC_SCRIPTS)
    for name in bundle.CLASSIC_SCRIPTS:
        source = (REPO / "extension" / name).read_text(encoding="utf-8")
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source, encoding="utf-8")
    joined_page = bundle.join_classic_scripts(page, tmp_path)
    assert joined_page.count("<script") == 1 and 'src="panel/first_frame.js"' in joined_page
    joined = (tmp_path / "panel/first_frame.js").read_text(encoding="utf-8")
    assert joined.index("function withoutEventHandlers") < joined.index("function showKeptFrame")
    if shutil.which("node"):  # it still parses as one classic script
        check = subprocess.run(
            ["node", "--check", str(tmp_path / "panel/first_frame.js")], capture_output=True
        )
        assert check.returncode == 0, check.stderr
    with pytest.raises(BuildError, match=r"must load panel/event_handlers\.js, panel/first_frame\.js"):
        bundle.join_classic_scripts(page.replace("event_handlers", "other"), tmp_path)


def test_a_bundled_vendor_file_stops_the_build(tmp_path):
    meta = {"outputs": {".bundle/markdown.js": {"inputs": {"markdown.js": {}, "vendor/lib.js": {}}}}}
    with pytest.raises(BuildError, match=r"vendor/lib\.js was bundled"):
        bundle.check_inputs(tmp_path, meta)


def test_esbuild_is_pinned_for_each_platform_it_is_taken_for():
    pins = fetch.read_npm_lock(REPO / "package-lock.json")
    declared = json.loads((REPO / "package.json").read_text())["devDependencies"]["esbuild"]
    assert pins["esbuild"].version == declared
    for package in sources.ESBUILD_PACKAGES.values():
        assert pins[package].version == declared and pins[package].integrity.startswith("sha512-")
    assert bundle.esbuild_package("linux", "x86_64") == "@esbuild/linux-x64"
    assert bundle.esbuild_package("darwin", "arm64") == "@esbuild/darwin-arm64"
    with pytest.raises(BuildError, match="No esbuild binary is pinned for sunos sparc"):
        bundle.esbuild_package("sunos", "sparc")


def test_esbuild_comes_from_its_verified_npm_tarball_unpacked_once(tmp_path, monkeypatch):
    tarball = make_tgz({"bin/esbuild": b"#!/bin/sh\necho esbuild\n", "package.json": b"{}"})
    package = bundle.esbuild_package()
    entry = {"version": "9.9.9", "integrity": sri(tarball)}
    (tmp_path / "package-lock.json").write_text(json.dumps({"packages": {f"node_modules/{package}": entry}}))
    cache = tmp_path / "cache"
    (cache / "npm").mkdir(parents=True)
    (cache / "npm" / f"{package.replace('/', '__')}-9.9.9.tgz").write_bytes(tarball)
    monkeypatch.setattr(fetch, "urlopen", no_network)

    binary = bundle.esbuild_binary(tmp_path, cache)
    assert binary.read_bytes() == b"#!/bin/sh\necho esbuild\n" and os.access(binary, os.X_OK)
    (cache / "npm" / f"{package.replace('/', '__')}-9.9.9.tgz").unlink()
    assert bundle.esbuild_binary(tmp_path, cache) == binary  # unpacked once per version

    # A tampered tarball is never unpacked.
    (binary.with_name(".integrity")).unlink()
    (cache / "npm" / f"{package.replace('/', '__')}-9.9.9.tgz").write_bytes(
        make_tgz({"bin/esbuild": b"evil"})
    )
    monkeypatch.setattr(fetch, "urlopen", lambda url, timeout: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(BuildError):
        bundle.esbuild_binary(tmp_path, cache)
