"""The saved prompts' right-click items (extension/worker/prompt_menu.js and explain_menu.js, in
node with chrome.contextMenus and Python stubbed): a prompt's name shows as typed, whatever Chrome
reads into `%s` and `&`, and a rebuild after a change of language retitles every item."""

from __future__ import annotations

from pathlib import Path

from helpers import run_js_module

EXTENSION = Path(__file__).resolve().parents[2] / "extension"

STUBS = {
    "generated/contract.js": "export const CONTRACT = { storage: { keys: { prompts: 'prompts' } } };\n",
    "worker/boot.js": """
export const python = async () => ({ worker: { dispatch_json: async (name) => JSON.stringify(
  name === 'prompts.list'
    ? { ok: true, value: { prompts: globalThis.stored[globalThis.language] } }
    : { ok: false, error: { message: 'not stubbed' } }) } });
""",
    "common/i18n.js": "export const t = (key) => globalThis.words[globalThis.language][key];\n",
}

SCRIPT = """
const items = new Map();
globalThis.chrome = { runtime: {}, contextMenus: {
  removeAll: async () => items.clear(),
  create: (props, done) => { items.set(props.id, props.title); done(); },
  update: (id, props, done) => { if (items.has(id)) items.set(id, props.title); done(); },
} };
globalThis.words = input.words;
globalThis.stored = input.stored;
const titles = () => [...items.values()];
globalThis.language = 'en';
await menu.installMenu();
const english = titles();
globalThis.language = 'es';
await menu.rebuildMenu();
console.log(JSON.stringify({ shown: input.names.map(menu.menuTitle), english, spanish: titles() }));
"""

ENGLISH = [
    {"id": "summarize", "name": "Summarize", "menu": True, "hidden": False},
    {"id": "p1", "name": "50% & more", "menu": True, "hidden": False},
    {"id": "p2", "name": "Use %s", "menu": True, "hidden": False},
    {"id": "p3", "name": "Not in the menu", "menu": False, "hidden": False},
    {"id": "p4", "name": "Hidden", "menu": True, "hidden": True},
]
SPANISH = [{**p, "name": "Resumir"} if p["id"] == "summarize" else p for p in ENGLISH]


def run(tmp_path: Path) -> dict:
    files = {**STUBS}
    for name in ("prompt_menu.js", "explain_menu.js"):
        files[f"worker/{name}"] = (EXTENSION / "worker" / name).read_text(encoding="utf-8")
    shim = tmp_path / "shim" / "menu.js"
    shim.parent.mkdir()
    shim.write_text(
        "export * from './worker/explain_menu.js';\nexport { menuTitle } from './worker/prompt_menu.js';\n"
    )
    data = {
        "names": ["50% & more", "Use %s", "R&&D: 100%", "%%s and %S"],
        "words": {"en": {"bg_explain": "Explain with Margin"}, "es": {"bg_explain": "Explicar con Margin"}},
        "stored": {"en": ENGLISH, "es": SPANISH},
    }
    return run_js_module(tmp_path, shim, "menu", SCRIPT, data, extra_files=files)


def literal(title: str) -> str:
    """What Chrome shows for `title`: no `%s` left to replace, `&&` drawn as `&`, U+2060 invisible."""
    assert "%s" not in title
    return title.replace("&&", "&").replace("\u2060", "")


def test_a_prompts_name_shows_as_typed_in_the_menu(tmp_path):
    shown = run(tmp_path)["shown"]
    assert [literal(title) for title in shown] == ["50% & more", "Use %s", "R&&D: 100%", "%%s and %S"]
    assert all("&" not in title.replace("&&", "") for title in shown)  # no mnemonic marker left


def test_the_menu_holds_explain_and_the_menu_prompts_and_follows_a_change_of_language(tmp_path):
    result = run(tmp_path)
    assert result["english"] == ["Explain with Margin", "Summarize", "50% && more", "Use %\u2060s"]
    assert result["spanish"] == ["Explicar con Margin", "Resumir", "50% && more", "Use %\u2060s"]


def test_the_worker_rebuilds_the_menu_when_the_language_changes():
    background = (EXTENSION / "background.js").read_text(encoding="utf-8")
    assert "i18n.onLanguageChange(rebuildMenu);" in background
    assert "rebuildMenu, retitleMenu } from './worker/explain_menu.js'" in background
