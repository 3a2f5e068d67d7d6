"""The panel in each of the seven languages, at a narrow side panel's width: screenshots written to
tests/artifacts/panel-<locale>-{welcome,conversation,sessions,aged-card}.png (looked at by a person), and what can be
measured of them checked: nothing in the header or the composer is cut off, overflows its box or
overlaps its neighbour."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import COLD_TIMEOUT_MS, Margin
from histories import AGED

ARTIFACTS = Path(__file__).resolve().parents[2] / "tests" / "artifacts"
LOCALES = {"en": "en", "zh_CN": "zh-CN", "ja": "ja", "ko": "ko", "es": "es", "pt_BR": "pt-BR", "ru": "ru"}

CARD = {
    "role": "user",
    "content": "[Page context] Page: How rivers carve canyons\nURL: https://example.com/rivers\n"
    "Attached: 2026-12-02 14:05 UTC\n\nRivers carve canyons over millions of years.",
    "attachment": {
        "kind": "page",
        "title": "How rivers carve canyons",
        "url": "https://example.com/rivers",
        "site": "example.com",
        "chars": 12345,
        "truncated": False,
        "originalChars": 12345,
        "capturedAt": 1764684300000,
    },
}
CONVERSATION = [
    {"role": "user", "content": "How do rivers cut rock?", "createdAt": 1764684310000},
    {
        "role": "assistant",
        "createdAt": 1764684320000,
        "usage": {"input": 1234, "cachedInput": 1000, "output": 56},
        "cost": 0.0031,
        "content": "Mostly by **abrasion**: sand and pebbles grind the bed.\n\n```python\nprint('rock')\n```",
    },
    CARD,
]

# Boxes that must not overlap, and elements whose content must fit (not clipped, not spilling).
LAYOUT_JS = """() => {
    const box = (el) => el.getBoundingClientRect();
    const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const problems = [];
    const pairs = [['.brand', '.top-actions'], ['.tools', '#send'], ['#edit-bar > span', '#edit-cancel']];
    for (const [a, b] of pairs) {
        const x = document.querySelector(a), y = document.querySelector(b);
        if (x && y && x.offsetParent && y.offsetParent && overlap(box(x), box(y))) problems.push(`${a} overlaps ${b}`);
    }
    const width = document.documentElement.clientWidth;
    const fits = ['.topbar', '.composer', '#edit-bar', '#edit-bar > span', '#edit-cancel', '.composer-row', '#alert-text', '.welcome', '.att-meta'];
    for (const selector of fits) {
        for (const el of document.querySelectorAll(selector)) {
            if (!el.offsetParent) continue;
            const r = box(el);
            if (r.right > width + 1 || r.left < -1) problems.push(`${selector} leaves the panel (${r.left}..${r.right} of ${width})`);
            if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'auto') problems.push(`${selector} is cut off (${el.scrollWidth} > ${el.clientWidth})`);
        }
    }
    // One line each: the wordmark, the model chip, the header's and the composer's buttons.
    for (const el of document.querySelectorAll('.wordmark, #model-name, .top-actions, #edit-cancel, .composer-row')) {
        if (!el.offsetParent) continue;
        const line = parseFloat(getComputedStyle(el).fontSize) * 1.9;
        if (box(el).height > Math.max(line, 40)) problems.push(`${el.className || el.id} wraps (${box(el).height}px)`);
    }
    for (const button of document.querySelectorAll('.topbar button, .composer button')) {
        if (!button.offsetParent) continue;
        const r = box(button);
        if (r.width < 16 || r.height < 16) problems.push(`${button.id || button.className} is squeezed (${r.width}x${r.height})`);
    }
    return problems;
}"""


# An attachment card: its text and buttons inside the card, the buttons on one line each.
CARD_JS = """(card) => {
    const outer = card.getBoundingClientRect();
    const problems = [];
    for (const el of card.querySelectorAll('button, .att-title, .att-meta, .att-slimming-text')) {
        const r = el.getBoundingClientRect();
        if (r.right > outer.right + 1 || r.left < outer.left - 1) problems.push(`${el.textContent || el.className} leaves the card`);
        if (el.scrollWidth > el.clientWidth + 1) problems.push(`${el.textContent || el.className} is cut off`);
        if (el.tagName === 'BUTTON' && el.textContent && r.height > 40) problems.push(`${el.textContent} wraps`);
    }
    return problems;
}"""


# The drawer: every control inside the drawer's box, the title clear of the close button.
DRAWER_JS = """() => {
    const drawer = document.querySelector('.sp').getBoundingClientRect();
    const problems = [];
    for (const el of document.querySelectorAll('.sp button, .sp input, .sp label, .sp-badge, .sp-date')) {
        if (!el.offsetParent) continue;
        const r = el.getBoundingClientRect();
        if (r.right > drawer.right + 1 || r.left < drawer.left - 1) problems.push(`${el.textContent || el.className} leaves the drawer`);
        if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'INPUT') problems.push(`${el.textContent} is cut off`);
    }
    const title = document.querySelector('.sp-title').getBoundingClientRect();
    const close = document.querySelector('.sp-head .sp-icon').getBoundingClientRect();
    if (title.right > close.left) problems.push('the title runs under the close button');
    return problems;
}"""


@pytest.fixture
def panel(margin: Margin, provider_config):
    pinned = {"id": "s1", "name": "How rivers carve canyons", "createdAt": 1764684300000, "pinned": True}
    other = {"id": "s2", "name": "Lyon", "createdAt": 1700000000000, "pinned": False}
    for entry in (pinned, other):
        entry["history"] = [{"role": "user", "content": "Where?"}, {"role": "assistant", "content": "There."}]
    margin.storage_set({"savedSessions": [pinned, other]})
    margin.save_provider(
        base_url=provider_config["baseUrl"],
        api_key=provider_config["apiKey"],
        name="OpenRouter",
        model="gpt-4o-mini",
    )
    page = margin.context.new_page()
    page.set_viewport_size({"width": 360, "height": 720})
    page.goto(margin.url("sidepanel.html"))
    page.locator("body[data-ready]").wait_for(state="attached", timeout=COLD_TIMEOUT_MS)
    return page


def use(margin: Margin, page, locale: str) -> None:
    margin.storage_set({"uiLanguage": LOCALES[locale]})
    page.wait_for_function("(tag) => document.documentElement.lang === tag", arg=LOCALES[locale])
    page.wait_for_timeout(150)


def test_the_panel_in_seven_languages_holds_its_layout(margin: Margin, panel, fake_provider):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = panel
    problems: dict[str, list[str]] = {}
    for locale in LOCALES:
        margin.storage_set({"history": []})
        use(margin, page, locale)
        page.locator("#welcome").wait_for(state="visible")
        problems[f"{locale} welcome"] = page.evaluate(LAYOUT_JS)
        page.screenshot(path=str(ARTIFACTS / f"panel-{locale}-welcome.png"))

        margin.storage_set({"history": AGED + CONVERSATION})
        aged = page.locator(".attachment-card[data-slimming=aged]")
        aged.wait_for(timeout=COLD_TIMEOUT_MS)
        aged.scroll_into_view_if_needed()
        problems[f"{locale} aged card"] = aged.evaluate(CARD_JS)
        aged.screenshot(path=str(ARTIFACTS / f"panel-{locale}-aged-card.png"))
        page.locator("article[data-role=user] button[data-action=edit]").last.click()
        page.locator("#edit-bar").wait_for(state="visible")
        page.locator("#file-input").set_input_files(
            files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not a picture"}]
        )
        page.locator("#alert-box").wait_for(state="visible")
        problems[f"{locale} conversation"] = page.evaluate(LAYOUT_JS)
        page.screenshot(path=str(ARTIFACTS / f"panel-{locale}-conversation.png"))
        page.keyboard.press("Escape")
        page.locator("#alert-dismiss").click()

        page.locator("#sessions").click()
        page.locator(".sp-item").nth(1).wait_for(timeout=COLD_TIMEOUT_MS)
        page.wait_for_timeout(200)
        problems[f"{locale} sessions"] = page.evaluate(DRAWER_JS)
        page.screenshot(path=str(ARTIFACTS / f"panel-{locale}-sessions.png"))
        page.keyboard.press("Escape")
        page.locator(".sp").wait_for(state="hidden")
    found = {state: lines for state, lines in problems.items() if lines}
    assert found == {}, found
