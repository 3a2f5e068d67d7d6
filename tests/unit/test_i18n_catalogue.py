"""The catalogue (_locales/<locale>/messages.json, docs/i18n.md): complete in all seven languages,
nothing unused, placeholders that agree, and no user-visible words left in the converted files.

CONVERTED lists the files whose words all come from the catalogue: the options page, the side
panel (sidepanel.*, panel/*) and the sessions drawer (panel/sessions/*), the service worker's
words (background.js, worker/ but the bridge's modules), and the
Python modules whose sentences are all the catalogue's (margin.base.sentences).
"""

from __future__ import annotations

import ast
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import run
from platform_memory import memory_platform

from margin.base.errors import MarginError
from margin.i18n import catalogue
from margin.images import figures
from margin.page import context as page_context
from margin.storage.history import Record
from margin.turn import agent as agent_turn
from margin.turn import slimming

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "extension"
LOCALES_DIR = EXTENSION / "_locales"
LOCALES = catalogue.LOCALES

# Every file whose user-visible words come from the catalogue (the scan below holds them to it).
CONVERTED = [
    "extension/options.html",
    "extension/options/options.js",
    "extension/options/prices.js",
    "extension/common/i18n.js",
    "extension/background.js",
    *(f"extension/worker/{name}.js" for name in ("boot", "routing", "ports", "explain_menu", "restore")),
    "extension/common/ui_common.js",
    "extension/sidepanel.html",
    "extension/sidepanel.js",
    # markdown.js renders and sanitizes: its strings are tag and attribute names, not words.
    *sorted(str(p.relative_to(REPO)) for p in (EXTENSION / "panel").glob("*.js") if p.name != "markdown.js"),
    *sorted(str(p.relative_to(REPO)) for p in (EXTENSION / "panel" / "sessions").glob("*.js")),
    *(
        f"py/margin/{name}.py"
        for name in (
            "app/api",
            "app/worker",
            "backup/check",
            "backup/reader",
            "backup/stream",
            "base/errors",
            "base/stoppable",
            "base/wire_json",
            "images/attachments",
            "images/data_urls",
            "images/originals",
            "images/request_images",
            "page/context",
            "page/data_files",
            "page/transcripts",
            "page/video",
            "providers/plain_http",
            "providers/streaming",
            "providers/usage",
            "sessions/export",
            "settings/options",
            "storage/history",
            "turn/explain",
            "turn/unsaved_answers",
        )
    ),
]
# Where keys may be used: all of Margin's code, converted or not.
CODE = [
    *sorted(EXTENSION.rglob("*.js")),
    *sorted(EXTENSION.rglob("*.html")),
    *sorted((REPO / "py" / "margin").rglob("*.py")),
    REPO / "manifest.json",
]
# Not words: addresses, model names, a dash, brand names (the presets).
NOT_WORDS = {
    "https://api.openai.com/v1",
    "gpt-4o-mini",
    "—",
    "https://…",
    "Markdown",  # an export format's name
    "[Page context]",  # the marker of an attachment (docs/i18n.md)
    "Unterminated string",  # the JSON decoder's message, compared, never shown
    "Accept",  # an HTTP header's name (margin.providers.streaming.json_headers), sent, never shown
}
KEY = re.compile(r"""["'`]((?:app|manifest|bg|language|options|panel|sessions|common|py)_[a-z0-9_]+)["'`]""")
MSG = re.compile(r"__MSG_([A-Za-z0-9_]+)__")
PLACEHOLDER = re.compile(r"\$([A-Za-z0-9_]+)\$")

# Intl.PluralRules categories an integer count needs (REQUIRED) and may have (ALLOWED), per CLDR.
REQUIRED = {
    "en": {"one", "other"},
    "zh_CN": {"other"},
    "ja": {"other"},
    "ko": {"other"},
    "es": {"one", "other"},
    "pt_BR": {"one", "other"},
    "ru": {"one", "few", "many", "other"},
}
ALLOWED = {**REQUIRED, "es": {"one", "many", "other"}, "pt_BR": {"one", "many", "other"}}


