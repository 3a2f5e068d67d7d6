"""The first hour, polished (issue 35, items 1 and 6): what a new user tripped over on the options
page and in the panel's small words, checked where a user sees it.

The options page: "Provider type" shows its whole choice, and a hint under it says what the type is
for; an empty field's placeholder is an example that says so; "Send the API key over plain HTTP"
shows only when a key could be read on the network (the same rule as Python's); feedback is said
under what was asked and covers no field; the prices hint quotes the label it speaks of. Screenshots
in English and Russian go to tests/artifacts/options-<lang>-<width>.png, with their layout checked
and axe-core at zero findings with the feedback and the checkbox shown.

The panel: a small file's size is said with the catalogue's plural ("64 bytes", "64 байта"); the
message box names what waits for a question (a file, two files, mixed attachments); the sessions
status line follows a change of language; a session row keeps its buttons on one line in every
language; the model menu shows a long "<provider> — <model>" whole when the panel has room.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from a11y import violations
from harness import COLD_TIMEOUT_MS, Margin, poll
from playwright.sync_api import Page, expect

from margin.providers.plain_http import key_exposed

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CATALOGUES = {
    path.name: json.loads((path / "messages.json").read_text(encoding="utf-8"))
    for path in (REPO / "extension" / "_locales").iterdir()
}
TAGS = {"en": "en", "zh_CN": "zh-CN", "ja": "ja", "ko": "ko", "es": "es", "pt_BR": "pt-BR", "ru": "ru"}


def words(locale: str, key: str, *subs: str) -> str:
    """A catalogue message with its placeholders filled (Chrome's substitution, as the pages do it)."""
    entry = CATALOGUES[locale][key]
    text = entry["message"]
    for name, placeholder in (entry.get("placeholders") or {}).items():
        index = int(placeholder["content"][1:]) - 1
        text = re.sub(rf"\${name}\$", lambda _m, i=index: subs[i], text, flags=re.I)
    return text


def open_options(margin: Margin, locale: str = "en", width: int = 900) -> Page:
    margin.storage_set({"uiLanguage": TAGS[locale]})
    page = margin.context.new_page()
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(margin.url("options.html"))
    page.locator("body[data-ready]").wait_for(state="attached", timeout=COLD_TIMEOUT_MS)
    assert page.evaluate("document.documentElement.lang") == TAGS[locale]
    return page


def open_panel(margin: Margin, width: int = 360) -> Page:
    page = margin.context.new_page()
    page.set_viewport_size({"width": width, "height": 720})
    page.goto(margin.url("sidepanel.html"))
    margin.wait_panel_ready(page)
    return page


def use_language(margin: Margin, page: Page, locale: str) -> None:
    margin.storage_set({"uiLanguage": TAGS[locale]})
    page.wait_for_function("(tag) => document.documentElement.lang === tag", arg=TAGS[locale])
    page.wait_for_timeout(150)


# Whether a <select>'s chosen option is shown whole: its text's width in the select's font against
# the room inside the box (padding and the arrow taken off).
SELECT_FITS_JS = """(select) => {
    const style = getComputedStyle(select);
    const context = document.createElement('canvas').getContext('2d');
    context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const text = select.options[select.selectedIndex].text;
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
    return { text, width: Math.ceil(context.measureText(text).width), room: Math.floor(room) };
}"""

# Every form control the user can see, scrolled to the top of the window one at a time: what is at
# its centre must be the control itself (no banner, sticky or fixed, lies over it).
COVERED_JS = """() => {
    const covered = [];
    const controls = [...document.querySelectorAll('input, select, textarea, button')]
        .filter((node) => node.getClientRects().length && getComputedStyle(node).visibility !== 'hidden');
    for (const control of controls) {
        control.scrollIntoView({ block: 'start' });
        const box = control.getBoundingClientRect();
        const top = document.elementFromPoint(box.left + box.width / 2, box.top + Math.min(box.height / 2, 8));
        if (top && top !== control && !control.contains(top) && !(control.labels && [...control.labels].some((l) => l.contains(top)))) {
            covered.push(`${control.id || control.textContent.trim()} under ${top.className || top.tagName}`);
        }
    }
    window.scrollTo(0, 0);
    return covered;
}"""

# Nothing leaves its card or the window, and the page never scrolls sideways.
LAYOUT_JS = """() => {
    const problems = [];
    if (document.scrollingElement.scrollWidth > innerWidth + 1) problems.push('the page scrolls sideways');
    for (const card of document.querySelectorAll('.card')) {
        const edge = card.getBoundingClientRect();
        for (const node of card.querySelectorAll('*')) {
            if (!node.getClientRects().length) continue;
            const box = node.getBoundingClientRect();
            if (box.right > edge.right + 1 || box.left < edge.left - 1) problems.push(`${node.id || node.className || node.tagName} leaves its card`);
        }
    }
    return problems;
}"""


# -- item 1: the options page ----------------------------------------------------------------------


@pytest.mark.parametrize("width", [900, 420])
def test_the_provider_type_is_shown_whole_and_its_hint_says_what_it_is_for(margin: Margin, width):
    page = open_options(margin, width=width)
    kind = page.get_by_role("combobox", name="Provider type")
    hints = {
        "openai": "Ollama, LM Studio, llama.cpp, vLLM, OpenRouter, Groq",
        "anthropic": "Claude",
        "gemini": "Google AI Studio",
        "openai-responses": "the provider keeps the conversation",
    }
    assert kind.evaluate("e => [...e.options].map(o => o.value)") == list(hints)
    for value, hint in hints.items():
        kind.select_option(value)
        fits = kind.evaluate(SELECT_FITS_JS)
        assert fits["width"] <= fits["room"], f"{value}: {fits}"
        expect(kind).to_have_accessible_description(re.compile(re.escape(hint)))
        expect(page.locator("p.hint", has_text=hint)).to_be_visible()


def test_an_empty_field_shows_an_example_that_says_so(margin: Margin):
    page = open_options(margin)
    base_url = page.get_by_role("textbox", name="Base URL", exact=True)
    model = margin.model_field(page)
    assert base_url.input_value() == "" and model.input_value() == ""
    assert base_url.get_attribute("placeholder") == "e.g. https://api.openai.com/v1"
    assert model.get_attribute("placeholder") == "e.g. gpt-4o-mini"
    # A placeholder is drawn apart from a value: another colour on the field's own background.
    colours = base_url.evaluate(
        "e => [getComputedStyle(e).color, getComputedStyle(e, '::placeholder').color]"
    )
    assert colours[0] != colours[1], colours

    page.get_by_role("button", name="Ollama", exact=True).click()
    assert base_url.input_value() == "http://localhost:11434/v1"
    assert model.get_attribute("placeholder") == "e.g. llama3.2"

    base_url.fill("")
    page.get_by_role("combobox", name="Provider type").select_option("anthropic")
    assert base_url.input_value() == "https://api.anthropic.com/v1"  # a real value, filled in
    assert model.get_attribute("placeholder") == "e.g. claude-sonnet-4-5"
    base_url.fill("")
    assert base_url.get_attribute("placeholder") == "e.g. https://api.anthropic.com/v1"

    use_language(margin, page, "ru")
    base_url = page.get_by_role("textbox", name=words("ru", "options_base_url"), exact=True)
    model = page.get_by_role("combobox", name=words("ru", "options_model"), exact=True)
    assert base_url.get_attribute("placeholder") == "например, https://api.anthropic.com/v1"
    assert model.get_attribute("placeholder") == "например, claude-sonnet-4-5"


PLAIN_HTTP_CASES = [
    ("http://127.0.0.1:8080/v1", ""),
    ("http://127.0.0.1:8080/v1", "sk-local"),
    ("http://127.1:8080/v1", "sk-local"),
    ("http://0x7f.0.0.1:8080/v1", "sk-local"),
    ("http://localhost:11434/v1", "sk-local"),
    ("http://ollama.localhost/v1", "sk-local"),
    ("http://[::1]:8080/v1", "sk-local"),
    ("http://[::ffff:127.0.0.1]:8080/v1", "sk-local"),
    ("http://10.0.0.5:8080/v1", ""),
    ("http://10.0.0.5:8080/v1", "sk-lan"),
    ("http://localhost@evil.example/v1", "sk-lan"),
    ("http://128.0.0.1/v1", "sk-lan"),
    ("https://10.0.0.5/v1", "sk-lan"),
]


def test_the_plain_http_checkbox_shows_only_when_a_key_could_be_read(margin: Margin):
    page = open_options(margin)
    base_url = page.get_by_role("textbox", name="Base URL", exact=True)
    key = page.get_by_role("textbox", name="API key", exact=True)
    box = page.get_by_role("checkbox", name="Send the API key over plain HTTP")
    hint = page.get_by_text("anyone on the network between you and the server", exact=False)
    seen = {}
    for url, api_key in PLAIN_HTTP_CASES:
        base_url.fill(url)
        key.fill(api_key)
        # Shown exactly when Python would refuse the key without the tick (plain_http.py rule 2).
        expected = key_exposed({"apiKey": api_key, "baseUrl": url}) is not None
        seen[(url, api_key)] = box.is_visible()
        assert seen[(url, api_key)] == expected == hint.is_visible(), (url, api_key, expected)
    # A LAN address and 128.0.0.1 with a key, and "localhost@evil.example" (its host is evil.example).
    assert sum(seen.values()) == 3, seen

    # A local server with a key and a LAN server without one are saved with no tick and no refusal.
    for name, url, api_key in (
        ("Local", "http://127.0.0.1:8080/v1", "sk-local"),
        ("LAN", "http://10.0.0.5/v1", ""),
    ):
        page.get_by_role("button", name="Add provider").click()
        margin.fill_provider_form(page, base_url=url, api_key=api_key, model="m", name=name)
        assert not box.is_visible()
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.get_by_role("status").filter(has_text=f"Saved “{name}”")).to_be_visible()
    stored = margin.storage_get(["providers"])["providers"]
    assert [(p["name"], p.get("allowPlainHttpKey", False)) for p in stored] == [
        ("Local", False),
        ("LAN", False),
    ]


