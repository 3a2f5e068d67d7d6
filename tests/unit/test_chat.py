"""A chat turn as the user lives it: the question is kept, the answer streams in and is kept once."""

import asyncio
import json

import pytest
from chat_turns import PNG, PROVIDER, HangingResponse, Turn, answer, delta, send, sse
from platform_memory import ScriptedResponse

from margin.turn import chat

# -- send ---------------------------------------------------------------------------------------


def test_the_question_is_stored_before_the_request_goes_out():
    seen_at_request_time = []

    def handler(request):
        seen_at_request_time.append(turn.platform.local.snapshot()["history"])
        return answer("Hi!")

    turn = Turn(responses=[handler])
    asyncio.run(turn.run(send("Hello?")))
    assert [(r["role"], r["content"]) for r in seen_at_request_time[0]] == [("user", "Hello?")]
    assert isinstance(seen_at_request_time[0][0]["createdAt"], int)


def test_a_successful_turn_streams_pieces_and_stores_the_answer_once():
    turn = Turn(responses=[answer("Hel", "lo", usage={"prompt_tokens": 4, "completion_tokens": 2})])
    writes_before = len(turn.platform.local.writes)
    asyncio.run(turn.run(send("Hi")))
    assert turn.events == [
        {"event": "started"},
        {"event": "delta", "text": "Hel"},
        {"event": "delta", "text": "lo"},
        {"event": "done"},
    ]
    user, assistant = turn.history
    assert user["role"] == "user" and user["content"] == "Hi"
    assert assistant["role"] == "assistant" and assistant["content"] == "Hello"
    assert assistant["model"] == "llama3.2"
    assert assistant["usage"] == {"input": 4, "cachedInput": 0, "output": 2}
    assert "cost" not in assistant  # the provider has no prices
    assert isinstance(assistant["createdAt"], int) and "stopped" not in assistant
    assert len(turn.platform.local.writes) - writes_before == 2  # the question, then the answer