def load(locale: str) -> dict:
    return json.loads((LOCALES_DIR / locale / "messages.json").read_text(encoding="utf-8"))


CATALOGUES = {locale: load(locale) for locale in LOCALES}


def split(key: str) -> tuple[str, str | None]:
    base, _, form = key.partition("__")
    return base, form or None


def bases(messages: dict) -> set[str]:
    return {split(key)[0] for key in messages}


def used_keys() -> set[str]:
    used: set[str] = set()
    for path in CODE:
        text = path.read_text(encoding="utf-8")
        used |= set(MSG.findall(text)) if path.suffix == ".json" else set(KEY.findall(text))
        used |= set(re.findall(r"""data-i18n(?:-[a-z-]+)?="([a-z0-9_]+)\"""", text))
    return used


def test_the_seven_catalogues_are_there_and_english_is_the_default():
    assert sorted(p.name for p in LOCALES_DIR.iterdir()) == sorted(LOCALES)
    manifest = json.loads((REPO / "manifest.json").read_text())
    assert manifest["default_locale"] == "en"
    assert manifest["name"].startswith("__MSG_") and manifest["description"].startswith("__MSG_")
    for command in manifest["commands"].values():
        assert command["description"].startswith("__MSG_")


def test_every_key_used_in_code_exists_in_all_seven():
    used = used_keys()
    assert len(used) > 50
    for locale, messages in CATALOGUES.items():
        # A plural form named in code (margin.base.sentences_english) needs its base's `__other` there.
        missing = sorted(
            key for key in used if key not in messages and f"{split(key)[0]}__other" not in messages
        )
        assert not missing, f"{locale} lacks {missing}"


def test_no_catalogue_has_a_key_nothing_uses():
    used = used_keys()
    for locale, messages in CATALOGUES.items():
        unused = sorted(base for base in bases(messages) if base not in used)
        assert not unused, f"{locale} has keys nothing uses: {unused}"


def test_the_languages_have_the_same_keys_and_the_plural_forms_they_need():
    english = bases(CATALOGUES["en"])
    for locale, messages in CATALOGUES.items():
        assert bases(messages) == english, locale
        assert all(re.fullmatch(r"[a-z0-9_]+", key) for key in messages), "keys are lower case"
        plural = {}
        for key in messages:
            base, form = split(key)
            if form is not None:
                plural.setdefault(base, set()).add(form)
        english_plural = {split(k)[0] for k in CATALOGUES["en"] if split(k)[1]}
        assert set(plural) == english_plural, locale
        for base, forms in plural.items():
            assert REQUIRED[locale] <= forms <= ALLOWED[locale], (locale, base, forms)


def placeholder_use(messages: dict, base: str) -> tuple[set[str], dict[str, str]]:
    used: set[str] = set()
    defined: dict[str, str] = {}
    for key, entry in messages.items():
        if split(key)[0] != base:
            continue
        used |= {name.lower() for name in PLACEHOLDER.findall(entry["message"])}
        for name, value in (entry.get("placeholders") or {}).items():
            defined[name.lower()] = value["content"]
    return used, defined


def test_placeholders_agree_across_languages():
    for base in bases(CATALOGUES["en"]):
        en_used, en_defined = placeholder_use(CATALOGUES["en"], base)
        assert en_used <= set(en_defined), (base, "en")
        assert sorted(en_defined.values()) == [f"${i + 1}" for i in range(len(en_defined))], base
        for locale, messages in CATALOGUES.items():
            used, defined = placeholder_use(messages, base)
            assert defined == en_defined, (locale, base)
            assert used == en_used, f"{locale} {base}: uses {sorted(used)}, English {sorted(en_used)}"
            for key, entry in messages.items():
                if split(key)[0] == base:
                    assert not re.search(r"\{[a-z_]+\}|%s|%d", entry["message"]), (locale, key)


