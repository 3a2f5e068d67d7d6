"""An Anthropic (Claude) provider end to end: configured, then a chat whose requests are the
Messages API's, with its headers, and whose answer shows and is stored with its usage."""

from __future__ import annotations

import itertools
import re

import pytest
from conftest import API_KEY
from fake_behaviours import Cut, HttpError
from fake_provider import FakeProvider
from harness import Margin

ANTHROPIC_LABEL = "Anthropic (Claude)"


def configure_anthropic(margin: Margin, fake_provider: FakeProvider) -> str:
    """Through the options page when its "Provider type" offers Anthropic; otherwise through the
    worker's `options.save` (the page's form is being reworked). Returns which way was used."""
    page = margin.open_options()
    kind = page.get_by_role("combobox", name="Provider type")
    kind.wait_for(state="visible")
    offered = kind.evaluate("e => [...(e.options || [])].map(o => o.value + ' ' + o.textContent)")
    if any("anthropic" in option.lower() for option in offered):
        margin.configure_provider(
            base_url=fake_provider.base_url,
            api_key=API_KEY,
            model="claude-fake",
            name="Claude",
            provider_type="anthropic",
            page=page,
        )
        (provider,) = margin.storage_get(["providers"])["providers"]
        assert provider["type"] == "anthropic"
        return "options page"
    page.close()
    provider = {
        "id": "claude",
        "type": "anthropic",
        "name": "Claude",
        "baseUrl": fake_provider.base_url,
        "apiKey": API_KEY,
        "model": "claude-fake",
    }
    reply = margin.send_message(
        {"type": "options.save", "payload": {"providers": [provider], "activeProviderId": "claude"}}
    )
    assert isinstance(reply, dict) and reply.get("ok"), reply
    return "options.save"


def text_of(message: dict) -> str:
    return "\n".join(b["text"] for b in message["content"] if b["type"] == "text")


def test_a_chat_speaks_the_messages_api_with_its_headers_and_caches_the_prefix(
    margin: Margin, fake_provider: FakeProvider
):
    configure_anthropic(margin, fake_provider)
    page = margin.open_panel()

    margin.send(page, "Hello Claude")
    assert "You said: Hello Claude" in margin.wait_answer(page)

    (first,) = fake_provider.wait_for_chat_requests(1)
    assert first.method == "POST"
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == API_KEY
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert first.headers["anthropic-dangerous-direct-browser-access"] == "true"
    assert first.headers["content-type"] == "application/json"
    assert "authorization" not in first.headers
    body = first.body
    assert list(body)[:3] == ["model", "max_tokens", "stream"]
    assert body["model"] == "claude-fake"
    assert body["max_tokens"] == 8192
    assert body["stream"] is True
    assert body["messages"][0]["role"] == "user"
    assert text_of(body["messages"][-1]).endswith("Hello Claude")
    assert all(block["type"] in ("text", "image") for m in body["messages"] for block in m["content"])

    margin.send(page, "And again")
    assert "You said: And again" in margin.wait_answer(page)
    second = fake_provider.wait_for_chat_requests(2)[1]
    messages = second.body["messages"]
    roles = [m["role"] for m in messages]
    assert roles[-3:] == ["user", "assistant", "user"]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert messages[-2]["content"] == [
        {"type": "text", "text": "You said: Hello Claude", "cache_control": {"type": "ephemeral"}}
    ]
    assert text_of(messages[-1]).endswith("And again")
    assert sum("cache_control" in b for m in messages for b in m["content"]) == 1

    answer = margin.history()[-1]
    assert answer["role"] == "assistant"
    assert answer["content"] == "You said: And again"
    assert answer["usage"]["output"] >= 1
    assert answer["usage"]["input"] >= 1


ERROR_CASES = {
    "overloaded": (
        HttpError(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        re.compile(r"Anthropic is overloaded right now \(529\)\. Try again in a moment"),
    ),
    "cut_stream": (
        Cut("The answer starts", chunks=2, pause=0.5),
        re.compile(r"broke before the answer was finished"),
    ),
    "unknown_model": (
        HttpError(
            404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-fake"}}
        ),
        re.compile(r"does not know the model “claude-fake”"),
    ),
}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_anthropic_failures_show_their_sentence(margin: Margin, fake_provider: FakeProvider, case):
    behaviour, expected = ERROR_CASES[case]
    configure_anthropic(margin, fake_provider)
    fake_provider.script(behaviour)
    page = margin.open_panel()
    margin.send(page, f"Question for {case}")
    sentence = margin.wait_alert(page)
    margin.wait_idle(page)
    assert expected.search(sentence), sentence
    question, *answer = margin.history()
    assert (question["role"], question["content"]) == ("user", f"Question for {case}")
    if case == "cut_stream":  # what arrived before the cut is kept, marked incomplete
        ((kept,),) = (answer,)
        assert kept["role"] == "assistant" and kept["incomplete"] is True
        assert kept["content"].startswith("The answer")
    else:
        assert answer == []
