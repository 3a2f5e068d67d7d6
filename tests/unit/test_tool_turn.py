"""The run_python loop inside a chat turn, as the user lives it: the model asks, the panel runs
the code, the model gets the output and answers; bounded, stoppable, stored, replayed."""

import asyncio
import contextlib
import json

from chat_turns import PROVIDER
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.page.context import attachment_record
from margin.sandbox import tool_loop
from margin.turn import chat


def sse(*items):
    return "".join(f"data: {i if isinstance(i, str) else json.dumps(i)}\n\n" for i in items)


def chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def text_answer(*pieces):
    items = [chunk({"content": p}) for p in pieces] + [chunk({}, "stop")]
    return ScriptedResponse(chunks=[sse(i) for i in items] + [sse("[DONE]")])


def call_answer(code, *, call_id="call_1", text="", split=3, arguments=None):
    """A stream that calls run_python, its arguments in `split` pieces (as OpenAI streams them)."""
    raw = json.dumps({"code": code}) if arguments is None else arguments
    size = max(1, len(raw) // split + 1)
    parts = [raw[i : i + size] for i in range(0, len(raw), size)]
    items = [chunk({"content": text})] if text else []
    head = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "run_python", "arguments": ""},
    }
    items.append(chunk({"tool_calls": [head]}))
    items += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in parts]
    items.append(chunk({}, "tool_calls"))
    return ScriptedResponse(chunks=[sse(i) for i in items] + [sse("[DONE]")])


def ran(code, stdout):
    return {
        "block": 0,
        "code": code,
        "status": "ok",
        "stdout": stdout,
        "stderr": "",
        "value": None,
        "tables": [],
        "figures": [],
        "error": "",
        "note": "",
        "startedAt": 1,
        "ms": 5,
    }


class Panel:
    """The side panel's part: answers each tool_call event as `answer(call)` says."""

    def __init__(self, responses, mode="auto", answer=None, history=None):
        self.transport = ScriptedTransport(list(responses))
        local = {"providers": [PROVIDER], "activeProviderId": "p", "runPython": mode}
        if history is not None:
            local["history"] = history
        self.platform = memory_platform(local, self.transport)
        self.events = []
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.answer = answer or (lambda call: {"outcome": "ran", "run": ran(call["code"], "42\n")})
        self.stop = asyncio.Event()

    def emit(self, event):
        self.events.append(event)
        if event["event"] == "tool_call" and "refusal" not in event["call"]:
            reply = self.answer(event["call"])
            if reply is not None:
                self.inbox.put_nowait({"action": "tool_result", "callId": event["call"]["id"], **reply})

    async def receive(self):
        return await self.inbox.get()

    async def run(self, text="What is the sum?"):
        start = {"action": "send", "text": text, "images": []}
        await asyncio.wait_for(chat.run_turn(self.platform, start, self.emit, self.stop, self.receive), 5)

    @property
    def history(self):
        return self.platform.local.snapshot().get("history", [])

    def body(self, index):
        return self.transport.json_bodies()[index]

    @property
    def calls(self):
        return [e for e in self.events if e["event"] == "tool_call"]

    @property
    def kinds(self):
        return [e["event"] for e in self.events]


def test_auto_mode_runs_the_call_sends_the_output_back_and_stores_the_round():
    panel = Panel([call_answer("print(6*7)", text="Let me compute."), text_answer("It is ", "42.")])
    asyncio.run(panel.run())
    assert panel.kinds == ["started", "delta", "tool_call", "delta", "delta", "done"]
    call_event = panel.events[2]
    assert call_event["call"] == {"id": "call_1", "code": "print(6*7)", "mode": "auto"}
    assert call_event["files"] == []
    first, second = panel.body(0), panel.body(1)
    assert first["tools"][0]["function"]["name"] == "run_python"
    assistant, tool = second["messages"][-2:]
    assert assistant["role"] == "assistant" and assistant["content"] == "Let me compute."
    assert assistant["tool_calls"][0]["function"]["arguments"] == json.dumps({"code": "print(6*7)"})
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "[status: ok]\n42"}
    answer = panel.history[-1]
    assert answer["content"] == "It is 42."
    (round_,) = answer["toolRounds"]
    assert round_["text"] == "Let me compute."
    assert round_["calls"][0]["outcome"] == "ran" and round_["calls"][0]["run"]["stdout"] == "42\n"