def test_feedback_is_said_under_what_was_asked_and_covers_no_field(margin: Margin, provider_config):
    page = margin.configure_provider(
        base_url=provider_config["baseUrl"], api_key=provider_config["apiKey"], name="My fake"
    )
    page.set_viewport_size({"width": 900, "height": 700})
    saved = page.get_by_role("status").filter(has_text="Saved “My fake”")
    expect(saved).to_be_visible()
    save_box = page.get_by_role("button", name="Save", exact=True).bounding_box()
    saved_box = saved.bounding_box()
    assert save_box and saved_box and saved_box["y"] >= save_box["y"] + save_box["height"], (
        saved_box,
        save_box,
    )
    assert page.evaluate(COVERED_JS) == []

    # A problem goes under the buttons too, as an alert, and the confirmation is gone.
    margin.model_field(page).fill("")
    page.get_by_role("button", name="Save", exact=True).click()
    alert = page.get_by_role("alert").filter(has_text=re.compile(r"\S"))
    expect(alert).to_have_text(re.compile("model", re.I))
    expect(saved).to_be_hidden()
    alert_box = alert.bounding_box()
    # The click scrolled the page.
    save_box = page.get_by_role("button", name="Save", exact=True).bounding_box()
    assert alert_box and save_box and alert_box["y"] >= save_box["y"] + save_box["height"]

    # A setting says its own, under its list; one message at a time.
    summarize = page.get_by_role("combobox", name="Summarize long pages")
    summarize.select_option("20000")
    said = page.locator(".messages").get_by_role("status").filter(has_text=re.compile(r"\S"))
    expect(said).to_have_count(1)
    said_box, list_box = said.bounding_box(), summarize.bounding_box()
    assert said_box and list_box and said_box["y"] >= list_box["y"] + list_box["height"]
    expect(alert).to_have_count(0)
    assert page.evaluate(COVERED_JS) == []


