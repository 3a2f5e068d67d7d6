"""The agent turn: only what is new goes out with `previous_response_id`; a forgetful provider
gets the full history once, with a notice."""

import asyncio
import json

from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.page.context import attachment_record
from margin.storage.history import PAGE_CONTEXT_PREFIX, Record
from margin.turn import chat
from margin.turn.agent import build_agent_turn

PROVIDER = {
    "id": "agent",
    "type": "openai-responses",
    "name": "Agent",
    "baseUrl": "https://api.openai.com/v1",
    "apiKey": "sk-test",
    "model": "gpt-4.1-mini",
}
SETTINGS = {"providers": [PROVIDER], "activeProviderId": "agent"}
PNG = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def event(kind, **data):
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def reply(text, rid):
    usage = {"input_tokens": 5, "output_tokens": 2}
    return ScriptedResponse(
        chunks=[
            event("response.created", response={"id": rid}),
            event("response.output_text.delta", delta=text),
            event("response.completed", response={"id": rid, "status": "completed", "usage": usage}),
        ]
    )


def forgotten():
    body = {
        "error": {
            "message": "Previous response with id 'resp_a' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }
    return ScriptedResponse(
        status=400, chunks=[json.dumps(body)], headers={"content-type": "application/json"}
    )


def attachment(text):
    return Record("user", f"{PAGE_CONTEXT_PREFIX} {text}", {"attachment": {"kind": "page", "title": text}})


def answer(text, rid=None):
    return Record("assistant", text, {"responseId": rid} if rid else {})


class Turn:
    def __init__(self, history=(), responses=()):
        self.transport = ScriptedTransport(list(responses))
        self.platform = memory_platform({**SETTINGS, "history": list(history)}, self.transport)
        self.events = []

    async def run(self, start):
        await asyncio.wait_for(chat.run_turn(self.platform, start, self.events.append, asyncio.Event()), 5)

    def go(self, start):
        self.events = []
        asyncio.run(self.run(start))

    @property
    def history(self):
        return self.platform.local.snapshot().get("history", [])

    def request(self, index=-1):
        return self.transport.json_bodies()[index]


def said(body):
    return [(item["role"], item["content"][0]["text"]) for item in body["input"]]


def send(text, images=()):
    return {"action": "send", "text": text, "images": list(images)}


# -- build_agent_turn ---------------------------------------------------------------------------


def test_a_first_turn_sends_everything_without_a_previous_id():
    records = [attachment("page"), Record("user", "Q")]
    assert build_agent_turn(records) == (None, records)


def test_only_what_follows_the_last_answer_with_an_id_is_new():
    records = [
        Record("user", "Q1"),
        answer("A1", "resp_1"),
        Record("user", "Q2"),
        answer("A2", "resp_2"),
        attachment("page one"),
        attachment("page two"),
        Record("user", "Q3"),
    ]
    assert build_agent_turn(records) == ("resp_2", records[4:])


def test_an_answer_without_an_id_is_sent_again_with_its_question():
    records = [
        Record("user", "Q1"),
        answer("A1", "resp_1"),
        Record("user", "Q2"),
        answer("half"),
        Record("user", "Q3"),
    ]
    assert build_agent_turn(records) == ("resp_1", records[2:])


def answer_from(text, rid, provider_id):
    return Record("assistant", text, {"responseId": rid, "responseProviderId": provider_id})


def test_an_answer_from_the_active_provider_is_chained_from():
    records = [Record("user", "Q1"), answer_from("A1", "resp_1", "agent"), Record("user", "Q2")]
    assert build_agent_turn(records, "agent") == ("resp_1", records[2:])


def test_an_answer_whose_response_another_provider_stored_means_the_full_history():
    records = [
        Record("user", "Q1"),
        answer_from("A1", "resp_1", "agent"),
        Record("user", "Q2"),
        answer_from("A2", "resp_other", "other"),
        Record("user", "Q3"),
    ]
    assert build_agent_turn(records, "agent") == (None, records)
    assert build_agent_turn(records, "other") == ("resp_other", records[4:])


def test_an_answer_stored_without_a_provider_id_is_chained_as_before():
    records = [Record("user", "Q1"), answer("A1", "resp_1"), Record("user", "Q2")]
    assert build_agent_turn(records, "agent") == ("resp_1", records[2:])


# -- the turn flow ------------------------------------------------------------------------------


def test_each_stored_response_id_names_the_provider_that_made_it():
    turn = Turn(responses=[reply("A1", "resp_a")])
    turn.go(send("first"))
    assert turn.history[1]["responseId"] == "resp_a"
    assert turn.history[1]["responseProviderId"] == "agent"


def test_after_another_provider_the_full_history_goes_without_a_previous_id_or_notice():
    history = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "responseId": "resp_o", "responseProviderId": "other"},
    ]
    turn = Turn(history=history, responses=[reply("A2", "resp_b")])
    turn.go(send("Q2"))
    assert len(turn.transport.json_bodies()) == 1
    body = turn.request()
    assert "previous_response_id" not in body
    assert said(body) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q2")]
    assert [e["event"] for e in turn.events] == ["started", "delta", "done"]
    assert turn.history[-1]["responseProviderId"] == "agent"