def test_the_request_carries_the_whole_conversation_in_order():
    history = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    turn = Turn({"history": history}, [answer("four")])
    asyncio.run(turn.run(send("three")))
    assert turn.request()["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    assert turn.request()["model"] == "llama3.2"


def test_an_empty_message_stores_nothing_and_sends_nothing():
    turn = Turn()
    asyncio.run(turn.run(send("   ")))
    assert turn.events == [
        {
            "event": "error",
            "error": {"code": "empty_message", "message": "Type a message or attach an image first."},
        }
    ]
    assert turn.history == [] and turn.transport.requests == []


def test_without_a_provider_nothing_is_stored_and_the_sentence_points_at_options():
    turn = Turn({"providers": [], "activeProviderId": None})
    asyncio.run(turn.run(send("Hi")))
    assert turn.kinds == ["error"] and turn.events[0]["error"]["code"] == "no_provider"
    assert turn.history == []


def test_a_picture_that_is_not_an_image_is_refused_before_anything_is_stored():
    turn = Turn()
    asyncio.run(turn.run(send("look", [{"dataUrl": "data:text/html;base64,PGI+"}])))
    assert turn.kinds == ["error"] and turn.history == []


# -- stop ------------------------------------------------------------------------------------------


def test_stop_mid_stream_is_prompt_and_keeps_what_arrived_marked_stopped():
    hanging = HangingResponse(sse(delta("Once upon")), sse(delta(" a time")))
    turn = Turn(responses=[hanging])

    def emit(event):
        turn.events.append(event)
        if event.get("text") == " a time":
            # The next read will hang forever: only the stop race can end the turn.
            asyncio.get_running_loop().call_soon(turn.stop.set)

    async def go():
        await asyncio.wait_for(
            chat.run_turn(turn.platform, send("Tell a story", [{"dataUrl": PNG}]), emit, turn.stop), 2
        )

    asyncio.run(go())
    assert turn.kinds == ["started", "delta", "delta", "stopped"]
    assert hanging.closed
    user, assistant = turn.history
    assert assistant == {
        "role": "assistant",
        "content": "Once upon a time",
        "stopped": True,
        "model": "llama3.2",
        "createdAt": assistant["createdAt"],
    }
    assert "imagesSeen" not in user  # a stopped turn stamps nothing


def test_stop_before_anything_arrived_stores_no_answer():
    turn = Turn(responses=[HangingResponse()])

    def emit(event):
        turn.events.append(event)
        if event["event"] == "started":
            turn.stop.set()

    asyncio.run(asyncio.wait_for(chat.run_turn(turn.platform, send("Hi"), emit, turn.stop), 2))
    assert turn.kinds == ["started", "stopped"]
    assert [r["role"] for r in turn.history] == ["user"]


def test_a_closed_panel_stops_the_turn_and_keeps_the_partial():
    hanging = HangingResponse(sse(delta("Part")), sse(delta("ial")))
    turn = Turn(responses=[hanging])
    calls = []

    def emit(event):
        calls.append(event)
        if event["event"] == "delta":
            raise RuntimeError("port disconnected")

    asyncio.run(asyncio.wait_for(chat.run_turn(turn.platform, send("Hi"), emit, turn.stop), 2))
    assert hanging.closed
    assert turn.history[-1]["content"] == "Part" and turn.history[-1]["stopped"] is True
    assert [e["event"] for e in calls] == ["started", "delta"]  # nothing posted to a dead port


# -- errors ----------------------------------------------------------------------------------------


def test_a_provider_error_keeps_the_question_and_adds_no_answer():
    failure = ScriptedResponse(
        status=500, chunks=['{"error":"out of memory"}'], headers={"content-type": "application/json"}
    )
    turn = Turn(responses=[failure])
    asyncio.run(turn.run(send("look", [{"dataUrl": PNG, "name": "dot.png"}])))
    assert turn.kinds == ["started", "error"]
    assert turn.events[-1]["error"]["code"] == "provider_down"
    assert "out of memory" in turn.events[-1]["error"]["message"]
    [user] = turn.history
    assert user["role"] == "user" and "imagesSeen" not in user


def test_a_cut_stream_is_an_error_and_the_half_answer_is_kept_marked_incomplete():
    cut = ScriptedResponse(chunks=[sse(delta("Half"))])
    turn = Turn(responses=[cut])
    asyncio.run(turn.run(send("look", [{"dataUrl": PNG, "name": "dot.png"}])))
    assert turn.kinds == ["started", "delta", "error"]
    assert turn.events[-1]["error"]["code"] == "stream_cut"
    assert "broke before the answer was finished" in turn.events[-1]["error"]["message"]
    user, assistant = turn.history
    assert assistant == {
        "role": "assistant",
        "content": "Half",
        "incomplete": True,
        "model": "llama3.2",
        "createdAt": assistant["createdAt"],
    }
    assert "imagesSeen" not in user  # a failed turn sends the pixels again


def test_a_broken_transport_after_some_text_keeps_the_text_marked_incomplete():
    broken = ScriptedResponse(
        chunks=[sse(delta("So far")), sse(delta(" more"))], fail_at=1, fail_kind="broken"
    )
    turn = Turn(responses=[broken])
    asyncio.run(turn.run(send("Hi")))
    assert turn.kinds == ["started", "delta", "error"]
    assert turn.history[-1]["content"] == "So far" and turn.history[-1]["incomplete"] is True


def test_storage_refusing_the_incomplete_answer_reports_one_storage_error():
    turn = Turn(responses=[ScriptedResponse(chunks=[sse(delta("Half"))])], fail_after_writes=1)
    asyncio.run(turn.run(send("Hi")))
    assert turn.kinds == ["started", "delta", "error"]
    assert turn.events[-1]["error"]["code"] == "storage_failed"
    assert [r["role"] for r in turn.history] == ["user"]


def test_a_silent_body_times_out_and_keeps_what_arrived(monkeypatch):
    monkeypatch.setattr(chat, "BODY_IDLE_TIMEOUT", 0.05)
    hanging = HangingResponse(sse(delta("slow")))
    turn = Turn(responses=[hanging])
    asyncio.run(turn.run(send("Hi")))
    assert turn.kinds == ["started", "delta", "error"]
    assert turn.events[-1]["error"]["code"] == "timeout"
    assert hanging.closed
    assert turn.history[-1]["content"] == "slow" and turn.history[-1]["incomplete"] is True


def test_a_silent_body_before_any_text_stores_no_answer(monkeypatch):
    monkeypatch.setattr(chat, "BODY_IDLE_TIMEOUT", 0.05)
    turn = Turn(responses=[HangingResponse()])
    asyncio.run(turn.run(send("Hi")))
    assert turn.kinds == ["started", "error"] and turn.events[-1]["error"]["code"] == "timeout"
    assert [r["role"] for r in turn.history] == ["user"]


def test_one_turn_at_a_time():
    turn = Turn(responses=[HangingResponse(sse(delta("busy")))])
    second_events = []

    async def go():
        first = asyncio.ensure_future(chat.run_turn(turn.platform, send("one"), turn.emit, turn.stop))
        while "delta" not in turn.kinds:
            await asyncio.sleep(0)
        await chat.run_turn(turn.platform, send("two"), second_events.append, asyncio.Event())
        turn.stop.set()
        await asyncio.wait_for(first, 2)

    asyncio.run(go())
    assert second_events[0]["error"]["code"] == "turn_in_progress"
    assert [r["content"] for r in turn.history] == ["one", "busy"]


def test_a_full_storage_refusing_the_question_is_storage_full_and_nothing_is_sent():
    turn = Turn(responses=[answer("x")], quota_bytes=600)
    asyncio.run(turn.run(send("x" * 1000)))
    assert turn.kinds == ["error"]
    error = turn.events[0]["error"]
    assert error["code"] == "storage_full" and "full" in error["message"]
    assert turn.transport.requests == [] and turn.history == []


def test_storage_refusing_the_answer_keeps_the_question():
    turn = Turn(responses=[answer("fine")], fail_after_writes=1)
    asyncio.run(turn.run(send("Hi")))
    assert turn.kinds == ["started", "delta", "error"]
    assert turn.events[-1]["error"]["code"] == "storage_failed"
    assert [r["content"] for r in turn.history] == ["Hi"]


def test_an_answer_is_not_saved_into_a_conversation_cleared_meanwhile():
    hanging = HangingResponse(sse(delta("late")), sse(delta("", "stop")), sse("[DONE]"))
    turn = Turn(responses=[hanging])

    def emit(event):
        turn.events.append(event)
        if event["event"] == "delta":
            turn.platform.local._data["history"] = "[]"  # the user pressed "New session" meanwhile

    asyncio.run(asyncio.wait_for(chat.run_turn(turn.platform, send("Hi"), emit, turn.stop), 2))
    assert turn.kinds[-1] == "error" and turn.events[-1]["error"]["code"] == "conversation_changed"
    assert turn.history == []


# -- regenerate and edit: one send = one bubble ------------------------------------------------------

HISTORY = [
    {"role": "user", "content": "first", "createdAt": 1},
    {"role": "assistant", "content": "answer one", "createdAt": 2},
    {"role": "user", "content": "second", "createdAt": 3},
    {"role": "assistant", "content": "answer two", "createdAt": 4},
]


def test_regenerate_replaces_the_last_answer_with_one_new_one():
    turn = Turn({"history": HISTORY}, [answer("answer two, again")])
    asyncio.run(turn.run({"action": "regenerate"}))
    assert turn.kinds[-1] == "done"
    assert turn.texts == [
        ("user", "first"),
        ("assistant", "answer one"),
        ("user", "second"),
        ("assistant", "answer two, again"),
    ]
    assert [m["content"] for m in turn.request()["messages"]] == ["first", "answer one", "second"]


def test_regenerate_after_a_failed_turn_answers_the_stored_question():
    turn = Turn({"history": HISTORY[:3]}, [answer("answer two")])
    asyncio.run(turn.run({"action": "regenerate"}))
    assert turn.texts[-2:] == [("user", "second"), ("assistant", "answer two")]


def test_edit_and_resend_removes_the_old_bubble_and_everything_after_it():
    turn = Turn({"history": HISTORY}, [answer("new answer")])
    asyncio.run(turn.run({"action": "edit", "index": 0, "text": "first, reworded", "images": []}))
    assert turn.texts == [("user", "first, reworded"), ("assistant", "new answer")]
    assert [m["content"] for m in turn.request()["messages"]] == ["first, reworded"]


def test_editing_the_last_unanswered_message_stores_and_answers_the_new_text():
    # The question failed (no answer after it); editing it keeps the conversation's length.
    turn = Turn({"history": HISTORY[:3]}, [answer("answer to the fix")])
    asyncio.run(turn.run({"action": "edit", "index": 2, "text": "second, fixed", "images": []}))
    assert turn.kinds[-1] == "done"
    assert turn.texts == [
        ("user", "first"),
        ("assistant", "answer one"),
        ("user", "second, fixed"),
        ("assistant", "answer to the fix"),
    ]
    assert [m["content"] for m in turn.request()["messages"]][-1] == "second, fixed"


def test_edit_of_a_message_that_is_gone_changes_nothing():
    turn = Turn({"history": HISTORY}, [answer("x")])
    asyncio.run(turn.run({"action": "edit", "index": 1, "text": "not a user bubble", "images": []}))
    assert turn.kinds == ["error"] and turn.events[0]["error"]["code"] == "edit_target_gone"
    assert turn.history == HISTORY


# -- images ------------------------------------------------------------------------------------------


def test_images_are_sent_with_pixels_then_stamped_and_later_sent_as_a_placeholder():
    turn = Turn(responses=[answer("A dot."), answer("Still a dot.")])
    attachment = {
        "dataUrl": PNG,
        "name": "dot.png",
        "source": "paste",
        "capturedAt": 1764547200000,
        "alt": "",
        "extra": "dropped",
    }
    asyncio.run(turn.run(send("What is this?", [attachment])))
    assert turn.kinds[-1] == "done"
    user = turn.history[0]
    assert user["imagesSeen"] is True
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": PNG},
        "meta": {"name": "dot.png", "source": "paste", "capturedAt": 1764547200000},
    }
    first_request = json.dumps(turn.request(0))
    assert PNG in first_request and "meta" not in first_request

    asyncio.run(turn.run(send("And now?")))
    second_request = json.dumps(turn.request(1))
    assert PNG not in second_request and "Figure 1" in second_request
    assert turn.history[0]["content"][1]["image_url"]["url"] == PNG  # pixels never destroyed


