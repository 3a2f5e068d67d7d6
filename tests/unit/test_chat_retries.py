"""A turn the provider refuses once and Margin retries once: images refused (placeholders, the
refusal remembered on the provider), and a context overflow (the attached pages shortened, stored
only after the retry succeeds)."""

import asyncio
import json

from chat_turns import PNG, HangingResponse, Turn, answer, delta, send, sse
from platform_memory import ScriptedResponse

from margin.page.context import attachment_record
from margin.turn import chat

# -- image refusal: retried once with placeholders, remembered on the provider --------------------

IMAGES_REFUSED = json.dumps(
    {
        "error": {
            "message": "Invalid content type. image_url is only supported by certain models.",
            "code": None,
        }
    }
)


def images_refused():
    return ScriptedResponse(status=400, chunks=[IMAGES_REFUSED], headers={"content-type": "application/json"})


def test_a_model_refusing_images_gets_placeholders_once_noticed_and_remembered():
    turn = Turn(responses=[images_refused(), answer("A dot, I guess."), answer("Still.")])
    asyncio.run(turn.run(send("What is this?", [{"dataUrl": PNG, "name": "dot.png"}])))
    assert turn.kinds == ["started", "notice", "delta", "done"]
    # The notice says what happened: the model did not see it, and the exact text sent instead.
    label = "[Figure 1: dot.png]"
    assert turn.events[1]["text"] == (
        "This model does not take images, so it did not see what you attached: Margin sent only the text "
        f"{label} in its place."
    )
    assert PNG in json.dumps(turn.request(0))
    retry = json.dumps(turn.request(1))
    assert PNG not in retry and label in retry
    assert turn.platform.local.snapshot()["providers"][0]["supportsImages"] is False
    assert turn.history[0]["content"][1]["image_url"]["url"] == PNG  # storage keeps the pixels

    turn.events.clear()
    asyncio.run(turn.run(send("And this one?", [{"dataUrl": PNG, "name": "again.png"}])))
    assert turn.kinds == ["started", "delta", "done"]  # no failed request, no notice
    assert len(turn.transport.json_bodies()) == 3
    third = json.dumps(turn.request(2))
    assert PNG not in third and "Figure 2" in third
    assert turn.history[2]["content"][1]["image_url"]["url"] == PNG


def test_a_refusal_of_the_retry_is_reported():
    turn = Turn(responses=[images_refused(), images_refused()])
    asyncio.run(turn.run(send("What is this?", [{"dataUrl": PNG, "name": "dot.png"}])))
    assert turn.kinds == ["started", "notice", "error"]
    assert turn.events[-1]["error"]["code"] == "images_refused"
    assert [r["role"] for r in turn.history] == ["user"]
    assert turn.history[0]["content"][1]["image_url"]["url"] == PNG


# -- overflow rescue: retried once with the pages shortened, stored only after success ----------------

OVERFLOW_BODY = json.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
            "12000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)
TOO_LONG = "This conversation is too long for llama3.2. Start a new session, or choose a model with a larger context."
TOO_LONG_EVEN_SHORTENED = (
    "This conversation is too long for llama3.2 even with the attached pages shortened. Start a new session, "
    "or choose a model with a larger context."
)


def overflow():
    return ScriptedResponse(status=400, chunks=[OVERFLOW_BODY], headers={"content-type": "application/json"})


