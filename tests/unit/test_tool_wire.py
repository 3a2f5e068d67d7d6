"""run_python on each provider's wire: calls read from streams that send them in pieces, stored
rounds replayed in each API's own shape, the stored shape checked, the sandbox's /data files."""

import json

import pytest

from margin.base.sse import SSEEvent
from margin.i18n import catalogue
from margin.page import sandbox_files
from margin.providers import anthropic, gemini, openai, responses
from margin.providers.tool_wire import ToolOffer
from margin.sandbox import tool_loop
from margin.storage.history import Record

OFFER = ToolOffer("Run Python.")
PROVIDER = {"id": "p", "baseUrl": "https://api.example.com/v1", "model": "m", "apiKey": "k"}


def run_record(stdout="42\n"):
    return {
        "block": 0,
        "code": "print(42)",
        "status": "ok",
        "stdout": stdout,
        "stderr": "",
        "value": None,
        "tables": [],
        "figures": [],
        "error": "",
        "note": "",
        "startedAt": 1,
        "ms": 3,
    }


def answer_with_round(text="It is 42.", *, arguments='{"code": "print(42)"}', signature=None):
    call = tool_loop.stored_call(
        tool_loop.ToolCall("call_9", "run_python", arguments, signature), "print(42)", "ran", run_record(), ""
    )
    return Record("assistant", text, {"toolRounds": [{"text": "Computing.", "calls": [call]}]})


QUESTION = Record("user", "Sum?")


def feed_all(parser, events):
    for name, data in events:
        parser.feed(SSEEvent(event=name, data=json.dumps(data)))
    return parser.tool_calls


# -- reading calls -----------------------------------------------------------------------------


def test_anthropic_tool_use_arguments_arrive_in_pieces():
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me."}},
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "run_python", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"co'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": 'de": "1+1"}'},
            },
        ),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    parser = anthropic.StreamParser(PROVIDER)
    (call,) = feed_all(parser, events)
    assert (call.id, call.name, json.loads(call.arguments)) == ("toolu_1", "run_python", {"code": "1+1"})
    assert parser.text == "Let me."


def test_gemini_function_call_keeps_its_thought_signature():
    chunk = {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {
                            "functionCall": {"name": "run_python", "args": {"code": "1+1"}},
                            "thoughtSignature": "sig==",
                        }
                    ]
                },
                "finishReason": "STOP",
            }
        ]
    }
    parser = gemini.StreamParser(PROVIDER)
    (call,) = feed_all(parser, [("", chunk)])
    assert json.loads(call.arguments) == {"code": "1+1"} and call.signature == "sig=="