def test_a_failed_turn_stores_its_unseen_originals_ahead_once_it_has_ended_and_a_done_one_does_not(
    monkeypatch,
):
    from margin.images import bound as image_bound
    from margin.images import originals as image_originals
    from margin.platform.ports import TransportError

    # Over the bound's limit with the new image: the older parked one is what the bound will shrink.
    monkeypatch.setattr(image_bound, "UNSEEN_LIMIT_BYTES", len(PNG))
    older = PNG.replace("AAAA", "AAAB", 1)  # another picture: the bound's choice, not the newest
    parked = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": older}}]}
    turn = Turn(
        {"history": [parked, {"role": "assistant", "content": "lost"}]},
        responses=[TransportError("connect", "offline"), answer("A dot.")],
    )
    writes_at_the_end: list[int] = []
    emit = turn.emit

    def emit_counting(event: dict) -> None:  # nothing is stored ahead before the turn has ended
        if event["event"] in ("error", "done"):
            writes_at_the_end.append(len(turn.platform.local.writes))
        emit(event)

    turn.emit = emit_counting

    async def scenario() -> tuple[list, list]:
        await turn.run(send("What is this?", [{"dataUrl": PNG, "name": "dot.png"}]))
        assert turn.kinds[-1] == "error" and not chat.turn_running()
        assert chat._storing_ahead is not None
        await chat._storing_ahead
        failed = turn.platform.local.writes[writes_at_the_end[0] :]
        await turn.run(send("And now?"))  # done: the stamp, nothing stored ahead
        done = chat._storing_ahead
        await done
        return failed, turn.platform.local.writes

    failed, writes = asyncio.run(scenario())
    key = image_originals.original_key(older)
    assert failed == [{key: {"url": older, "sha256": image_originals.url_digest(older)}}]
    assert [k for w in writes if isinstance(w, dict) for k in w].count(key) == 1
    assert turn.history[0]["content"] == parked["content"]  # the part is not changed


