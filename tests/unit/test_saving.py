"""Saving an answer: finite numbers only, a refused save keeps the answer, Retry save stores it once."""

import asyncio
import json

import pytest
from platform_memory import MemoryStorageArea, ScriptedResponse, ScriptedTransport, memory_platform

from margin.app.worker import Worker
from margin.base import wire
from margin.base.errors import MarginError
from margin.page.context import attachment_record
from margin.storage.keys import UNSAVED_ANSWERS
from margin.turn import chat, unsaved_answers

NAN, INF = float("nan"), float("inf")

PROVIDERS = {
    "openai": {"type": "openai", "baseUrl": "http://localhost:11434/v1", "model": "llama3.2"},
    "anthropic": {"type": "anthropic", "baseUrl": "https://api.anthropic.com/v1", "model": "claude"},
    "gemini": {"type": "gemini", "baseUrl": "https://generativelanguage.googleapis.com/v1beta", "model": "g"},
    "openai-responses": {"type": "openai-responses", "baseUrl": "https://api.openai.com/v1", "model": "m"},
}


def provider(kind="openai", **extra):
    return {"id": "p", "name": "P", "apiKey": "k", **PROVIDERS[kind], **extra}


def data(value):
    # json.dumps writes NaN and Infinity as bare words: what a provider's Python server sends.
    return f"data: {json.dumps(value)}\n\n"


def named(kind, value):
    return f"event: {kind}\n{data({'type': kind, **value})}"