def test_responses_function_call_arguments_arrive_in_pieces():
    events = [
        ("", {"type": "response.created", "response": {"id": "resp_1"}}),
        (
            "",
            {
                "type": "response.output_item.added",
                "item": {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_7",
                    "name": "run_python",
                    "arguments": "",
                },
            },
        ),
        ("", {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"code": '}),
        ("", {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '"2*3"}'}),
        ("", {"type": "response.completed", "response": {"id": "resp_1", "usage": {}}}),
    ]
    parser = responses.StreamParser(PROVIDER)
    (call,) = feed_all(parser, events)
    assert (call.id, json.loads(call.arguments)) == ("call_7", {"code": "2*3"})


def test_openai_two_calls_interleaved_by_index():
    parser = openai.StreamParser("m")
    deltas = [
        {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "run_python", "arguments": '{"code"'}}]},
        {
            "tool_calls": [
                {"index": 1, "id": "b", "function": {"name": "run_python", "arguments": '{"code": "2"}'}}
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": ': "1"}'}}]},
    ]
    for delta in deltas:
        parser.feed(SSEEvent(data=json.dumps({"choices": [{"index": 0, "delta": delta}]})))
    calls = parser.tool_calls
    assert [(c.id, json.loads(c.arguments)["code"]) for c in calls] == [("a", "1"), ("b", "2")]


# -- replaying stored rounds ------------------------------------------------------------------------


def test_anthropic_replays_tool_use_and_tool_result_blocks():
    body = json.loads(
        anthropic.build_chat_request(PROVIDER, [QUESTION, answer_with_round()], stream=True, tools=OFFER).body
    )
    assert body["tools"][0]["name"] == "run_python"
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    use = body["messages"][1]["content"][1]
    assert use["type"] == "tool_use" and use["id"] == "call_9" and use["input"] == {"code": "print(42)"}
    result = body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_9" and "42" in result["content"]


def test_anthropic_malformed_stored_arguments_replay_as_an_empty_input():
    record = answer_with_round(arguments='{"code": ')
    body = json.loads(
        anthropic.build_chat_request(PROVIDER, [QUESTION, record], stream=True, tools=OFFER).body
    )
    assert body["messages"][1]["content"][1]["input"] == {}


def test_gemini_replays_function_call_and_response_parts_with_the_signature():
    body = json.loads(
        gemini.build_chat_request(
            PROVIDER, [QUESTION, answer_with_round(signature="sig==")], stream=True, tools=OFFER
        ).body
    )
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user", "model"]
    call_part = body["contents"][1]["parts"][1]
    assert call_part == {
        "functionCall": {"name": "run_python", "args": {"code": "print(42)"}},
        "thoughtSignature": "sig==",
    }
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response["name"] == "run_python" and "42" in response["response"]["result"]
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "run_python"


def test_responses_replays_function_call_items():
    body = json.loads(
        responses.build_chat_request(PROVIDER, [QUESTION, answer_with_round()], stream=True, tools=OFFER).body
    )
    kinds = [item.get("type") or item["role"] for item in body["input"]]
    assert kinds == ["user", "assistant", "function_call", "function_call_output", "assistant"]
    assert body["input"][3]["call_id"] == "call_9" and "42" in body["input"][3]["output"]


@pytest.mark.parametrize(
    ("module", "key", "forbidden"),
    [
        (openai, "tool_choice", "none"),
        (anthropic, "tool_choice", {"type": "none"}),
        (gemini, "toolConfig", {"functionCallingConfig": {"mode": "NONE"}}),
        (responses, "tool_choice", "none"),
    ],
)
def test_past_the_bound_the_tool_stays_defined_but_is_forbidden(module, key, forbidden):
    body = json.loads(
        module.build_chat_request(PROVIDER, [QUESTION], stream=True, tools=ToolOffer("x", forbid=True)).body
    )
    assert body[key] == forbidden and body["tools"]
    plain = json.loads(
        module.build_chat_request(PROVIDER, [QUESTION], stream=True, tools=ToolOffer("x")).body
    )
    assert key not in plain


# -- reading a call, storing rounds ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("run_python", "not json", "not valid JSON"),
        ("run_python", "[1]", 'no "code"'),
        ("run_python", '{"code": 3}', 'no "code"'),
        ("run_python", '{"code": "   "}', 'no "code"'),
        ("shell", '{"code": "ls"}', "no tool named"),
    ],
)
def test_calls_that_cannot_run_say_why(name, arguments, says):
    reading = tool_loop.read_call(tool_loop.ToolCall("c", name, arguments), catalogue.words("en"))
    assert reading.code == "" and says in reading.refusal


def test_code_over_the_bound_is_refused():
    code = "x" * (tool_loop.code_runs.CODE_CHARS + 1)
    assert (
        "longer than"
        in tool_loop.read_call(
            tool_loop.ToolCall("c", "run_python", json.dumps({"code": code})), catalogue.words("en")
        ).refusal
    )


def test_stored_rounds_are_valid_only_as_a_fresh_turn_writes_them():
    rounds = answer_with_round().fields["toolRounds"]
    assert tool_loop.is_tool_rounds(rounds)
    grown = [{**rounds[0], "calls": [{**rounds[0]["calls"][0], "secret": "x"}]}]
    assert not tool_loop.is_tool_rounds(grown)
    assert not tool_loop.is_tool_rounds(
        [{**rounds[0], "calls": [{**rounds[0]["calls"][0], "outcome": "maybe"}]}]
    )
    assert not tool_loop.is_tool_rounds([])
    assert not tool_loop.is_tool_rounds(rounds * (tool_loop.MAX_CALLS + 2))