# Japanese keeps one convention (docs/i18n.md, "How to add a string"): a Latin word written in a
# message stands apart from the Japanese beside it by a half-width space ("Margin は", "UTF-8 の");
# a placeholder does not, since its value may be Japanese.
JAPANESE = "\u3040-\u30ff\u4e00-\u9fff"
LATIN_WORD_TOUCHING_JAPANESE = re.compile(
    rf"[{JAPANESE}](?:[A-Za-z][A-Za-z0-9.\-]*)|(?<![$\w])[A-Za-z][A-Za-z0-9.\-]*[{JAPANESE}]"
)


def test_japanese_sets_latin_words_apart_with_one_convention():
    touching = {
        key: entry["message"]
        for key, entry in CATALOGUES["ja"].items()
        if LATIN_WORD_TOUCHING_JAPANESE.search(re.sub(r"\$[a-z_0-9]+\$", "\u2060", entry["message"]))
    }
    assert touching == {}


def test_the_substitution_is_chromes():
    entry = {"message": "Edit “$name$” ($$5) $unknown$", "placeholders": {"NAME": {"content": "$1"}}}
    assert catalogue.render(entry, ("$2 a",)) == "Edit “$2 a” ($5) "
    assert catalogue.words("ja").text("options_edit_named", "OpenAI") == "OpenAI を編集"
    assert catalogue.words("ru").number(1234567) == "1\u00a0234\u00a0567"
    assert [catalogue.locale_of(tag) for tag in ("zh", "zh-TW", "pt", "ja-JP", "en-US", "de", "")] == [
        "zh_CN",
        "zh_CN",
        "pt_BR",
        "ja",
        "en",
        "en",
        "en",
    ]


# -- no words left in the converted files ---------------------------------------------------------


class _TextScan(HTMLParser):
    """Text nodes and labelling attributes of an HTML file that are not message lookups."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, bool]] = []
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        for attribute in ("aria-label", "title", "placeholder", "alt"):
            text = values.get(attribute)
            if text and text not in NOT_WORDS:
                self.found.append(f"<{tag} {attribute}={text!r}>")
        keyed = "data-i18n" in values or tag in ("script", "style")
        if tag not in ("meta", "link", "input", "br", "img"):
            self.stack.append((tag, keyed))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        text = data.strip()
        if text and not any(keyed for _, keyed in self.stack) and text not in NOT_WORDS:
            self.found.append(text)


def js_literals(text: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal and template chunk, comments skipped."""
    out: list[tuple[int, str]] = []
    i, line = 0, 1
    while i < len(text):
        c = text[i]
        if c == "\n":
            line += 1
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i) + 2
            line += text.count("\n", i, end)
            i = end
            continue
        if c in "\"'`":
            j, chunk = i + 1, []
            while j < len(text) and text[j] != c:
                if text[j] == "\\":
                    chunk.append(text[j : j + 2])
                    j += 2
                    continue
                if c == "`" and text.startswith("${", j):
                    j += 1  # past the "$": the braces are counted from the "{"
                    depth = 0
                    while j < len(text):
                        depth += {"{": 1, "}": -1}.get(text[j], 0)
                        j += 1
                        if depth == 0:
                            break
                    chunk.append(" ")
                    continue
                chunk.append(text[j])
                j += 1
            out.append((line, "".join(chunk)))
            line += text.count("\n", i, j)
            i = j + 1
            continue
        i += 1
    return out