def answer_body(kind, text, usage):
    """A whole streamed answer `text` in the provider's own wire shape, with its `usage` object."""
    if kind == "openai":
        return [
            data({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}),
            data({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            data({"choices": [], "usage": usage}),
            "data: [DONE]\n\n",
        ]
    if kind == "anthropic":
        return [
            named("message_start", {"message": {"id": "m", "usage": usage}}),
            named("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            named("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
            named("content_block_stop", {"index": 0}),
            named("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": usage}),
            named("message_stop", {}),
        ]
    if kind == "gemini":
        candidate = {
            "content": {"parts": [{"text": text}], "role": "model"},
            "index": 0,
            "finishReason": "STOP",
        }
        return [data({"candidates": [candidate], "usageMetadata": usage})]
    return [
        named("response.created", {"response": {"id": "r1", "status": "in_progress"}}),
        named(
            "response.output_text.delta",
            {"item_id": "i", "output_index": 0, "content_index": 0, "delta": text},
        ),
        named("response.completed", {"response": {"id": "r1", "status": "completed", "usage": usage}}),
    ]


NON_FINITE_USAGE = {
    "openai": {
        "prompt_tokens": NAN,
        "completion_tokens": INF,
        "prompt_tokens_details": {"cached_tokens": -INF},
    },
    "anthropic": {"input_tokens": NAN, "cache_read_input_tokens": INF, "output_tokens": 7},
    "gemini": {"promptTokenCount": INF, "cachedContentTokenCount": NAN, "candidatesTokenCount": 7},
    "openai-responses": {
        "input_tokens": NAN,
        "input_tokens_details": {"cached_tokens": INF},
        "output_tokens": 7,
    },
}


class Turn:
    def __init__(self, kind="openai", responses=(), history=None, **storage):
        self.transport = ScriptedTransport(list(responses))
        local = {
            "providers": [provider(kind)],
            "activeProviderId": "p",
            **({"history": history} if history else {}),
        }
        self.platform = memory_platform(local, self.transport, **storage)
        self.events = []

    def run(self, start):
        asyncio.run(
            asyncio.wait_for(chat.run_turn(self.platform, start, self.events.append, asyncio.Event()), 5)
        )
        return self.events[-1]

    @property
    def history(self):
        return self.platform.local.snapshot().get("history", [])

    @property
    def kept(self):
        return self.platform.session.snapshot().get(UNSAVED_ANSWERS, [])


def send(text):
    return {"action": "send", "text": text, "images": []}


def streamed(*chunks):
    return ScriptedResponse(chunks=list(chunks))


# -- finite numbers only ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_non_finite_usage_of_each_provider_is_dropped_and_the_answer_is_stored(kind):
    turn = Turn(kind, [streamed(*answer_body(kind, "The answer.", NON_FINITE_USAGE[kind]))])
    assert turn.run(send("Hi"))["event"] == "done"
    stored = turn.history[-1]
    assert stored["role"] == "assistant" and stored["content"] == "The answer."
    wire.dumps(turn.history)  # finite: JSON.parse reads it back
    for value in stored.get("usage", {}).values():
        assert isinstance(value, int) and 0 <= value <= wire.MAX_SAFE_INTEGER


def test_a_count_beyond_js_exact_integers_is_dropped():
    usage = {"prompt_tokens": 10**400, "completion_tokens": 2**53}
    turn = Turn("openai", [streamed(*answer_body("openai", "Big.", usage))])
    assert turn.run(send("Hi"))["event"] == "done"
    assert turn.history[-1].get("usage") is None


def test_a_cost_that_overflows_is_not_stored_and_the_answer_is():
    turn = Turn("openai", [streamed(*answer_body("openai", "Pricey.", {"prompt_tokens": 10**15}))])
    settings = turn.platform.local.snapshot()
    settings["providers"][0]["prices"] = {"input": 1e308, "output": 1e308}
    asyncio.run(turn.platform.local.set({"providers": settings["providers"]}))
    assert turn.run(send("Hi"))["event"] == "done"
    assert "cost" not in turn.history[-1] and turn.history[-1]["usage"]["input"] == 10**15


@pytest.mark.parametrize("value", [NAN, INF, -INF, [1, {"a": NAN}]])
def test_wire_refuses_non_finite_numbers_naming_where(value):
    with pytest.raises(wire.NotFiniteError) as caught:
        wire.dumps({"history": [{"usage": {"output": value}}]}, root="")
    assert caught.value.code == "not_finite_number"
    assert "history[0].usage.output" in caught.value.message


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', "[-Infinity]", '{"a": 1e400}'])
def test_wire_loads_refuses_what_js_never_writes(text):
    with pytest.raises(ValueError):
        wire.loads(text)
    assert wire.loads('{"a": 1.5e3}') == {"a": 1500.0}


def test_the_memory_twin_refuses_a_nan_like_the_browser_and_writes_nothing():
    area = MemoryStorageArea({"history": []})
    with pytest.raises(wire.NotFiniteError):
        asyncio.run(area.set({"history": [{"role": "user", "content": "x"}], "n": NAN}))
    assert area.snapshot() == {"history": []}


def test_the_worker_refuses_a_nan_payload_and_a_nan_reply_with_their_own_codes():
    async def nan_handler(platform, payload):
        return {"cost": NAN}

    worker = Worker(memory_platform(), lambda *_: True)
    bad = json.loads(asyncio.run(worker.dispatch_json("app.ping", '{"x": NaN}', "extension")))
    assert bad["error"]["code"] == "bad_payload"
    reply = json.loads(asyncio.run(worker.dispatch_json("x.nan", "{}", "extension", nan_handler)))
    assert reply["error"]["code"] == "not_finite_number" and "reply.value.cost" in reply["error"]["message"]


# -- a refused final save keeps the answer -------------------------------------------------------


def assert_unsaved(event, code, text):
    assert event["event"] == "error" and event["error"]["code"] == code
    assert "Retry save" in event["error"]["message"]
    assert event["unsaved"]["answer"]["content"] == text
    return event["unsaved"]


def test_a_crash_at_the_final_write_keeps_the_answer_in_the_event_and_the_session_area():
    turn = Turn(
        responses=[streamed(*answer_body("openai", "Kept.", {"prompt_tokens": 3}))], fail_after_writes=1
    )
    unsaved = assert_unsaved(turn.run(send("Hi")), "storage_failed", "Kept.")
    assert [r["role"] for r in turn.history] == ["user"]
    assert turn.kept == [unsaved]
    assert unsaved["question"]["index"] == 0 and unsaved["question"]["digest"] == unsaved_answers.digest("Hi")


def test_a_full_storage_at_the_final_write_is_storage_full_with_the_answer():
    turn = Turn(responses=[streamed(*answer_body("openai", "y" * 800, {}))], quota_bytes=900)
    assert_unsaved(turn.run(send("Hi")), "storage_full", "y" * 800)
    assert [r["content"] for r in turn.history] == ["Hi"]


def test_a_nan_already_in_the_conversation_is_not_finite_number_not_a_misreported_cause():
    # Only a memory store can hold one; the browser's JSON cannot. The net still names it.
    history = [{"role": "user", "content": "Q", "createdAt": 5, "score": NAN}]
    turn = Turn(responses=[streamed(*answer_body("openai", "A.", {}))], history=history)
    unsaved = assert_unsaved(turn.run({"action": "regenerate"}), "not_finite_number", "A.")
    assert "history[0].score" in turn.events[-1]["error"]["message"]
    assert unsaved["question"]["createdAt"] == 5


def test_a_stopped_answer_that_cannot_be_saved_comes_back_marked_stopped():
    turn = Turn(responses=[streamed(data({"choices": [{"index": 0, "delta": {"content": "Par"}}]}))])
    stop = asyncio.Event()

    def emit(event):
        turn.events.append(event)
        if event["event"] == "delta":
            turn.platform.local.quota_bytes = 10
            stop.set()

    asyncio.run(chat.run_turn(turn.platform, send("Hi"), emit, stop))
    unsaved = assert_unsaved(turn.events[-1], "storage_full", "Par")
    assert unsaved["answer"]["stopped"] is True


def test_when_the_session_area_refuses_too_the_event_still_carries_the_answer():
    turn = Turn(responses=[streamed(*answer_body("openai", "Only here.", {}))], fail_after_writes=1)
    turn.platform.session = MemoryStorageArea(fail_after_writes=0)
    assert_unsaved(turn.run(send("Hi")), "storage_failed", "Only here.")


def test_an_idle_timeout_after_some_text_is_stored_incomplete(monkeypatch):
    monkeypatch.setattr(chat, "BODY_IDLE_TIMEOUT", 0.05)

    class Silent(ScriptedResponse):
        async def read_chunk(self):
            if self.chunks:
                return self.chunks.pop(0)
            await asyncio.sleep(10)

    turn = Turn(responses=[Silent(chunks=[data({"choices": [{"index": 0, "delta": {"content": "slo"}}]})])])
    assert turn.run(send("Hi"))["error"]["code"] == "timeout"
    assert turn.history[-1] == {**turn.history[-1], "content": "slo", "incomplete": True}


def test_a_parser_bug_after_some_text_keeps_it_incomplete(monkeypatch):
    from margin.providers import openai

    real = openai.StreamParser.feed

    def feed(self, event):
        if event.data == "boom":
            raise KeyError("a field the parser expected")
        return real(self, event)

    monkeypatch.setattr(openai.StreamParser, "feed", feed)
    chunks = [data({"choices": [{"index": 0, "delta": {"content": "Half"}}]}), "data: boom\n\n"]
    turn = Turn(responses=[streamed(*chunks)])
    assert turn.run(send("Hi"))["error"]["code"] == "internal"
    assert turn.history[-1]["content"] == "Half" and turn.history[-1]["incomplete"] is True


# -- Retry save ---------------------------------------------------------------------------------


def failed_turn(text="Saved later.", **storage):
    turn = Turn(responses=[streamed(*answer_body("openai", text, {"prompt_tokens": 4}))], **storage)
    unsaved = turn.events[-1]["unsaved"] if turn.run(send("Hi")).get("unsaved") else None
    assert unsaved is not None
    turn.platform.local.revive()
    turn.platform.local.quota_bytes = None
    return turn, unsaved


def save(turn, unsaved):
    return asyncio.run(unsaved_answers.handle_save_answer(turn.platform, {"unsaved": unsaved}))


def test_retry_save_stores_the_answer_after_its_question_once():
    turn, unsaved = failed_turn(fail_after_writes=1)
    assert save(turn, unsaved) == {"saved": True, "already": False}
    after = turn.history
    assert [(r["role"], r["content"]) for r in after] == [("user", "Hi"), ("assistant", "Saved later.")]
    assert (
        after[1]["usage"] == {"input": 4, "cachedInput": 0, "output": 0} and after[1]["model"] == "llama3.2"
    )
    assert turn.kept == []
    writes = len(turn.platform.local.writes)
    assert save(turn, unsaved) == {"saved": True, "already": True}  # pressed twice
    assert turn.history == after and len(turn.platform.local.writes) == writes


def test_retry_save_puts_the_answer_before_pages_attached_meanwhile():
    turn, unsaved = failed_turn(fail_after_writes=1)
    page = attachment_record(
        {"kind": "page", "title": "T", "url": "https://e.org/", "text": "Body"}, captured_at=7
    )
    history = [*turn.history, page.to_json()]
    asyncio.run(turn.platform.local.set({"history": history}))
    save(turn, unsaved)
    assert [r["role"] for r in turn.history] == ["user", "assistant", "user"]
    assert turn.history[2] == history[1]


def test_retry_save_refuses_when_the_conversation_went_on_and_writes_nothing():
    turn, unsaved = failed_turn(fail_after_writes=1)
    moved = [*turn.history, {"role": "user", "content": "Next", "createdAt": 9}]
    asyncio.run(turn.platform.local.set({"history": moved}))
    with pytest.raises(MarginError) as caught:
        save(turn, unsaved)
    assert caught.value.code == "answer_question_moved"
    assert turn.history == moved and len(turn.kept) == 1


def test_retry_save_refuses_when_the_question_is_gone():
    turn, unsaved = failed_turn(fail_after_writes=1)
    asyncio.run(turn.platform.local.set({"history": []}))
    with pytest.raises(MarginError) as caught:
        save(turn, unsaved)
    assert caught.value.code == "answer_question_gone" and turn.history == []


def test_retry_save_of_a_storage_still_full_is_storage_full_and_keeps_the_entry():
    turn, unsaved = failed_turn(fail_after_writes=1)
    turn.platform.local.quota_bytes = 10
    with pytest.raises(MarginError) as caught:
        save(turn, unsaved)
    assert caught.value.code == "storage_full" and len(turn.kept) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"role": "user"},
        {"content": ""},
        {"content": ["parts"]},
        {"cost": NAN},
        {"cost": -1},
        {"createdAt": "yesterday"},
        {"stopped": "yes"},
        {"usage": {"input": "many"}},
    ],
)
def test_retry_save_checks_what_comes_back(change):
    turn, unsaved = failed_turn(fail_after_writes=1)
    bad = {**unsaved, "answer": {**unsaved["answer"], **change}}
    with pytest.raises(MarginError) as caught:
        save(turn, bad)
    assert caught.value.code == "bad_payload" and [r["role"] for r in turn.history] == ["user"]


def test_retry_save_keeps_only_the_fields_a_turn_writes():
    turn, unsaved = failed_turn(fail_after_writes=1)
    save(turn, {**unsaved, "answer": {**unsaved["answer"], "imagesSeen": True, "html": "<script>"}})
    assert "html" not in turn.history[-1] and "imagesSeen" not in turn.history[-1]
