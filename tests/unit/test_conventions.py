"""Convention tests: the JS shells and the Python backend agree on names, and the rules hold."""

import re
from pathlib import Path

from margin.app import api
from margin.storage import keys as storage

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"


def _js_sources():
    return [p for p in EXTENSION.rglob("*.js") if ".dev." not in p.name]


def test_every_request_a_page_sends_is_handled_in_python():
    sent = set()
    for path in _js_sources():
        sent |= set(re.findall(r"""\bcall\(\s*['"]([a-z]+\.[a-zA-Z]+)['"]""", path.read_text()))
    assert len(sent) >= 10, f"found too few requests in the pages to trust this check: {sorted(sent)}"
    unknown = sent - set(api.ROUTES)
    assert not unknown, f"JS sends requests Python does not handle: {sorted(unknown)}"


def test_only_the_platform_module_imports_js_or_pyodide():
    offenders = []
    for path in (ROOT / "py" / "margin").rglob("*.py"):
        if path.relative_to(ROOT / "py" / "margin").as_posix() == "platform/browser.py":
            continue
        text = path.read_text()
        if re.search(r"^\s*(from|import)\s+(js|pyodide|margin_bridge)\b", text, re.M):
            offenders.append(path.name)
    assert not offenders


def test_no_js_reads_all_of_storage():
    # get(null) / get() would deserialize every image and snapshot (the GET_ALL_KEYS contract).
    for path in _js_sources():
        text = path.read_text()
        assert not re.search(r"storage\.(local|session)\.get\(\s*(null)?\s*\)", text), path.name


def test_the_pages_never_write_storage_themselves():
    for path in _js_sources():
        if path.relative_to(EXTENSION).as_posix() == "worker/storage.js":  # Python's writes, for the worker
            continue
        text = path.read_text()
        assert not re.search(r"storage\.(local|session)\.(set|remove|clear)\(", text), path.name


def test_every_python_module_states_its_concept():
    for path in (ROOT / "py" / "margin").rglob("*.py"):
        text = path.read_text().lstrip()
        assert text.startswith('"""'), f"{path.name} has no module docstring"


def test_the_pages_take_storage_key_names_from_the_generated_contract():
    # The panel reads chrome.storage itself (to paint before Python is up): the key names must
    # come from generated/contract.js (made from storage.py), never be spelled out in the JS.
    keys = set(storage.contract_for_js()["keys"].values())
    readers = []
    for path in _js_sources():
        text = path.read_text()
        for match in re.finditer(r"storage\.(local|session)\.get\(\s*([^)]*)\)", text):
            readers.append(path.name)
            literal = re.findall(r"""['"]([A-Za-z_]+)['"]""", match.group(2))
            spelled = sorted(set(literal) & keys)
            assert not spelled, f"{path.name} spells storage keys {spelled} instead of using CONTRACT"
        constant = re.search(
            r"""const\s+\w+\s*=\s*['"]({})['"]""".format("|".join(map(re.escape, keys))), text
        )
        assert not constant, f"{path.name} spells the storage key {constant.group(1)!r}: use CONTRACT"
    assert "sidepanel.js" in readers or any("panel" in r for r in readers), (
        "the panel no longer reads storage?"
    )
    assert (
        "getAllKeys" in storage.contract_for_js() and "history" not in storage.contract_for_js()["getAllKeys"]
    )


def _readme_layout() -> str:
    # The README's short layout names the folders; docs/architecture.md names each file by concept.
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## How the code is laid out", 1)[1]
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    concepts = architecture.split("## Where each concept lives", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1] + "\n" + concepts


def _tracked_files() -> list[str]:
    import subprocess

    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return listed.stdout.split()


def test_the_readme_layout_names_every_source_file_and_folder():
    # A newcomer reads the layout first: every module, page, test folder and doc must be in it.
    # A name counts when it appears as itself or as `stem.*` (sidepanel.* = .html, .css and .js).
    layout = _readme_layout()
    named = set(re.findall(r"[\w./*-]+", layout))
    missing = []
    for rel in _tracked_files():
        path = Path(rel)
        if path.name.startswith(".") or path.parts[0].startswith("."):
            continue
        if {"vendor", "generated"} & set(path.parts) or path.name in {"__init__.py", "conftest.py"}:
            continue
        if path.parts[0] == "tests" and (path.name.startswith("test_") or path.suffix == ".json"):
            continue  # test modules are named for what they test; their folders are listed
        if path.parts[0] == "docs" and path.suffix == ".png":
            continue
        tails = {"/".join(path.parts[i:]) for i in range(len(path.parts))}
        if tails & named or f"{path.stem}.*" in named:
            continue
        missing.append(rel)
    assert missing == [], f"README's layout does not name: {missing}"
