"""The side panel from the keyboard alone: a whole turn, an edit cancelled with Escape, a new
session and a switch back to the old one through the sessions drawer, with a visible focus ring
on every control reached and the focus returning where it came from. Also: reduced motion stops
every animation, and the streaming answer is announced politely once (by the stored bubble)."""

from __future__ import annotations

from fake_behaviours import slow_stream
from harness import COLD_TIMEOUT_MS, Margin, poll

# The focused element, how it is named (aria-label, else its text) and whether a ring is drawn.
FOCUSED_JS = """() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    const style = getComputedStyle(el);
    const ring = (style.boxShadow && style.boxShadow !== 'none')
        || (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0);
    return { name: (el.getAttribute('aria-label') || el.textContent || '').trim(), tag: el.tagName,
             ring: Boolean(ring), id: el.id, row: el.closest('[data-id]')?.dataset.id ?? null };
}"""


def focused(page) -> dict:
    return page.evaluate(FOCUSED_JS) or {}


def tab_to(page, name: str, *, backwards: bool = False, limit: int = 60) -> dict:
    """Press Tab (Shift+Tab) until the focus is on the control called `name`; every button passed
    on the way shows a focus ring."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        now = focused(page)
        seen.append(now.get("name"))
        if now.get("tag") == "BUTTON":
            assert now["ring"], f"no visible focus ring on {now}"
        if now.get("name") == name:
            return now
    raise AssertionError(f"Tab never reached {name!r}; passed {seen}")


def test_a_turn_an_edit_and_a_session_switch_with_the_keyboard_alone(
    configured_margin: Margin, fake_provider
):
    margin = configured_margin
    fake_provider.script(reply="Otters hold hands while they sleep.")
    page = margin.open_panel()
    assert focused(page)["id"] == "message"  # the panel opens ready to type

    page.keyboard.type("Tell me about otters")
    page.keyboard.press("Enter")
    assert margin.wait_answer(page, before=0) == "Otters hold hands while they sleep."

    # Edit from the keyboard; Escape cancels and the focus goes back to "Edit".
    page.locator("#message").focus()
    tab_to(page, "Edit", backwards=True)
    page.keyboard.press("Enter")
    page.locator("#edit-bar").wait_for(state="visible")
    assert focused(page)["id"] == "message"
    assert page.locator("#message").input_value() == "Tell me about otters"
    page.keyboard.press("Escape")
    page.locator("#edit-bar").wait_for(state="hidden")
    assert focused(page)["name"] == "Edit"
    assert page.locator("#message").input_value() == ""

    # A new session, from the header.
    tab_to(page, "New session", backwards=True)
    page.keyboard.press("Enter")
    poll(
        lambda: margin.history() == [] and margin.bubbles(page).count() == 0,
        timeout=30,
        message="not cleared",
    )

    # The drawer: Escape closes it and gives the focus back to "Sessions".
    tab_to(page, "Sessions")
    page.keyboard.press("Enter")
    page.get_by_role("searchbox", name="Search sessions").wait_for(timeout=COLD_TIMEOUT_MS)
    assert focused(page)["name"] == "Search sessions"
    page.keyboard.press("Escape")
    page.get_by_role("searchbox", name="Search sessions").wait_for(state="hidden")
    assert focused(page)["name"] == "Sessions"

    # Back to the otters: search, then Open, all from the keyboard.
    page.keyboard.press("Enter")
    page.get_by_role("searchbox", name="Search sessions").wait_for(timeout=COLD_TIMEOUT_MS)
    page.keyboard.type("otters")
    page.get_by_role("listitem").filter(has_text="Tell me about otters").wait_for(timeout=COLD_TIMEOUT_MS)
    opened = tab_to(page, "Open")
    assert opened["row"] is not None
    page.keyboard.press("Enter")
    poll(lambda: len(margin.history()) == 2, timeout=30, message=lambda: f"not opened: {margin.history()}")
    page.get_by_role("searchbox", name="Search sessions").wait_for(state="hidden")
    assert focused(page)["id"] == "message"
    assert margin.bubble_texts(page) == ["Tell me about otters", "Otters hold hands while they sleep."]


# Counts, from now on, the additions to the polite log that carry `text`: what a screen reader
# would announce (nodes added under an aria-live="off" part are not).
WATCH_LOG_JS = """(text) => {
    window.__announced = [];
    const log = document.getElementById('conversation');
    new MutationObserver((records) => {
        for (const record of records) {
            for (const node of record.addedNodes) {
                const quiet = node.parentElement?.closest('[aria-live]')?.getAttribute('aria-live') === 'off';
                if (!quiet && (node.textContent || '').includes(text)) window.__announced.push(node.textContent);
            }
        }
    }).observe(log, { childList: true, subtree: true });
}"""


def test_reduced_motion_and_one_polite_announcement_of_the_answer(configured_margin: Margin, fake_provider):
    margin = configured_margin
    fake_provider.script(slow_stream(chunks=30, delay=0.05, word="beaver"))
    page = margin.open_panel()
    page.emulate_media(reduced_motion="reduce")
    page.evaluate(WATCH_LOG_JS, "beaver30")
    margin.send(page, "Count beavers")
    margin.wait_turn_state(page, "streaming")
    page.locator("article[data-streaming] :is(.typing, .md)").first.wait_for(state="attached")
    assert page.evaluate("document.getAnimations().length") == 0
    assert page.evaluate("getComputedStyle(document.querySelector('.btn')).transitionDuration") == "0s"
    assert page.locator("article[data-streaming]").get_attribute("aria-live") == "off"
    assert page.locator("#conversation").get_attribute("aria-live") == "polite"
    margin.wait_answer(page)
    page.wait_for_timeout(300)
    assert len(page.evaluate("window.__announced")) == 1

    # Without the preference, the typing dots do move: the check above can fail.
    page.emulate_media(reduced_motion="no-preference")
    fake_provider.script(slow_stream(chunks=40, delay=0.1))
    margin.send(page, "Again")
    margin.wait_turn_state(page, "streaming")
    poll(lambda: page.evaluate("document.getAnimations().length") > 0, timeout=10, message="no animation")
    margin.wait_answer(page)
