"""Your own prompts and actions (issue 34), end to end: saved prompts in the options page, "/" in
the message box, a prompt in the right-click menu, "Read aloud", "Voice input" where the browser
has no recognition, and ArrowUp to edit the last question.

Witnesses: what the scripted model server received, what chrome.storage holds, the menu items the
worker made, what speechSynthesis was handed (stubbed in the page), what the user sees by the
accessible names of docs/interface.md, and axe-core at zero findings.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from a11y import violations
from fake_provider import FakeProvider
from harness import COLD_TIMEOUT_MS, Margin, poll
from web_pages import WebPages

SPANISH = {"name": "Spanish", "text": "Translate {{selection}} into Spanish.", "menu": True}
MENU_ITEM_EXISTS_JS = """(id) => new Promise((resolve) => chrome.contextMenus.update(id, {},
    () => resolve(chrome.runtime.lastError ? chrome.runtime.lastError.message : 'ok')))"""


@pytest.fixture
def web() -> Iterator[WebPages]:
    with WebPages() as pages:
        yield pages


def stored_prompts(margin: Margin) -> list[dict]:
    return margin.storage_get(["prompts"]).get("prompts", [])


def save_prompts(margin: Margin, prompts: list[dict]) -> list[dict]:
    reply = margin.send_message({"type": "prompts.save", "payload": {"prompts": prompts}})
    assert reply["ok"], reply
    return reply["value"]["prompts"]


def type_filter(panel, box, text: str):
    """Type `text` (a "/filter") into the message box; the "Prompts" list, once it offers an option."""
    box.press_sequentially(text)
    listbox = panel.get_by_role("listbox", name="Prompts")
    listbox.get_by_role("option").first.wait_for(timeout=COLD_TIMEOUT_MS)
    return listbox


def test_the_options_page_saves_orders_and_marks_prompts_for_the_menu(margin: Margin):
    page = margin.open_options()
    section = page.get_by_role("region", name="Prompts")
    section.get_by_role("list", name="Saved prompts").get_by_role("listitem").nth(6).wait_for(
        timeout=COLD_TIMEOUT_MS
    )
    page.get_by_role("textbox", name="Prompt name").fill("Spanish")
    page.get_by_role("textbox", name="Prompt text").fill(SPANISH["text"])
    page.get_by_role("button", name="Save prompt").click()
    section.get_by_role("status").filter(has_text="Saved “Spanish”").wait_for()
    assert stored_prompts(margin)[-1]["name"] == "Spanish"
    # Reorder, mark for the menu, hide a built-in: each a whole-list save.
    page.get_by_role("button", name="Move Spanish up").click()
    poll(lambda: [p.get("name") for p in stored_prompts(margin)][-2] == "Spanish", timeout=20)
    poll(
        lambda: (
            page.evaluate("() => document.activeElement?.getAttribute('aria-label')") == "Move Spanish up"
        ),
        timeout=20,
    )
    row = section.get_by_role("listitem").filter(has_text="Spanish")
    row.get_by_role("checkbox", name="Show in the right-click menu").check()
    poll(lambda: next(p for p in stored_prompts(margin) if p.get("name") == "Spanish")["menu"], timeout=20)
    page.get_by_role("button", name="Hide Tighten").click()
    poll(lambda: next(p for p in stored_prompts(margin) if p["id"] == "tighten")["hidden"], timeout=20)
    page.get_by_role("button", name="Show Tighten").wait_for()
    assert violations(page) == []
    # The worker rebuilt the menu from the saved list: the new prompt's item is there.
    spanish_id = next(p["id"] for p in stored_prompts(margin) if p.get("name") == "Spanish")
    worker = margin.worker()
    poll(lambda: worker.evaluate(MENU_ITEM_EXISTS_JS, f"margin-prompt:{spanish_id}") == "ok", timeout=20)
    # A text left empty is refused in one sentence, and the form keeps what was typed.
    page.get_by_role("button", name="Edit Spanish").click()
    page.get_by_role("textbox", name="Prompt text").fill("   ")
    page.get_by_role("button", name="Save prompt").click()
    assert "has no text" in section.get_by_role("alert").inner_text()
    assert page.get_by_role("textbox", name="Prompt name").input_value() == "Spanish"


def test_slash_picks_a_prompt_that_is_sent_and_arrow_up_edits_the_last_question(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    panel = margin.open_panel()
    box = margin.message_box(panel)
    listbox = type_filter(panel, box, "/tig")
    options = listbox.get_by_role("option")
    assert options.first.get_attribute("aria-selected") == "true"
    assert "Tighten" in options.first.inner_text()
    assert box.get_attribute("aria-activedescendant") == options.first.get_attribute("id")
    assert violations(panel) == []
    # Escape closes the list and leaves the words; typing again opens it.
    box.press("Escape")
    listbox.wait_for(state="hidden")
    assert box.input_value() == "/tig"
    box.press("Backspace")
    box.press("Backspace")
    box.press("Backspace")
    listbox.wait_for()
    assert options.count() == 7
    box.press("ArrowDown")
    box.press("ArrowDown")
    assert box.get_attribute("aria-activedescendant") == options.nth(2).get_attribute("id")
    box.press_sequentially("tig")
    box.press("Enter")  # picks, does not send
    listbox.wait_for(state="hidden")
    text = "Rewrite this shorter and clearer, keeping its meaning."
    poll(lambda: box.input_value() == text, timeout=20)
    assert fake_provider.chat_requests == []  # Enter picked: nothing was sent
    fake_provider.script(reply="Shorter.")
    box.press("Enter")
    margin.wait_answer(panel, before=0)
    (request,) = fake_provider.wait_for_chat_requests(1)
    assert request.body["messages"][-1]["content"] == text
    # ArrowUp in the empty box edits the last question; Escape leaves it as it was.
    box.press("ArrowUp")
    panel.locator("#edit-bar").wait_for(state="visible")
    assert box.input_value() == text
    box.press("Escape")
    panel.locator("#edit-bar").wait_for(state="hidden")
    assert box.input_value() == ""


def test_words_typed_while_a_picked_prompt_is_filled_are_kept(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    panel = margin.open_panel()
    box = margin.message_box(panel)
    type_filter(panel, box, "/tig")
    # The fill waits for Python's cold start: the user goes on typing meanwhile.
    margin.stop_service_worker()
    box.press("Enter")
    box.press_sequentially(" for a tweet")
    box.press("Enter")  # not a send: the box does not hold the prompt yet
    text = "Rewrite this shorter and clearer, keeping its meaning."
    poll(lambda: box.input_value() == f"{text} for a tweet", timeout=COLD_TIMEOUT_MS / 1000)
    assert panel.get_by_role("listbox", name="Prompts").is_hidden()
    assert panel.evaluate("document.activeElement.selectionStart") == len(f"{text} for a tweet")
    assert fake_provider.chat_requests == [] and margin.history() == []


def test_a_prompt_in_the_right_click_menu_runs_on_the_selection(
    configured_margin: Margin, fake_provider: FakeProvider, web: WebPages
):
    margin = configured_margin
    saved = save_prompts(margin, [SPANISH])
    prompt_id = saved[0]["id"]
    worker = margin.worker()
    poll(lambda: worker.evaluate(MENU_ITEM_EXISTS_JS, f"margin-prompt:{prompt_id}") == "ok", timeout=20)
    assert worker.evaluate(MENU_ITEM_EXISTS_JS, "margin-explain") == "ok"
    panel = margin.open_panel()
    article = margin.context.new_page()
    article.goto(web.url("/article.html"))
    article.bring_to_front()
    fake_provider.script(reply="Grano a grano.")
    # Native menus cannot be clicked from a test: call the handler the listener calls.
    worker.evaluate(
        """async ([url, id]) => {
        const [tab] = await chrome.tabs.query({url});
        return globalThis.marginExplainClicked({menuItemId: id, selectionText: 'grain by grain', pageUrl: url}, tab);
    }""",
        [web.url("/article.html"), f"margin-prompt:{prompt_id}"],
    )
    margin.wait_answer(panel, before=0)
    (request,) = fake_provider.wait_for_chat_requests(1)
    selection, question = request.body["messages"]
    assert selection["content"].endswith("\n\ngrain by grain")
    assert question["content"] == "Translate the selected text above into Spanish."
    assert margin.bubble_texts(panel, "user") == ["Translate the selected text above into Spanish."]
    # "/" with the same prompt: {{selection}} is what is selected in the active tab now.
    article.bring_to_front()
    article.evaluate("() => getSelection().selectAllChildren(document.querySelector('h1'))")
    box = margin.message_box(panel)
    type_filter(panel, box, "/span")
    box.press("Enter")
    poll(lambda: box.input_value() == "Translate How rivers carve canyons into Spanish.", timeout=20)
    box.fill("")
    # "/" with a prompt that holds {{page}}: the active tab is attached, as "Attach page" does.
    type_filter(panel, box, "/summarize the")
    box.press("Enter")
    poll(lambda: box.input_value() == "Summarize the attached page in five short bullet points.", timeout=20)
    panel.get_by_role("group", name="Attached page: How rivers carve canyons").wait_for(timeout=45_000)
    # A prompt taken out of the menu loses its item.
    save_prompts(margin, [{**saved[0], "menu": False}])
    poll(lambda: worker.evaluate(MENU_ITEM_EXISTS_JS, f"margin-prompt:{prompt_id}") != "ok", timeout=20)


SPEECH_STUB_JS = """(() => {
    window.__spoken = [];
    window.__cancelled = 0;
    const stub = {
        speak(utterance) { window.__spoken.push({ text: utterance.text, lang: utterance.lang }); },
        cancel() { window.__cancelled += 1; },
        speaking: false, pending: false, paused: false,
        getVoices() { return []; },
        addEventListener() {}, removeEventListener() {},
    };
    Object.defineProperty(window, 'speechSynthesis', { value: stub, configurable: true });
})();"""

ANSWER = "Here:\n\n```python\nprint('x' * 400)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThat is **all**."


def test_read_aloud_says_the_answer_with_code_and_tables_summarized(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    margin.context.add_init_script(SPEECH_STUB_JS)
    panel = margin.open_panel()
    fake_provider.script(reply=ANSWER)
    margin.send(panel, "Show me")
    margin.wait_answer(panel)
    answer = margin.bubbles(panel, "assistant").last
    answer.get_by_role("button", name="Read aloud").click()
    answer.get_by_role("button", name="Stop reading").wait_for()
    spoken = panel.evaluate("() => window.__spoken")
    assert [s["text"] for s in spoken] == ["Here:", "code block.", "table.", "That is all."]
    assert {s["lang"] for s in spoken} == {"en"}
    assert violations(panel) == []
    answer.get_by_role("button", name="Stop reading").click()
    answer.get_by_role("button", name="Read aloud").wait_for()
    assert panel.evaluate("() => window.__cancelled") >= 1


NO_RECOGNITION_JS = """(() => {
    delete window.webkitSpeechRecognition;
    delete window.SpeechRecognition;
})();"""


def test_voice_input_asks_for_the_microphone_in_a_tab_or_says_it_cannot(margin: Margin):
    # This Chromium has recognition but Margin has no microphone yet: a tab asks for it once.
    panel = margin.open_panel()
    voice = panel.get_by_role("button", name="Voice input")
    assert voice.get_attribute("aria-disabled") is None
    with margin.context.expect_page() as opened:
        voice.click()
    microphone = opened.value
    microphone.wait_for_load_state()
    assert microphone.url == margin.url("microphone.html")
    microphone.get_by_role("heading", name="Microphone for Margin").wait_for()
    microphone.get_by_role("button", name="Allow microphone").wait_for()
    assert violations(microphone) == []
    assert margin.wait_alert(panel).startswith("Allow the microphone in the tab that just opened")
    panel.close()
    # Where the browser has no recognition, the button says so instead of doing nothing.
    margin.context.add_init_script(NO_RECOGNITION_JS)
    panel = margin.open_panel()
    voice = panel.get_by_role("button", name="Voice input")
    assert voice.get_attribute("aria-disabled") == "true"
    sentence = (
        "Voice input is not available: this browser has no speech recognition. Type your message instead."
    )
    assert panel.locator("#voice-input-reason").inner_text() == sentence  # its description
    voice.press("Enter")  # aria-disabled, still reachable: it says why instead of doing nothing
    assert margin.wait_alert(panel) == sentence
    assert sum(p.url.endswith("/microphone.html") for p in margin.context.pages) == 1  # no second tab
    assert violations(panel) == []