def test_the_next_turn_replays_the_stored_call_and_result_in_the_wire_format():
    panel = Panel([call_answer("print(6*7)"), text_answer("42."), text_answer("Yes.")])
    asyncio.run(panel.run())
    asyncio.run(panel.run("Sure?"))
    roles = [(m["role"], m.get("tool_calls") is not None) for m in panel.body(2)["messages"]]
    assert roles == [
        ("user", False),
        ("assistant", True),
        ("tool", False),
        ("assistant", False),
        ("user", False),
    ]


def test_off_offers_no_tool_and_sends_stored_rounds_as_text():
    first = Panel([call_answer("print(6*7)"), text_answer("42.")])
    asyncio.run(first.run())
    panel = Panel([text_answer("Fine.")], mode="off", history=first.history)
    asyncio.run(panel.run("Again?"))
    body = panel.body(0)
    assert "tools" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    replayed = body["messages"][1]["content"]
    assert "```python\nprint(6*7)\n```" in replayed and "42" in replayed and replayed.endswith("42.")


def test_declined_call_tells_the_model_the_user_chose_not_to_run_it():
    panel = Panel(
        [call_answer("import os"), text_answer("OK.")],
        mode="ask",
        answer=lambda call: {"outcome": "declined"},
    )
    asyncio.run(panel.run())
    assert panel.calls[0]["call"]["mode"] == "ask"
    assert panel.body(1)["messages"][-1]["content"] == "The user chose not to run this code."
    assert panel.history[-1]["toolRounds"][0]["calls"][0]["outcome"] == "declined"


def test_malformed_arguments_are_not_run_and_the_model_is_told_why():
    panel = Panel([call_answer("", arguments='{"code": "print(1)'), text_answer("Sorry.")])
    asyncio.run(panel.run())
    (refused,) = panel.calls
    assert "not valid JSON" in refused["call"]["refusal"]
    assert "not valid JSON" in panel.body(1)["messages"][-1]["content"]
    call = panel.history[-1]["toolRounds"][0]["calls"][0]
    assert call["outcome"] == "refused" and call["arguments"] == '{"code": "print(1)'


def test_the_bound_forbids_tools_then_ends_the_loop():
    calls = [call_answer(f"print({i})", call_id=f"c{i}") for i in range(tool_loop.MAX_CALLS + 1)]
    panel = Panel([*calls, text_answer("Done.")])
    asyncio.run(panel.run())
    bodies = panel.transport.json_bodies()
    ran_calls = [e for e in panel.events if e["event"] == "tool_call" and "refusal" not in e["call"]]
    assert len(ran_calls) == tool_loop.MAX_CALLS
    assert bodies[tool_loop.MAX_CALLS].get("tool_choice") == "none"
    assert all("tool_choice" not in b for b in bodies[: tool_loop.MAX_CALLS])
    # The model called again though forbidden: the loop ended with what it wrote, nothing more sent.
    assert len(bodies) == tool_loop.MAX_CALLS + 1
    assert panel.kinds[-1] == "done"
    assert len(panel.history[-1]["toolRounds"]) == tool_loop.MAX_CALLS


def test_stop_while_the_panel_runs_the_code_ends_the_turn_and_keeps_the_round():
    panel = Panel([call_answer("while True: pass", text="Trying.")], answer=lambda call: None)

    async def go():
        task = asyncio.ensure_future(panel.run())
        while "tool_call" not in panel.kinds:
            await asyncio.sleep(0.01)
        panel.stop.set()
        await task

    asyncio.run(go())
    assert panel.kinds[-1] == "stopped"
    answer = panel.history[-1]
    assert answer["stopped"] is True and answer["content"] == ""
    assert answer["toolRounds"][0]["calls"][0]["outcome"] == "stopped"
    assert len(panel.transport.requests) == 1


