"""Convention tests: the JS shells and the Python backend agree on names, and the rules hold."""

import re
from pathlib import Path

from margin import api, storage

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"


def _js_sources():
    return [p for p in EXTENSION.rglob("*.js") if ".dev." not in p.name]


def test_every_request_a_page_sends_is_handled_in_python():
    sent = set()
    for path in _js_sources():
        sent |= set(re.findall(r"""\bcall\(\s*['"]([a-z]+\.[a-zA-Z]+)['"]""", path.read_text()))
    unknown = sent - set(api.ROUTES)
    assert not unknown, f"JS sends requests Python does not handle: {sorted(unknown)}"


def test_only_the_platform_module_imports_js_or_pyodide():
    offenders = []
    for path in (ROOT / "py" / "margin").rglob("*.py"):
        if path.name == "platform.py":
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
        if path.name == "bridge.js":
            continue
        text = path.read_text()
        assert not re.search(r"storage\.(local|session)\.(set|remove|clear)\(", text), path.name


def test_every_python_module_states_its_concept():
    for path in (ROOT / "py" / "margin").rglob("*.py"):
        text = path.read_text().lstrip()
        assert text.startswith('"""'), f"{path.name} has no module docstring"


def test_storage_keys_the_js_may_know_match_python():
    contract = storage.contract_for_js()
    assert contract["keys"]["history"] == storage.HISTORY
    assert contract["getAllKeys"] == list(storage.GET_ALL_KEYS)
