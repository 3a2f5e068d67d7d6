"""Chatting in the side panel against the fake provider: stream, stop, regenerate, edit, copy, errors.

Every test drives the panel by the accessible names of docs/interface.md and then checks three
witnesses: what the user sees, what chrome.storage holds, and what the provider received.
"""

from __future__ import annotations

import re
import socket

import pytest
from fake_behaviours import Cut, Garbage, bad_key, model_not_found, rate_limited, server_error, slow_stream
from fake_provider import FakeProvider
from harness import Margin, poll


def conversation(page):
    return page.get_by_role("log", name="Conversation").or_(page.get_by_role("region", name="Conversation"))


def dialogue(messages: list[dict]) -> list[tuple[str, str]]:
    """(role, text) of the user and assistant messages, system prompts left out."""
    out = []
    for message in messages:
        if message.get("role") == "system":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        out.append((message["role"], content))
    return out


def button_in(bubble, page, name: str):
    """The bubble's own button (falls back to the page's, for a panel that keeps one outside)."""
    own = bubble.get_by_role("button", name=name, exact=True)
    return own if own.count() else page.get_by_role("button", name=name, exact=True)


def test_answer_streams_in_as_markdown_and_everything_agrees(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    page = margin.open_panel()
    box = margin.message_box(page)

    # Shift+Enter breaks a line and sends nothing.
    box.fill("first line")
    box.press("Shift+Enter")
    box.press_sequentially("second line")
    assert box.input_value() == "first line\nsecond line"
    assert fake_provider.chat_requests == []
    box.fill("")

    reply = "Here is **bold** text and `inline code`.\n\n- one\n- two\n\n" + " ".join(
        f"w{i}" for i in range(40)
    )
    fake_provider.script(reply=reply, chunks=20, delay=0.1)
    margin.send(page, "Hello Margin")

    assistant = margin.bubbles(page, "assistant")
    # A partial answer is on screen before the stream ends, and Stop is offered meanwhile.
    stop = page.get_by_role("button", name="Stop", exact=True)

    def partial() -> bool:
        shown = margin.bubble_texts(page, "assistant")
        return bool(shown) and "bold" in shown[-1] and "w39" not in shown[-1] and stop.is_visible()

    poll(
        partial,
        timeout=45,
        message=lambda: f"no partial answer with Stop seen; bubbles={margin.bubble_texts(page)}",
    )

    margin.wait_answer(page)
    assert margin.bubble_texts(page, "user") == ["Hello Margin"]
    assert assistant.count() == 1
    assert "w39" in margin.bubble_texts(page, "assistant")[-1]
    assert assistant.last.locator("strong").inner_text() == "bold"
    assert assistant.last.locator("code").first.inner_text() == "inline code"
    assert assistant.last.locator("li").count() == 2
    assert box.input_value() == ""

    (request,) = fake_provider.chat_requests
    assert request.headers["authorization"] == f"Bearer {margin_key(fake_provider)}"
    assert request.body["model"] == "fake-model"
    assert request.body["stream"] is True
    assert dialogue(request.body["messages"]) == [("user", "Hello Margin")]

    history = margin.history()
    assert [(r["role"], r["content"]) for r in history] == [("user", "Hello Margin"), ("assistant", reply)]
    assert not history[1].get("stopped")


def margin_key(server: FakeProvider) -> str:
    return server.api_key


def test_stop_keeps_what_arrived(configured_margin: Margin, fake_provider: FakeProvider):
    margin = configured_margin
    page = margin.open_panel()
    fake_provider.script(slow_stream(chunks=100, delay=0.1))
    margin.send(page, "Count slowly")
    assistant = margin.bubbles(page, "assistant")
    poll(
        lambda: assistant.count() and "word5 " in margin.bubble_texts(page, "assistant")[-1] + " ",
        timeout=45,
        message=lambda: f"the stream never showed word5: {margin.bubble_texts(page)}",
    )
    page.get_by_role("button", name="Stop", exact=True).click()
    margin.wait_idle(page, timeout_ms=10_000)

    # The provider's stream was really cancelled (the fetch was aborted, not just hidden).
    (request,) = fake_provider.chat_requests
    assert request.finished.wait(5)
    assert request.client_gone.is_set(), "Stop did not abort the request to the provider"

    history = poll(
        lambda: (h := margin.history()) and h[-1]["role"] == "assistant" and h,
        timeout=10,
        message=lambda: f"no stopped answer stored: {margin.history()}",
    )
    assert [r["role"] for r in history] == ["user", "assistant"]
    stored = history[-1]
    assert stored.get("stopped") is True
    assert stored["content"].startswith("word1 word2 word3 word4 word5")
    assert "word100" not in stored["content"]

    assert margin.bubble_texts(page, "user") == ["Count slowly"]
    assert assistant.count() == 1
    shown = margin.bubble_texts(page, "assistant")[-1]
    assert stored["content"].strip().split()[-1] in shown
    assert "word100" not in shown


def test_regenerate_replaces_the_answer_and_resends_the_same_question(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    page = margin.open_panel()
    fake_provider.script(reply="First answer.", chunks=2)
    margin.send(page, "Tell me a fact")
    assert "First answer." in margin.wait_answer(page)

    fake_provider.script(reply="Second answer.", chunks=2)
    assistant = margin.bubbles(page, "assistant")
    button_in(assistant.last, page, "Regenerate").click()
    poll(
        lambda: "Second answer." in " ".join(margin.bubble_texts(page, "assistant")),
        timeout=45,
        message=lambda: f"no second answer: {margin.bubble_texts(page)}",
    )
    margin.wait_idle(page)

    assert margin.bubble_texts(page, "user") == ["Tell me a fact"]
    assert margin.bubble_texts(page, "assistant") == ["Second answer."]
    first, second = fake_provider.wait_for_chat_requests(2)
    assert second.body["messages"] == first.body["messages"]
    assert dialogue(second.body["messages"]) == [("user", "Tell me a fact")]
    assert [(r["role"], r["content"]) for r in margin.history()] == [
        ("user", "Tell me a fact"),
        ("assistant", "Second answer."),
    ]


def test_edit_and_resend_replaces_the_bubble_and_what_follows(
    configured_margin: Margin, fake_provider: FakeProvider
):
    margin = configured_margin
    page = margin.open_panel()
    margin.send(page, "first question")
    margin.wait_answer(page)
    margin.send(page, "second question")
    margin.wait_answer(page)
    assert margin.bubbles(page).count() == 4

    first_user = margin.bubbles(page, "user").first
    button_in(first_user, page, "Edit").click()
    box = margin.message_box(page)
    assert box.input_value() == "first question"
    box.fill("edited question")
    page.get_by_role("button", name="Send", exact=True).click()
    fake_provider.wait_for_chat_requests(3)
    expected = ["edited question", "You said: edited question"]
    poll(
        lambda: margin.bubble_texts(page) == expected,
        timeout=30,
        message=lambda: f"the panel shows {margin.bubble_texts(page)}, expected {expected}",
    )
    margin.wait_idle(page)

    assert margin.bubble_texts(page, "user") == ["edited question"]
    assert margin.bubble_texts(page, "assistant") == ["You said: edited question"]
    assert [(r["role"], r["content"]) for r in margin.history()] == [
        ("user", "edited question"),
        ("assistant", "You said: edited question"),
    ]
    last = fake_provider.wait_for_chat_requests(3)[-1]
    assert dialogue(last.body["messages"]) == [("user", "edited question")]


def test_escape_cancels_an_edit(configured_margin: Margin, fake_provider: FakeProvider):
    margin = configured_margin
    page = margin.open_panel()
    margin.send(page, "keep me")
    margin.wait_answer(page)
    button_in(margin.bubbles(page, "user").first, page, "Edit").click()
    box = margin.message_box(page)
    assert box.input_value() == "keep me"
    box.press("Escape")
    assert box.input_value() == ""
    margin.send(page, "a new question")
    margin.wait_answer(page)
    assert margin.bubble_texts(page, "user") == ["keep me", "a new question"]
    assert len(margin.history()) == 4


def test_copy_puts_the_message_on_the_clipboard(configured_margin: Margin, fake_provider: FakeProvider):
    margin = configured_margin
    page = margin.open_panel()
    # Record what the page writes to the clipboard (headless Chromium has no system clipboard).
    page.evaluate(
        """() => {
            window.__copied = [];
            const write = async (text) => { window.__copied.push(text); };
            navigator.clipboard.writeText = write;
            const original = navigator.clipboard.write && navigator.clipboard.write.bind(navigator.clipboard);
            navigator.clipboard.write = async (items) => {
                for (const item of items) {
                    if (item.types.includes('text/plain')) window.__copied.push(await (await item.getType('text/plain')).text());
                }
            };
        }"""
    )
    fake_provider.script(reply="Copy **this** answer.", chunks=2)
    margin.send(page, "Say something to copy")
    margin.wait_answer(page)

    button_in(margin.bubbles(page, "assistant").last, page, "Copy").click()
    copied = poll(
        lambda: page.evaluate("window.__copied"), timeout=5, message="Copy wrote nothing to the clipboard"
    )
    assert "Copy" in copied[-1] and "this" in copied[-1] and "answer" in copied[-1]

    button_in(margin.bubbles(page, "user").last, page, "Copy").click()
    poll(
        lambda: page.evaluate("window.__copied.length") >= 2,
        timeout=5,
        message="Copy on the user bubble wrote nothing",
    )
    assert page.evaluate("window.__copied")[-1].strip() == "Say something to copy"


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


ERROR_CASES = {
    # The provider's status, what to do next, and (where it said one) the provider's own words.
    "bad_key": (bad_key(), re.compile(r"rejected the API key \(401\)\. Check the key in Margin's options")),
    "model_not_found": (
        model_not_found(),
        re.compile(r"does not know the model “[^”]+” or that address \(404\)"),
    ),
    "rate_limited": (
        rate_limited(20),
        re.compile(r"limiting requests \(429\)\. Wait 20 seconds and try again"),
    ),
    "server_error": (server_error(), re.compile(r"server at 127\.0\.0\.1:\d+ failed \(500\)\. Try again")),
    "garbage_stream": (Garbage(), re.compile(r"not a chat stream.*Base URL", re.I)),
    "cut_stream": (
        Cut("The answer starts", chunks=2, pause=0.5),
        re.compile(r"broke before the answer was finished", re.I),
    ),
}


@pytest.mark.parametrize("case", [*ERROR_CASES, "connection_refused"])
def test_provider_errors_show_a_sentence_and_keep_the_question(
    margin: Margin, fake_provider: FakeProvider, provider_config, case
):
    if case == "connection_refused":
        base_url, expected = (
            f"http://127.0.0.1:{closed_port()}/v1",
            re.compile(r"^Margin could not reach 127\.0\.0\.1:\d+\. Check that the server is running"),
        )
    else:
        behaviour, expected = ERROR_CASES[case]
        fake_provider.script(behaviour)
        base_url = provider_config["baseUrl"]
    margin.save_provider(base_url=base_url, api_key=provider_config["apiKey"])
    page = margin.open_panel()
    margin.send(page, f"Question for {case}")

    sentence = margin.wait_alert(page)
    margin.wait_idle(page)
    assert expected.search(sentence), sentence
    assert len(sentence) > 20 and not re.search(r"Traceback|undefined|\[object|null\b|NaN", sentence), (
        sentence
    )

    assert margin.bubble_texts(page, "user") == [f"Question for {case}"]
    if case == "cut_stream":
        # What arrived before the cut is kept, marked incomplete, in storage and on screen.
        history = margin.history()
        assert [(r["role"], r["content"]) for r in history] == [
            ("user", f"Question for {case}"),
            ("assistant", "The answer starts"),
        ]
        assert history[-1]["incomplete"] is True and "imagesSeen" not in history[0]
        assistant = margin.bubbles(page, "assistant")
        poll(
            lambda: assistant.count() == 1 and assistant.locator("p.answer-note").count() == 1,
            timeout=5,
            message="the incomplete answer is not shown with its note",
        )
        assert "The answer starts" in margin.bubble_texts(page, "assistant")[0]
        assert assistant.locator("p.answer-note").inner_text() == "Incomplete: the connection broke."
        assert assistant.get_by_role("button", name="Regenerate").count() == 1
    else:
        assert margin.bubbles(page, "assistant").count() == 0
        assert [(r["role"], r["content"]) for r in margin.history()] == [("user", f"Question for {case}")]
    if case != "connection_refused":
        assert len(fake_provider.chat_requests) == 1