def test_a_result_for_another_call_is_ignored_and_a_broken_run_is_a_failure():
    def answer(call):
        panel.inbox.put_nowait({"action": "tool_result", "callId": "someone-else", "outcome": "declined"})
        return {"outcome": "ran", "run": {"status": "bogus"}}

    panel = Panel([call_answer("print(1)"), text_answer("Hm.")], answer=answer)
    asyncio.run(panel.run())
    call = panel.history[-1]["toolRounds"][0]["calls"][0]
    assert call["outcome"] == "failed" and "could not be read" in call["note"]


def test_attached_pages_are_files_listed_in_the_tool_description():
    page = attachment_record(
        {
            "kind": "page",
            "title": "Prices",
            "url": "https://example.com/p",
            "body": "# Prices\n\n| Item | Price |\n| --- | --- |\n| Tea | 3 |\n| Cake | 4 |",
        },
        captured_at=1,
    ).to_json()
    panel = Panel([call_answer("print(1)"), text_answer("7.")], history=[page])
    asyncio.run(panel.run("Sum the prices"))
    description = panel.body(0)["tools"][0]["function"]["description"]
    assert "/data/page-1.md" in description and "/data/page-1-table-1.csv" in description
    files = panel.calls[0]["files"]
    csv_file = next(f for f in files if f["path"].endswith(".csv"))
    assert csv_file["text"] == "Item,Price\nTea,3\nCake,4\n"


def test_a_server_that_refuses_tools_is_asked_again_without_and_remembered():
    refusal = ScriptedResponse(
        status=400,
        chunks=['{"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools"}}'],
        headers={"content-type": "application/json"},
    )
    panel = Panel([refusal, text_answer("Hi.")])
    asyncio.run(panel.run())
    assert "tools" in panel.body(0) and "tools" not in panel.body(1)
    assert panel.history[-1]["content"] == "Hi."
    assert panel.platform.local.snapshot()["providers"][0]["supportsTools"] is False


def test_a_worker_that_stops_mid_call_loses_no_round_and_retry_save_stores_it():
    from margin.turn import unsaved_answers

    panel = Panel(
        [call_answer("print(1)", call_id="one"), call_answer("while True: pass", call_id="two")],
        answer=lambda call: (
            {"outcome": "ran", "run": ran(call["code"], "1\n")} if call["id"] == "one" else None
        ),
    )

    def kept():
        return panel.platform.session.snapshot().get("unsavedAnswers", [])

    async def go():
        task = asyncio.ensure_future(panel.run())
        while len(panel.calls) < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()  # the worker is gone: nothing after this line of Python runs
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert [r["role"] for r in panel.history] == ["user"]  # the answer never reached history
    (entry,) = kept()
    assert entry["inProgress"] is True and entry["answer"]["incomplete"] is True
    calls = [c for r in entry["answer"]["toolRounds"] for c in r["calls"]]
    assert [(c["id"], c["outcome"]) for c in calls] == [("one", "ran"), ("two", "stopped")]
    saved = asyncio.run(unsaved_answers.save(panel.platform, entry))
    assert saved["saved"] is True
    assert panel.history[-1]["toolRounds"] == entry["answer"]["toolRounds"]


def test_a_finished_turn_leaves_no_progress_entry_behind():
    panel = Panel([call_answer("print(1)"), text_answer("1.")])
    asyncio.run(panel.run())
    assert panel.platform.session.snapshot().get("unsavedAnswers", []) == []