def attached_page(chars=40_000):
    body = "\n\n".join(["A paragraph of the page. " * 20] * (chars // 500 + 1))[:chars]
    payload = {"kind": "page", "title": "Long read", "url": "https://example.com/long", "body": body}
    return attachment_record(payload, captured_at=1764547200000).to_json()


def rescue_turn(*responses, **storage):
    return Turn({"history": [attached_page()]}, list(responses), **storage)


def test_an_overflow_is_retried_once_with_the_page_shortened_and_stored_with_the_answer():
    stored_during_retry = []

    def retry(request):
        stored_during_retry.append(turn.history[0])
        return answer("Fits now.")

    turn = rescue_turn(overflow(), retry)
    writes_before = len(turn.platform.local.writes)
    asyncio.run(turn.run(send("Sum it up")))
    assert turn.kinds == ["started", "delta", "done"]
    assert len(turn.transport.requests) == 2
    assert stored_during_retry == [attached_page()]  # nothing shortened in storage before the answer
    first, second = (turn.request(i)["messages"][0]["content"] for i in (0, 1))
    first_body, second_body = first.split("\n\n", 1)[1], second.split("\n\n", 1)[1]
    assert first_body.startswith(second_body) and len(second_body) < 20_000  # about half, from the numbers
    page, question, reply = turn.history
    assert page["content"] == second  # storage holds exactly what the model read
    assert page["attachment"]["trimmedFrom"] == 40_000 and page["attachment"]["chars"] < 40_000
    assert "Note: shortened to fit the model's context: the first " in page["content"]
    assert (question["content"], reply["content"]) == ("Sum it up", "Fits now.")
    assert len(turn.platform.local.writes) - writes_before == 2  # the question; then answer + page, together


def test_a_second_overflow_keeps_the_raw_page_and_the_question_and_says_what_to_do():
    turn = rescue_turn(overflow(), overflow())
    asyncio.run(turn.run(send("Sum it up")))
    assert turn.kinds == ["started", "error"]
    assert turn.events[-1]["error"] == {"code": "context_overflow", "message": TOO_LONG_EVEN_SHORTENED}
    assert len(turn.transport.requests) == 2
    assert turn.history == [attached_page(), turn.history[1]] and turn.history[1]["content"] == "Sum it up"


def test_another_failure_of_the_retry_is_reported_as_itself_and_keeps_the_raw_page():
    down = ScriptedResponse(status=503, chunks=['{"error":"loading model"}'], headers={})
    turn = rescue_turn(overflow(), down)
    asyncio.run(turn.run(send("Sum it up")))
    assert turn.kinds == ["started", "error"] and turn.events[-1]["error"]["code"] == "provider_down"
    assert turn.history[0] == attached_page() and len(turn.history) == 2


def test_with_nothing_to_shorten_there_is_no_retry_and_the_sentence_says_what_to_do():
    turn = Turn(responses=[overflow(), answer("never asked")])
    asyncio.run(turn.run(send("x" * 100)))
    assert turn.kinds == ["started", "error"]
    assert turn.events[-1]["error"] == {"code": "context_overflow", "message": TOO_LONG}
    assert len(turn.transport.requests) == 1 and [r["role"] for r in turn.history] == ["user"]


def test_storage_refusing_the_final_write_keeps_the_raw_page_and_the_question():
    turn = rescue_turn(overflow(), answer("Fits now."), fail_after_writes=1)
    asyncio.run(turn.run(send("Sum it up")))
    assert turn.kinds == ["started", "delta", "error"]
    assert turn.events[-1]["error"]["code"] == "storage_failed"
    assert turn.history[0] == attached_page() and [r["content"] for r in turn.history[1:]] == ["Sum it up"]


def test_stop_during_the_retry_keeps_the_raw_page():
    def retry(request):
        asyncio.get_running_loop().call_soon(turn.stop.set)
        return HangingResponse()

    turn = rescue_turn(overflow(), retry)
    asyncio.run(asyncio.wait_for(chat.run_turn(turn.platform, send("Sum it up"), turn.emit, turn.stop), 2))
    assert turn.kinds == ["started", "stopped"]
    assert turn.history[0] == attached_page() and len(turn.history) == 2


def test_a_stopped_retry_keeps_its_partial_answer_but_not_the_shortened_page():
    hanging = HangingResponse(sse(delta("Part")))
    turn = rescue_turn(overflow(), hanging)

    def emit(event):
        turn.events.append(event)
        if event["event"] == "delta":
            asyncio.get_running_loop().call_soon(turn.stop.set)

    asyncio.run(asyncio.wait_for(chat.run_turn(turn.platform, send("Sum it up"), emit, turn.stop), 2))
    assert turn.kinds == ["started", "delta", "stopped"] and hanging.closed
    assert turn.history[0] == attached_page()
    assert turn.history[-1]["content"] == "Part" and turn.history[-1]["stopped"] is True


def test_a_silent_retry_times_out_and_keeps_the_raw_page(monkeypatch):
    monkeypatch.setattr(chat, "BODY_IDLE_TIMEOUT", 0.05)
    hanging = HangingResponse()
    turn = rescue_turn(overflow(), hanging)
    asyncio.run(turn.run(send("Sum it up")))
    assert turn.kinds == ["started", "error"] and turn.events[-1]["error"]["code"] == "timeout"
    assert hanging.closed and turn.history[0] == attached_page() and len(turn.history) == 2


def test_a_conversation_cleared_during_the_retry_gets_nothing():
    def retry(request):
        turn.platform.local._data["history"] = "[]"  # "New session" meanwhile
        return answer("late")

    turn = rescue_turn(overflow(), retry)
    asyncio.run(turn.run(send("Sum it up")))
    assert turn.kinds[-1] == "error" and turn.events[-1]["error"]["code"] == "conversation_changed"
    assert turn.history == []


def test_a_page_changed_during_the_retry_is_left_as_it_now_is():
    summarized = {
        **attached_page(),
        "attachment": {**attached_page()["attachment"], "summary": {"text": "gist"}},
    }

    def retry(request):
        turn.platform.local._data["history"] = json.dumps([summarized, *turn.history[1:]])
        return answer("Fits now.")

    turn = rescue_turn(overflow(), retry)
    asyncio.run(turn.run(send("Sum it up")))
    assert turn.kinds[-1] == "done"
    assert turn.history[0] == summarized  # the summary written meanwhile wins; no half-merged record
    assert [r["content"] for r in turn.history[1:]] == ["Sum it up", "Fits now."]