@pytest.mark.parametrize("locale", ["en", "ru"])
def test_the_options_page_holds_its_layout_in_english_and_russian(margin: Margin, locale):
    """Screenshots to look at (tests/artifacts/options-<locale>-<width>.png), checked as they are:
    a provider being edited, its key going to another machine over http:// (the checkbox shows),
    and the confirmation of a save."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = open_options(margin, locale)

    def say(key: str, *subs: str) -> str:
        return words(locale, key, *subs)

    for label, value in (
        ("options_name", "LAN"),
        ("options_base_url", "http://10.0.0.5:8080/v1"),
        ("options_api_key", "sk-lan"),
    ):
        page.get_by_role("textbox", name=say(label), exact=True).fill(value)
    page.get_by_role("combobox", name=say("options_model"), exact=True).fill("m")
    page.get_by_role("checkbox", name=say("options_plain_http")).check()
    page.get_by_role("button", name=say("options_save"), exact=True).click()
    expect(page.get_by_role("status").filter(has_text=say("options_saved_active", "LAN"))).to_be_visible(
        timeout=COLD_TIMEOUT_MS
    )
    # The prices hint names the field it speaks of by its label, as the page shows it.
    hint = page.locator("#prices-hint").inner_text()
    assert say("options_price_cached_short") in hint and " = " not in hint, hint
    for width in (900, 420):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(150)
        page.screenshot(path=str(ARTIFACTS / f"options-{locale}-{width}.png"), full_page=True)
        assert page.evaluate(LAYOUT_JS) == [], width
        for select in page.get_by_role("combobox").all():
            if select.evaluate("e => e.tagName") == "SELECT":
                fits = select.evaluate(SELECT_FITS_JS)
                assert fits["width"] <= fits["room"], (width, fits)
        assert page.evaluate(COVERED_JS) == [], width
    page.emulate_media(reduced_motion="reduce")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_timeout(300)
        assert violations(page) == [], scheme


# -- item 6: small words in the panel ------------------------------------------------------------


def pick_file(panel: Page, name: str, data: bytes, mime: str = "text/csv") -> None:
    with panel.expect_file_chooser() as chooser:
        panel.get_by_role("button", name="Attach file", exact=True).click()
    chooser.value.set_files(files=[{"name": name, "mimeType": mime, "buffer": data}])


CSV_64 = b"city,temp\n" + b"".join(f"c{i},{i}\n".encode() for i in range(1, 10)) + b"x,100000\n"
assert len(CSV_64) == 64


def test_a_small_file_says_its_size_in_the_plural_and_the_box_names_what_waits(margin: Margin):
    panel = open_panel(margin)
    box = margin.message_box(panel)
    expect(box).to_have_attribute("placeholder", "Ask anything…")

    pick_file(panel, "tiny.csv", CSV_64)
    tiny = panel.get_by_role("group", name="Attached file: tiny.csv")
    expect(tiny).to_contain_text("CSV · 64 bytes · 10 rows", timeout=30_000)
    expect(box).to_have_attribute("placeholder", "Ask about the attached file…")

    pick_file(panel, "one.txt", b"x", "text/plain")
    one = panel.get_by_role("group", name="Attached file: one.txt")
    expect(one).to_contain_text("TXT · 1 byte", timeout=30_000)
    expect(one).not_to_contain_text("bytes")
    expect(box).to_have_attribute("placeholder", "Ask about the 2 attached files…")

    use_language(margin, panel, "ru")
    box = panel.get_by_role("textbox", name=words("ru", "panel_message"), exact=True)
    expect(panel.get_by_role("group", name="Прикреплённый файл: tiny.csv")).to_contain_text("64 байта")
    expect(panel.get_by_role("group", name="Прикреплённый файл: one.txt")).to_contain_text("1 байт")
    expect(box).to_have_attribute("placeholder", "Спросите о 2 прикреплённых файлах…")

    # Attachments of different kinds are "attachments" (a selection seeded beside the files).
    history = margin.history()
    selection = {
        **history[-1],
        "content": history[-1]["content"].replace("File: one.txt", "Selected text"),
        "attachment": {
            "kind": "selection",
            "title": "A quote",
            "url": "https://example.com/",
            "site": "example.com",
        },
    }
    selection.pop("file", None)
    margin.storage_set({"history": [*history, selection]})
    expect(box).to_have_attribute("placeholder", "Спросите о 3 вложениях…")
    use_language(margin, panel, "en")
    box = margin.message_box(panel)
    expect(box).to_have_attribute("placeholder", "Ask about the 3 attachments…")
    margin.storage_set({"history": [selection]})
    expect(box).to_have_attribute("placeholder", "Ask about the selected text…")


SESSIONS = [
    {
        "id": f"s{n}",
        "name": name,
        "createdAt": 1764684300000 - n * 86_400_000,
        "pinned": n == 1,
        "history": [{"role": "user", "content": "Where?"}, {"role": "assistant", "content": "There."}],
    }
    for n, name in enumerate(["How rivers carve canyons", "Lyon"], start=1)
]


def open_sessions(panel: Page, locale: str = "en"):
    panel.get_by_role("button", name=words(locale, "panel_sessions"), exact=True).click()
    region = panel.get_by_role("region", name=words(locale, "sessions_title"))
    region.get_by_role("listitem").nth(1).wait_for(timeout=COLD_TIMEOUT_MS)
    return region


def test_the_sessions_status_line_follows_a_change_of_language(margin: Margin):
    margin.storage_set({"savedSessions": SESSIONS})
    panel = open_panel(margin)
    region = open_sessions(panel)
    with panel.expect_download(timeout=60_000) as download:
        region.get_by_role("button", name="Export backup").click()
    assert download.value.path().stat().st_size > 0
    # The drawer's own name changes with the language: the status line is found by what it says.
    status = panel.get_by_role("status").filter(has_text=re.compile(r"margin-backup"))
    name = r"margin-backup-\d{4}-\d\d-\d\d\.json"
    expect(status).to_have_text(re.compile(rf"^Saved {name} \(\d+(\.\d)? (kB|bytes)\)\.$"))

    use_language(margin, panel, "ru")
    expect(status).to_have_text(re.compile(rf"^Сохранено: {name} \(\d+(,\d)? (кБ|байта?)\)\.$"))
    use_language(margin, panel, "ja")
    expect(status).to_have_text(re.compile(rf"^{name} を保存しました（\d+(\.\d)? (KB|kB|バイト)）。$"))
    use_language(margin, panel, "en")
    expect(status).to_have_text(re.compile(rf"^Saved {name} "))


# Each row's buttons: on one line, inside the row.
ROW_LINES_JS = """(row) => {
    const edge = row.getBoundingClientRect();
    const boxes = [...row.querySelectorAll('.sp-actions button')].filter((b) => b.getClientRects().length).map((b) => b.getBoundingClientRect());
    return {
        count: boxes.length,
        // One line: every button overlaps every other vertically ("Open" is shorter than the icons).
        lines: boxes.length && Math.max(...boxes.map((b) => b.top)) < Math.min(...boxes.map((b) => b.bottom)) ? 1 : 2,
        inside: boxes.every((b) => b.left >= edge.left - 1 && b.right <= edge.right + 1),
    };
}"""


def test_a_session_row_keeps_its_buttons_on_one_line_in_every_language(margin: Margin):
    margin.storage_set({"savedSessions": SESSIONS})
    panel = open_panel(margin)
    for locale in ["ru", *[loc for loc in TAGS if loc != "ru"]]:
        use_language(margin, panel, locale)
        region = open_sessions(panel, locale)
        pinned = region.get_by_role("listitem").filter(has_text="How rivers carve canyons")
        other = region.get_by_role("listitem").filter(has_text="Lyon")
        for row in (pinned, other):
            # The drawer rebuilds its rows in the new language: wait until this one has its buttons.
            poll(lambda row=row: row.evaluate(ROW_LINES_JS)["count"] == 5, timeout=10, message=locale)
            assert row.evaluate(ROW_LINES_JS) == {"count": 5, "lines": 1, "inside": True}, locale
        for key in (
            "sessions_open",
            "sessions_rename",
            "sessions_unpin",
            "sessions_delete",
            "sessions_export",
        ):
            button = pinned.get_by_role("button", name=words(locale, key), exact=True)
            expect(button).to_be_visible()
            if key != "sessions_open":  # an icon: its words are its tooltip too
                expect(button).to_have_attribute("title", words(locale, key))
        expect(other.get_by_role("button", name=words(locale, "sessions_pin"), exact=True)).to_be_visible()
        if locale == "ru":
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            panel.screenshot(path=str(ARTIFACTS / "first-hour-sessions-ru.png"))
        panel.keyboard.press("Escape")
        expect(region).to_be_hidden()


def test_the_model_menu_shows_a_long_item_whole(margin: Margin):
    providers = [
        {
            "id": "a",
            "type": "openai",
            "name": "My local model",
            "baseUrl": "http://127.0.0.1:9/v1",
            "model": "test-model-7b-instruct",
        },
        {
            "id": "b",
            "type": "openai",
            "name": "OpenRouter",
            "baseUrl": "https://openrouter.ai/api/v1",
            "apiKey": "k",
            "model": "gpt-4o-mini",
        },
    ]
    reply = margin.send_message(
        {"type": "options.save", "payload": {"providers": providers, "activeProviderId": "a"}}
    )
    assert reply.get("ok"), reply
    # 360 px has room for the item on one line; 300 px (narrower than Chrome lets a side panel be)
    # has not: the menu then takes the panel's whole width and the item wraps. It is never cut.
    for width, one_line in ((400, True), (360, True), (300, False)):
        panel = open_panel(margin, width)
        panel.get_by_role("button", name=re.compile(r"^Switch model: ")).click()
        item = panel.get_by_role("menuitemradio", name="My local model — test-model-7b-instruct", exact=True)
        expect(item).to_be_visible()
        assert not item.evaluate("e => e.scrollWidth > e.clientWidth"), width
        manage = panel.get_by_role("menuitem", name="Manage providers…").bounding_box()
        box = item.bounding_box()
        assert box and manage and (box["height"] > manage["height"] * 1.5) != one_line, (width, box, manage)
        menu = panel.get_by_role("menu", name="Switch model").bounding_box()
        assert menu and menu["x"] >= 0 and menu["x"] + menu["width"] <= width, (width, menu)
        if not one_line:
            assert menu["width"] >= width - 16, (width, menu)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        panel.screenshot(path=str(ARTIFACTS / f"first-hour-model-menu-{width}.png"))
        panel.close()