def test_a_gemini_model_without_function_calling_is_asked_again_without_the_tool():
    gemini = {**PROVIDER, "type": "gemini", "baseUrl": "https://generativelanguage.googleapis.com/v1beta"}
    refusal = ScriptedResponse(
        status=400,
        chunks=[
            json.dumps(
                {
                    "error": {
                        "code": 400,
                        "message": "Function calling is not enabled for models/gemma-3-27b-it",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            )
        ],
        headers={"content-type": "application/json"},
    )
    answer = ScriptedResponse(
        chunks=[sse({"candidates": [{"content": {"parts": [{"text": "Hi."}]}, "finishReason": "STOP"}]})]
    )
    panel = Panel([refusal, answer])
    run_local = panel.platform.local
    asyncio.run(run_local.set({"providers": [gemini]}))
    asyncio.run(panel.run())
    assert "tools" in panel.body(0) and "tools" not in panel.body(1)
    assert panel.history[-1]["content"] == "Hi."
    assert panel.platform.local.snapshot()["providers"][0]["supportsTools"] is False


def test_the_answers_usage_counts_every_request_of_the_loop():
    def with_usage(response, prompt, completion):
        usage = {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}
        response.chunks.insert(-1, sse(usage))
        return response

    panel = Panel([with_usage(call_answer("print(1)"), 100, 10), with_usage(text_answer("1."), 150, 5)])
    asyncio.run(panel.run())
    assert panel.history[-1]["usage"] == {"input": 250, "cachedInput": 0, "output": 15}


def responses_stream(*events):
    return ScriptedResponse(chunks=[f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events])


def test_an_agent_providers_loop_continues_the_last_answers_response_with_the_round():
    agent = {**PROVIDER, "type": "openai-responses", "baseUrl": "https://api.openai.com/v1"}
    history = [
        {"role": "user", "content": "Hi", "createdAt": 1},
        {
            "role": "assistant",
            "content": "Hello",
            "createdAt": 2,
            "responseId": "resp_0",
            "responseProviderId": "p",
        },
    ]
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_r", "name": "run_python", "arguments": ""}
    first = responses_stream(
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "item": call},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "delta": '{"code": "print(42)"}',
        },
        {"type": "response.completed", "response": {"id": "resp_1", "usage": {}}},
    )
    second = responses_stream(
        {"type": "response.created", "response": {"id": "resp_2"}},
        {"type": "response.output_text.delta", "delta": "42."},
        {"type": "response.completed", "response": {"id": "resp_2", "usage": {}}},
    )
    panel = Panel([first, second], history=history)
    asyncio.run(panel.platform.local.set({"providers": [agent]}))
    asyncio.run(panel.run())
    body = panel.body(1)
    assert body["previous_response_id"] == "resp_0"
    kinds = [item.get("type") or item["role"] for item in body["input"]]
    assert kinds == ["user", "function_call", "function_call_output"]
    assert body["input"][2] == {
        "type": "function_call_output",
        "call_id": "call_r",
        "output": "[status: ok]\n42",
    }
    answer = panel.history[-1]
    assert answer["responseId"] == "resp_2" and answer["content"] == "42."


def test_the_workers_turn_port_carries_the_call_out_and_the_result_in():
    from margin.app.worker import Worker

    panel = Panel([call_answer("print(42)"), text_answer("42.")])
    events = []

    def post(turn_id, event):
        events.append(event)
        if event["event"] == "tool_call":
            result = {
                "action": "tool_result",
                "callId": event["call"]["id"],
                "outcome": "ran",
                "run": ran("print(42)", "42\n"),
            }
            worker.turn_message(turn_id, json.dumps(result).encode())  # the shell sends UTF-8 bytes
        return True

    worker = Worker(panel.platform, post)
    worker.turn_message("t0", json.dumps({"action": "tool_result"}))  # no such turn: dropped, no queue left
    start = json.dumps({"action": "send", "text": "Sum?", "images": []})
    asyncio.run(asyncio.wait_for(worker.run_turn_json("t1", start), 5))
    assert [e["event"] for e in events][-1] == "done"
    assert tool_results_of(panel.body(1)) == ["[status: ok]\n42"]
    assert worker._inboxes == {}


def tool_results_of(body):
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]
