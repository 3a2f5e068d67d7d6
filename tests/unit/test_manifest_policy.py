"""The manifest asks for no more than Margin uses, and its CSP holds the directives it must.

Each permission is tied to the code that needs it (a pattern that must occur in the extension's
own scripts); a permission with no tie, or whose tie no longer matches, fails, so a permission
cannot outlive the feature that needed it. The README's permissions paragraph names each one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"
MANIFEST = json.loads((ROOT / "manifest.json").read_text())

# permission -> what in extension/*.js uses it
USES: dict[str, str] = {
    "storage": r"chrome\.storage\.(local|session)\b",
    # A quota, not an API: chrome.storage.local holds the images, past its 10 MB default.
    "unlimitedStorage": r"chrome\.storage\.local\b",
    "sidePanel": r"chrome\.sidePanel\.",
    "scripting": r"chrome\.scripting\.executeScript\(",
    "contextMenus": r"chrome\.contextMenus\.",
    "alarms": r"chrome\.alarms\.onAlarm\.addListener\(",
}
# host access: the page script, screenshots, and every provider's endpoint
HOST_USES = (
    r"chrome\.scripting\.executeScript\(",
    r"chrome\.tabs\.captureVisibleTab\(",
    r"\bfetch\(spec\.url",
)

REQUIRED_CSP = {
    "script-src": {"'self'", "'wasm-unsafe-eval'"},
    "object-src": {"'none'"},
    "img-src": {"'self'", "data:", "blob:"},
    "frame-src": {"'self'"},
    "base-uri": {"'none'"},
    "form-action": {"'none'"},
}


def _scripts() -> str:
    files = [p for p in EXTENSION.rglob("*.js") if "vendor" not in p.parts and "pyodide" not in p.parts]
    return "\n".join(p.read_text() for p in files)


def _csp() -> dict[str, set[str]]:
    policy = MANIFEST["content_security_policy"]["extension_pages"]
    directives: dict[str, set[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            directives[words[0]] = set(words[1:])
    return directives


def test_every_permission_is_used_by_extension_code():
    code = _scripts()
    permissions = MANIFEST["permissions"]
    untied = [p for p in permissions if p not in USES]
    assert not untied, f"permissions with no known use (tie them in USES or drop them): {untied}"
    unused = [p for p in permissions if not re.search(USES[p], code)]
    assert not unused, f"permissions the extension's code no longer uses: {unused}"


def test_tabs_is_not_asked_for_since_host_access_gives_tab_urls():
    # chrome.tabs.query/get return url and title for tabs Margin has host access to (<all_urls>).
    assert "tabs" not in MANIFEST["permissions"]
    assert MANIFEST["host_permissions"] == ["<all_urls>"]
    code = _scripts()
    missing = [pattern for pattern in HOST_USES if not re.search(pattern, code)]
    assert not missing, f"host access is justified by code that is gone: {missing}"


def test_the_csp_holds_the_required_directives_and_nothing_looser():
    csp = _csp()
    for directive, sources in REQUIRED_CSP.items():
        assert csp.get(directive) == sources, f"{directive}: {csp.get(directive)} != {sources}"
    loose = {"*", "'unsafe-inline'", "'unsafe-eval'", "http:", "https:"}
    assert not [d for d, s in csp.items() if s & loose], csp


def test_the_readme_says_why_each_permission_is_needed():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Permissions", 1)[1].split("\n## ", 1)[0]
    for permission in [*MANIFEST["permissions"], *MANIFEST["host_permissions"]]:
        assert f"`{permission}`" in section, f"README's Permissions section does not name `{permission}`"
    assert "`tabs`" in section  # why it is not needed


def _policy(text: str) -> dict[str, set[str]]:
    return {part.split()[0]: set(part.split()[1:]) for part in text.split(";") if part.split()}


def test_the_code_sandbox_is_sandboxed_with_no_network_and_only_its_own_scripts():
    # extension/sandbox/: model-written code runs there (README "Running code").
    assert MANIFEST["sandbox"]["pages"] == ["sandbox/sandbox.html"]
    csp = _policy(MANIFEST["content_security_policy"]["sandbox"])
    # allow-scripts only: no allow-same-origin (an opaque origin: no chrome.*, no storage), no
    # allow-popups (no window), no allow-forms, no allow-modals
    assert csp["sandbox"] == {"allow-scripts"}
    assert csp["default-src"] == {"'none'"} and csp["connect-src"] == {"'none'"}
    # Pyodide's wasm needs wasm-unsafe-eval; its worker is a blob: worker (an opaque origin cannot
    # start one from an extension URL); plain eval stays refused.
    assert csp["script-src"] == {"'self'", "'wasm-unsafe-eval'", "blob:"}
    assert csp["worker-src"] == {"blob:"}
    assert csp["img-src"] == {"data:", "blob:"}
    assert not [d for d, s in csp.items() if s & {"*", "'unsafe-eval'", "http:", "https:"}], csp
