"""The agent provider (OpenAI Responses API) end to end: configured, two turns where the second
sends only the new message with `previous_response_id`, and a forgotten conversation replayed
once in full with the notice in the panel's alert line."""

from __future__ import annotations

import fake_responses
from conftest import API_KEY
from fake_provider import FakeProvider
from harness import Margin, poll

REPLAY_NOTICE = "The provider had forgotten this conversation, so Margin sent it again in full."


def configure_responses(margin: Margin, fake_provider: FakeProvider) -> str:
    """Through the options page when its "Provider type" offers the type; else `options.save`."""
    page = margin.open_options()
    kind = page.get_by_role("combobox", name="Provider type")
    kind.wait_for(state="visible")
    offered = kind.evaluate("e => [...(e.options || [])].map(o => o.value)")
    if "openai-responses" in offered:
        margin.configure_provider(
            base_url=fake_provider.base_url,
            api_key=API_KEY,
            model="gpt-fake",
            name="Agent",
            provider_type="openai-responses",
            page=page,
        )
        (provider,) = margin.storage_get(["providers"])["providers"]
        assert provider["type"] == "openai-responses"
        return "options page"
    page.close()
    provider = {
        "id": "agent",
        "type": "openai-responses",
        "name": "Agent",
        "baseUrl": fake_provider.base_url,
        "apiKey": API_KEY,
        "model": "gpt-fake",
    }
    reply = margin.send_message(
        {"type": "options.save", "payload": {"providers": [provider], "activeProviderId": "agent"}}
    )
    assert isinstance(reply, dict) and reply.get("ok"), reply
    return "options.save"


def said(body: dict) -> list[tuple[str, str]]:
    return [
        (item["role"], "\n".join(p["text"] for p in item["content"] if "text" in p)) for item in body["input"]
    ]


def test_the_second_turn_sends_only_the_new_message_and_a_forgotten_one_is_replayed_once(
    margin: Margin, fake_provider: FakeProvider
):
    assert configure_responses(margin, fake_provider) == "options page"
    page = margin.open_panel()

    margin.send(page, "Hello agent")
    assert "You said: Hello agent" in margin.wait_answer(page)
    (first,) = fake_provider.wait_for_chat_requests(1)
    assert first.method == "POST" and first.path == "/v1/responses"
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    assert first.body["stream"] is True and first.body["store"] is True
    assert "previous_response_id" not in first.body
    assert said(first.body) == [("user", "Hello agent")]
    first_id = margin.history()[-1]["responseId"]
    assert first_id.startswith("resp_fake")

    margin.send(page, "And again")
    assert "You said: And again" in margin.wait_answer(page)
    second = fake_provider.wait_for_chat_requests(2)[1]
    assert second.body["previous_response_id"] == first_id
    assert said(second.body) == [("user", "And again")]
    second_id = margin.history()[-1]["responseId"]
    assert second_id != first_id

    fake_responses.forget(fake_provider)
    margin.send(page, "Third")
    sentence = margin.wait_alert(page)
    assert sentence == REPLAY_NOTICE
    poll(lambda: len(margin.history()) == 6 and margin.history()[-1]["role"] == "assistant", timeout=20)
    margin.wait_idle(page)
    requests = fake_provider.wait_for_chat_requests(4)
    assert len(requests) == 4
    refused, replay = requests[2], requests[3]
    assert refused.body["previous_response_id"] == second_id
    assert "previous_response_id" not in replay.body
    assert said(replay.body) == [
        ("user", "Hello agent"),
        ("assistant", "You said: Hello agent"),
        ("user", "And again"),
        ("assistant", "You said: And again"),
        ("user", "Third"),
    ]
    answer = margin.history()[-1]
    assert answer["content"] == "You said: Third"
    assert answer["responseId"] not in (first_id, second_id)
    assert margin.bubble_texts(page, "assistant")[-1].startswith("You said: Third")