def test_the_second_turn_sends_only_the_new_message_and_stores_each_response_id():
    turn = Turn(responses=[reply("A1", "resp_a"), reply("A2", "resp_b")])
    turn.go(send("first"))
    assert "previous_response_id" not in turn.request(0)
    assert turn.history[1]["responseId"] == "resp_a"
    turn.go(send("second"))
    second = turn.request(1)
    assert second["previous_response_id"] == "resp_a"
    assert said(second) == [("user", "second")]
    assert [r.get("responseId") for r in turn.history] == [None, "resp_a", None, "resp_b"]
    assert [e["event"] for e in turn.events] == ["started", "delta", "done"]


def test_images_go_as_input_image_parts_of_the_new_message():
    turn = Turn(responses=[reply("A1", "resp_a"), reply("A2", "resp_b")])
    turn.go(send("first"))
    turn.go(send("look", [{"dataUrl": PNG, "name": "dot.png"}]))
    body = turn.request(1)
    assert body["previous_response_id"] == "resp_a" and len(body["input"]) == 1
    content = body["input"][0]["content"]
    assert content[0] == {"type": "input_text", "text": "look"}
    assert [p["image_url"] for p in content if p["type"] == "input_image"] == [PNG]


def test_pages_attached_since_the_last_answer_go_with_the_new_question():
    turn = Turn(responses=[reply("A1", "resp_a"), reply("A2", "resp_b")])
    turn.go(send("first"))
    payload = {"kind": "page", "title": "A page", "url": "https://example.com/a", "body": "The page's text."}
    page = attachment_record(payload, captured_at=1764547200000).to_json()
    asyncio.run(turn.platform.local.set({"history": [*turn.history, page]}))  # as Attach stores it
    turn.go(send("about it"))
    body = turn.request(1)
    assert body["previous_response_id"] == "resp_a"
    (page_item, question) = body["input"]
    assert page_item["role"] == "user" and page_item["content"][0]["text"].startswith(PAGE_CONTEXT_PREFIX)
    assert "The page's text." in page_item["content"][0]["text"]
    assert question == {"role": "user", "content": [{"type": "input_text", "text": "about it"}]}


def test_regenerate_branches_from_the_answer_before_the_one_replaced():
    history = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "responseId": "resp_1"},
        {"role": "user", "content": "Q2", "createdAt": 2},
        {"role": "assistant", "content": "A2", "responseId": "resp_2"},
    ]
    turn = Turn(history, [reply("A2 again", "resp_3")])
    turn.go({"action": "regenerate"})
    body = turn.request()
    assert body["previous_response_id"] == "resp_1"
    assert said(body) == [("user", "Q2")]
    assert [r.get("responseId") for r in turn.history] == [None, "resp_1", None, "resp_3"]


def test_edit_branches_from_the_answer_before_the_edited_question():
    history = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "responseId": "resp_1"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "A2", "responseId": "resp_2"},
        {"role": "user", "content": "Q3"},
        {"role": "assistant", "content": "A3", "responseId": "resp_3"},
    ]
    turn = Turn(history, [reply("new", "resp_4")])
    turn.go({"action": "edit", "index": 2, "text": "Q2, reworded", "images": []})
    body = turn.request()
    assert body["previous_response_id"] == "resp_1"
    assert said(body) == [("user", "Q2, reworded")]
    turn = Turn(history, [reply("new", "resp_5")])
    turn.go({"action": "edit", "index": 0, "text": "Q1, reworded", "images": []})
    assert "previous_response_id" not in turn.request()


def test_a_forgotten_conversation_is_replayed_once_in_full_with_a_notice():
    history = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "responseId": "resp_a"},
    ]
    turn = Turn(history, [forgotten(), reply("A2", "resp_new")])
    turn.go(send("Q2"))
    first, replay = turn.transport.json_bodies()
    assert first["previous_response_id"] == "resp_a" and said(first) == [("user", "Q2")]
    assert "previous_response_id" not in replay
    assert said(replay) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q2")]
    assert turn.events == [
        {"event": "started"},
        {
            "event": "notice",
            "text": "The provider had forgotten this conversation, so Margin sent it again in full.",
        },
        {"event": "delta", "text": "A2"},
        {"event": "done"},
    ]
    assert turn.history[-1]["responseId"] == "resp_new"


def test_a_second_failure_after_the_replay_is_reported():
    history = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "responseId": "resp_a"},
    ]
    down = ScriptedResponse(
        status=500,
        chunks=[json.dumps({"error": {"message": "boom"}})],
        headers={"content-type": "application/json"},
    )
    turn = Turn(history, [forgotten(), down])
    turn.go(send("Q2"))
    assert len(turn.transport.requests) == 2
    assert [e["event"] for e in turn.events] == ["started", "notice", "error"]
    assert turn.events[-1]["error"]["code"] == "provider_down"
    assert [r["content"] for r in turn.history] == ["Q1", "A1", "Q2"]