# Words a user reads: a capitalized word, or words with a space between them that have a capital
# or end a sentence (class lists, ids, paths and request names have neither).
WORDS = re.compile(r"^[A-Z][a-z]{2,}$|(?=.*[A-Z]|.*[.!?…]$)[A-Za-z]{2,}[,.:;!?’']* +[A-Za-z]{2,}")
# Lines that hold words for developers, not users: the console, and errors only the console sees.
DEVELOPER = re.compile(r"console\.(log|info|warn|error)\(|new Error\(|selector|querySelector")
PRESET_NAMES = {"OpenAI", "Ollama", "LM Studio", "llama.cpp", "OpenRouter", "Groq"}
# Names the DOM gives keys and drag types (event.key, dataTransfer.types): compared, never shown.
DOM_NAMES = {"Enter", "Escape", "Tab", "Shift", "Home", "End", "ArrowDown", "ArrowUp", "Files"}


def visible_literals(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    found = []
    for number, literal in js_literals(text):
        window = " ".join(lines[max(0, number - 2) : number])
        if (
            literal in PRESET_NAMES
            or literal in DOM_NAMES
            or literal in NOT_WORDS
            or "/" in literal
            or DEVELOPER.search(window)
        ):
            continue
        if WORDS.search(literal.strip()):
            found.append(f"{path.name}:{number}: {literal!r}")
    return found


def python_literals(path: Path) -> list[str]:
    """The string constants of a Python module that read as words, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scopes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, scopes) and node.body and isinstance(node.body[0], ast.Expr)
    }
    return [
        f"{path.name}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and node.value not in NOT_WORDS
        and WORDS.search(node.value.strip())
    ]


@pytest.mark.parametrize("name", CONVERTED)
def test_no_user_visible_words_are_left_in_a_converted_file(name):
    path = REPO / name
    if path.suffix == ".py":
        found = python_literals(path)
        assert not found, "words not taken from the catalogue:\n" + "\n".join(found)
    elif path.suffix == ".html":
        scan = _TextScan()
        scan.feed(path.read_text(encoding="utf-8"))
        assert not scan.found, f"{name} has words that are not message lookups: {scan.found}"
    else:
        found = visible_literals(path)
        assert not found, "words not taken from the catalogue:\n" + "\n".join(found)


def test_the_scan_finds_words_when_they_are_there(tmp_path):
    page = tmp_path / "x.js"
    page.write_text(
        'el("button", { text: "Save now" });\nconsole.warn("Margin: a note");\n'
        'if (event.key === "Escape") x = `${f({ a: 1 })}px`;\nnode.title = `Remove ${name} now`;\n'
    )
    assert visible_literals(page) == ["x.js:1: 'Save now'", "x.js:4: 'Remove   now'"]
    scan = _TextScan()
    scan.feed('<p data-i18n="a"></p><p>Hello there</p><b aria-label="Close"></b>')
    assert scan.found == ["Hello there", "<b aria-label='Close'>"]
    module = tmp_path / "x.py"
    module.write_text(
        '"""Doc string here."""\n\ndef f():\n    """Said nowhere."""\n    raise E("Try again now.")\n'
    )
    assert python_literals(module) == ["x.py:5: 'Try again now.'"]


# -- Python's words come from the catalogue -------------------------------------------------------


def test_pythons_words_are_the_catalogues(monkeypatch):
    """With every ja message replaced by a marker, what Python writes holds only markers and data:
    no word of its own."""
    marked = {
        key: {**entry, "message": f"⟦{key}⟧" + "".join(f"[${n}$]" for n in entry.get("placeholders", {}))}
        for key, entry in CATALOGUES["ja"].items()
    }
    monkeypatch.setitem(catalogue._loaded, "ja", marked)
    shot = {
        "source": "screenshot",
        "name": "Screenshot of Docs",
        "alt": "a chart",
        "capturedAt": 1764511500000,
    }
    record = Record(
        "user",
        "[Page context] x\n\nbody",
        {"attachment": {"kind": "page", "title": "Docs", "url": "https://example.com/", "chars": 12000}},
    )
    texts = [
        figures.figure_label(3, shot, language="ja"),
        figures.figure_label(1, {}, language="ja", note="n"),
        page_context.header("selection", "", "https://example.com/a", 1764511500000, ["n"], language="ja"),
        page_context.truncation_note(10, 20, language="ja"),
        slimming.stub_text(record, "ja"),
        catalogue.words("ja").text(agent_turn.REPLAY_NOTICE_KEY),
    ]
    data = re.compile(
        r"⟦[a-z_]+⟧|\[[^\]]*\]|Docs|a chart|https://example\.com/a?|2025-11-30 14:05 UTC|\[Page context\]"
    )
    for text in texts:
        leftover = data.sub("", text)
        assert not re.search(r"[A-Za-z]{2,}", leftover), (text, leftover)


def test_english_and_chinese_request_words_are_unchanged():
    shot = {"source": "screenshot", "name": "Screenshot of Example page", "capturedAt": 1764511500000}
    assert (
        figures.figure_label(1, shot, language="zh-CN") == "[图1：截图「Example page」，2025-11-30 14:05 UTC]"
    )
    assert (
        figures.figure_label(2, {"name": "cat.png", "alt": "a cat"}, language="en")
        == '[Figure 2: cat.png, "a cat"]'
    )
    assert figures.figure_label(4, {}, language="zh", note="x") == "[图4：用户之前发送的图片（x）]"
    record = Record("user", "t", {"attachment": {"title": "Docs", "url": "https://e.com/", "chars": 12000}})
    assert slimming.stub_text(record) == (
        "[Page context] Shortened: “Docs” (https://e.com/, 12,000 characters) was attached earlier in "
        "this conversation; its text is left out here to keep the request short. If it is needed, ask "
        "the user to attach it again."
    )


def test_the_worker_loads_a_catalogue_through_the_platform_once(monkeypatch, tmp_path):
    """Where there is no checkout (the wheel in Pyodide) words come only from what `ensure` read
    through the platform (the bridge's fetch of _locales); before that, a specific error."""
    monkeypatch.setattr(catalogue, "CHECKOUT_LOCALES", tmp_path)
    monkeypatch.setattr(catalogue, "_loaded", {})
    with pytest.raises(MarginError) as refused:
        catalogue.words("ko")
    assert refused.value.code == "catalogue_not_loaded"
    reads: list[str] = []

    async def read_catalogue(locale: str) -> str:
        reads.append(locale)
        return (LOCALES_DIR / locale / "messages.json").read_text(encoding="utf-8")

    platform = memory_platform()
    platform.read_catalogue = read_catalogue
    words = run(catalogue.ensure(platform, "ko-KR"))
    run(catalogue.ensure(platform, "ko"))
    assert reads == ["en", "ko"]
    assert words.text("py_figure", 2, words.text("py_figure_image")) == "[그림 2: 이미지]"
    assert figures.figure_label(1, {}, language="ko") == "[그림 1: 사용자가 앞서 보낸 이미지]"


def test_an_attachment_header_is_in_the_model_language_and_attach_again_keeps_its_words():
    record = page_context.attachment_record(
        {"kind": "page", "title": "Docs", "url": "https://example.com/", "body": "text", "notes": []},
        captured_at=1764511500000,
        language="ru",
    )
    assert record.text.split("\n\n")[0] == (
        "[Page context] Страница: Docs\nURL: https://example.com/\nПрикреплено: 2025-11-30 14:05 UTC"
    )
    again = page_context.fresh_copy(record, 1764515100000)
    assert again.text.split("\n\n")[0].endswith("Прикреплено: 2025-11-30 15:05 UTC")
    english = page_context.attachment_record(
        {"kind": "video", "title": "", "url": "https://example.com/v", "body": "x", "notes": ["n"]},
        captured_at=1764511500000,
    )
    assert english.text.split("\n\n")[0] == (
        "[Page context] Video: example.com\nURL: https://example.com/v\nAttached: 2025-11-30 14:05 UTC\nNote: n"
    )