def test_a_stored_answer_whose_rounds_were_tampered_with_reads_without_them():
    value = {**answer_with_round().to_json(), "toolRounds": [{"text": 1, "calls": []}]}
    record = Record.from_json(value)
    assert "toolRounds" not in record.fields and record.content == "It is 42."


# -- the sandbox's files ------------------------------------------------------------------------------


def test_files_are_the_pages_their_tables_and_images_in_a_stable_order():
    page = Record(
        "user",
        "[Page context] header\n\nIntro\n\n| a | b \\| c |\n| --- | --- |\n| 1 | 2 |\n\n| x | y |\n| --- | --- |\n| 3 | 4 |",
        {"attachment": {"kind": "page", "title": "T"}},
    )
    image = Record(
        "user",
        [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    )
    files = sandbox_files.conversation_files([page, image, Record("assistant", "ok")])
    assert [f["path"] for f in files] == [
        "/data/page-1.md",
        "/data/page-1-table-1.csv",
        "/data/page-1-table-2.csv",
        "/data/image-1.png",
    ]
    assert files[1]["text"] == "a,b | c\n1,2\n"
    assert files[3]["base64"] == "AAAA"
    assert files == sandbox_files.conversation_files([page, image, Record("assistant", "ok")])


def test_files_past_the_bound_are_left_out_whole(monkeypatch):
    monkeypatch.setattr(sandbox_files, "MAX_TOTAL_CHARS", 30)
    pages = [
        Record("user", f"[Page context] h\n\n{'x' * 20}", {"attachment": {"kind": "page"}}) for _ in range(3)
    ]
    files = sandbox_files.conversation_files(pages)
    assert [f["path"] for f in files] == ["/data/page-1.md"] and files[0]["text"] == "x" * 20


# -- the Markdown export ------------------------------------------------------------------------------


def test_the_markdown_export_holds_the_models_runs_and_the_blocks_runs():
    from margin.sessions.export import to_markdown
    from margin.sessions.index import IndexEntry

    answer = answer_with_round("The sum is 42.").with_fields(runs=[{**run_record("7\n"), "block": 0}])
    text = to_markdown(IndexEntry("s", "Sums", 0, False, ""), [QUESTION.to_json(), answer.to_json()])
    assert text.index("Computing.") < text.index("```python\nprint(42)\n```") < text.index("The sum is 42.")
    assert "_Output: ok_\n\n```text\n42\n```" in text
    assert "_Output of code block 1: ok_\n\n```text\n7\n```" in text


@pytest.mark.parametrize(
    "tool_calls",
    [
        "not a list",
        [1, None, "x"],
        [{"index": [1], "function": {"name": "run_python", "arguments": "{}"}}],
        [{"index": 0, "function": "not an object"}],
        [{"index": 0.5, "id": 7, "function": {"name": ["run_python"], "arguments": 3}}],
    ],
)
def test_hostile_tool_call_deltas_never_crash_the_stream(tool_calls):
    parser = openai.StreamParser("m")
    parser.feed(SSEEvent(data=json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": tool_calls}}]})))
    for call in parser.tool_calls:  # whatever was read is refused by read_call, never run blindly
        assert tool_loop.read_call(call, catalogue.words("en")).refusal or json.loads(call.arguments)


def test_arguments_past_the_bound_are_not_kept_growing():
    parser = openai.StreamParser("m")
    piece = "x" * 60_000
    for _ in range(5):
        delta = {
            "tool_calls": [{"index": 0, "id": "c", "function": {"name": "run_python", "arguments": piece}}]
        }
        parser.feed(SSEEvent(data=json.dumps({"choices": [{"index": 0, "delta": delta}]})))
    (call,) = parser.tool_calls
    assert len(call.arguments) <= tool_loop.ARGUMENTS_CHARS
    assert "not valid JSON" in tool_loop.read_call(call, catalogue.words("en")).refusal
