"""The test command's tools: build.py as the entry point, the hashed test requirements, and the
linters (Biome from its verified npm tarball; node checking each script the way the extension
loads it; a failing linter named with the command that reproduces it).

No test here touches the network.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from helpers import make_tgz, no_network, sri

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import build  # the entry point, beside buildsteps/
from buildsteps import fetch, lint, sources, toolchain


def test_build_py_is_the_entry_point_and_refuses_unknown_commands(capsys):
    assert build.main(["help"]) == 0
    assert "python3 build.py test" in capsys.readouterr().out
    assert build.main(["frobnicate"]) == 2
    assert "Unknown command 'frobnicate'" in capsys.readouterr().err


def test_every_test_requirement_is_pinned_with_a_hash_and_installed_requiring_them():
    text = (REPO / "requirements-test.txt").read_text().replace("\\\n", " ")
    requirements = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert {"pytest", "playwright", "pillow", "ruff", "mypy"} <= {r.split("==")[0] for r in requirements}
    for requirement in requirements:
        assert "==" in requirement.split()[0] and "--hash=sha256:" in requirement, requirement
    assert "--require-hashes" in toolchain.pip_install_command(Path("python"), Path("r.txt"))


def test_biome_comes_from_its_verified_npm_tarball(tmp_path, monkeypatch):
    tarball = make_tgz({"biome": b"#!/bin/sh\necho biome\n", "package.json": b"{}"})
    entry = {"version": "9.9.9", "integrity": sri(tarball)}
    (tmp_path / "package-lock.json").write_text(
        json.dumps({"packages": {f"node_modules/{sources.BIOME_PACKAGE}": entry}})
    )
    cache = tmp_path / "cache"
    (cache / "npm").mkdir(parents=True)
    (cache / "npm" / f"{sources.BIOME_PACKAGE.replace('/', '__')}-9.9.9.tgz").write_bytes(tarball)
    monkeypatch.setattr(fetch, "urlopen", no_network)

    binary = lint.biome_binary(tmp_path, cache)
    assert binary.read_bytes() == b"#!/bin/sh\necho biome\n" and os.access(binary, os.X_OK)
    assert lint.biome_binary(tmp_path, cache) == binary  # unpacked once per version

    declared = json.loads((REPO / "package.json").read_text())["devDependencies"]["@biomejs/biome"]
    pin = fetch.read_npm_lock(REPO / "package-lock.json")[sources.BIOME_PACKAGE]
    assert pin.version == declared and pin.integrity.startswith("sha512-")


def test_node_checks_each_script_the_way_the_extension_loads_it(tmp_path):
    (tmp_path / "manifest.json").write_text(
        json.dumps({"background": {"service_worker": "background.js", "type": "module"}})
    )
    scripts = {
        "background.js": "import { a } from './a.js';\nexport {\n  a,\n} from './a.js';\n",
        "a.js": "export const a = 1;\nconst later = () => import('./panel/lazy.js');\nimport('./panel/part.js');\n",
        "panel/lazy.js": "export default 1;\n",
        "page.js": "import { a } from './a.js';\n"
        'const w = new Worker(new URL("./work/worker.js", import.meta.url), { type: "module" });\n',
        "work/worker.js": "import { a } from '../a.js';\n",
        # from the extension's root, as a module bundled elsewhere writes it (buildsteps/bundle.py)
        "panel/part.js": 'new Worker(new URL("/work/other.js", import.meta.url), { type: "module" });\n',
        "work/other.js": "export {};\n",
        "content/extract.js": "globalThis.x = 1;\n",
        "vendor/lib.js": "export default 1;\n",
    }
    for name, text in scripts.items():
        (tmp_path / "extension" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "extension" / name).write_text(text)
    (tmp_path / "extension" / "panel.html").write_text('<script type="module" src="page.js"></script>')

    checks = {c.name.split()[-1]: c for c in lint.node_checks(tmp_path, "node")}
    assert {name: c.command[1] for name, c in checks.items()} == {
        "extension/a.js": "--input-type=module",
        "extension/background.js": "--input-type=module",
        "extension/page.js": "--input-type=module",
        "extension/panel/lazy.js": "--input-type=module",
        "extension/work/worker.js": "--input-type=module",  # a module Worker the page starts
        "extension/panel/part.js": "--input-type=module",
        "extension/work/other.js": "--input-type=module",  # one started by a root-absolute URL
        "extension/content/extract.js": "--input-type=commonjs",
    }  # vendor/ is not ours: skipped
    assert (
        checks["extension/page.js"].shown(tmp_path) == "node --input-type=module --check < extension/page.js"
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_node_refuses_an_import_in_a_classic_script(tmp_path):
    script = tmp_path / "extract.js"
    script.write_text("import x from './y.js';\n")
    assert not lint._passes(
        lint.Check("classic", ["node", "--input-type=commonjs", "--check"], script), tmp_path
    )
    assert lint._passes(lint.Check("module", ["node", "--input-type=module", "--check"], script), tmp_path)


def test_a_failing_linter_is_named_with_the_command_that_reproduces_it(tmp_path, monkeypatch, capsys):
    failing = lint.Check("ruff check", [sys.executable, "-c", "raise SystemExit(1)"])
    passing = lint.Check("mypy", [sys.executable, "-c", "pass"])
    monkeypatch.setattr(lint, "lint_checks", lambda python, repo, cache: ([failing, passing], []))

    assert lint.run_lint(Path(sys.executable), tmp_path) == [failing]
    out = capsys.readouterr().out
    assert "lint: 1 check(s) failed" in out
    assert f"  ruff check: {sys.executable} -c 'raise SystemExit(1)'" in out