@pytest.mark.parametrize(
    "ui_language, browser_language, label",
    [
        ("auto", "zh-CN", "[图1："),  # "auto" follows the browser's UI language
        ("auto", "en-US", "[Figure 1:"),
        ("zh", "en-US", "[图1："),  # a chosen language wins over the browser's
    ],
)
def test_placeholders_speak_the_ui_language(ui_language, browser_language, label):
    turn = Turn({"uiLanguage": ui_language}, [answer("A dot."), answer("Still a dot.")])
    turn.platform.browser_language = browser_language
    asyncio.run(turn.run(send("What is this?", [{"dataUrl": PNG, "name": "dot.png"}])))
    asyncio.run(turn.run(send("And now?")))
    second_request = json.dumps(turn.request(1), ensure_ascii=False)
    assert label in second_request and PNG not in second_request


def test_usage_refusal_is_remembered_on_the_provider():
    refusal = ScriptedResponse(
        status=400,
        chunks=['{"error":{"message":"unknown field stream_options"}}'],
        headers={"content-type": "application/json"},
    )
    turn = Turn(responses=[refusal, answer("ok")])
    asyncio.run(turn.run(send("Hi")))
    assert turn.kinds[-1] == "done"
    assert turn.platform.local.snapshot()["providers"][0]["supportsUsage"] is False


def test_an_answer_of_a_provider_with_prices_stores_its_estimated_cost():
    priced = {**PROVIDER, "prices": {"input": 2.5, "cachedInput": 1.25, "output": 10}}
    usage = {"prompt_tokens": 1234, "completion_tokens": 56, "prompt_tokens_details": {"cached_tokens": 1000}}
    turn = Turn(local={"providers": [priced]}, responses=[answer("Hi", usage=usage)])
    asyncio.run(turn.run(send("Hi")))
    assistant = turn.history[-1]
    assert assistant["usage"] == {"input": 1234, "cachedInput": 1000, "output": 56}
    # 234 * 2.5 + 1000 * 1.25 + 56 * 10 = 2395 dollars per 1M tokens
    assert assistant["cost"] == 0.002395
