"""The Anthropic provider: exact requests, the Messages stream from recorded transcripts, errors."""

import json
from pathlib import Path

import pytest
from helpers import run
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.base.sse import SSEDecoder
from margin.providers import PROVIDER_TYPES, anthropic, normalize_provider, provider_module
from margin.providers.overflow import ContextOverflowError
from margin.storage.history import Record

TRANSCRIPTS = Path(__file__).parent / "transcripts" / "anthropic"
ERRORS = json.loads((TRANSCRIPTS / "errors.json").read_text(encoding="utf-8"))
STREAMS = json.loads((TRANSCRIPTS / "streams.json").read_text(encoding="utf-8"))

PROVIDER = {
    "id": "a1",
    "type": "anthropic",
    "name": "Claude",
    "baseUrl": "https://api.anthropic.com/v1/",
    "apiKey": "sk-ant-test",
    "model": "claude-sonnet-4-5",
}
PNG = "data:image/png;base64,iVBORw0KGgo="


def transcript(name):
    """A recorded stream body, exactly as it came over the wire."""
    return "\n".join(STREAMS[name])


def body_of(request):
    return json.loads(request.body)


async def collect(transport, provider=PROVIDER, records=None):
    stream = await anthropic.open_stream(transport, provider, records or [Record("user", "Hi")])
    pieces = []
    while True:
        got = await stream.read()
        if got is None:
            return stream, pieces
        pieces.extend(got)


def stream_of(*chunks):
    return ScriptedTransport([ScriptedResponse(chunks=list(chunks))])


def error_response(status, body, headers=None):
    text = body if isinstance(body, str) else json.dumps(body)
    return ScriptedResponse(
        status=status, chunks=[text], headers={"content-type": "application/json", **(headers or {})}
    )


def open_error(response):
    with pytest.raises(Exception) as caught:
        run(collect(ScriptedTransport([response])))
    return caught.value


# -- requests ---------------------------------------------------------------------------------


def test_the_type_is_registered_and_its_module_found():
    assert PROVIDER_TYPES["anthropic"] == {
        "module": "margin.providers.anthropic",
        "label": "Anthropic (Claude)",
    }
    assert provider_module("anthropic") is anthropic


def test_streaming_request_url_headers_and_exact_compact_body():
    request = anthropic.build_chat_request(
        PROVIDER, [Record("user", "Hi ✓")], stream=True, include_usage=True
    )
    assert request.method == "POST"
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers == {
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
        "anthropic-dangerous-direct-browser-access": "true",
        "accept": "text/event-stream",
        "x-api-key": "sk-ant-test",
    }
    assert request.body == (
        '{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,'
        '"messages":[{"role":"user","content":[{"type":"text","text":"Hi ✓"}]}]}'
    )


def test_the_system_prompt_and_system_records_go_top_level():
    provider = {**PROVIDER, "systemPrompt": "  Answer in French.  "}
    records = [Record("system", "Be brief."), Record("user", "Hi")]
    body = body_of(anthropic.build_chat_request(provider, records, stream=True))
    assert body["system"] == "Answer in French.\n\nBe brief."
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "system" not in body_of(
        anthropic.build_chat_request({**PROVIDER, "systemPrompt": ""}, records[1:], stream=True)
    )


def test_images_become_base64_source_blocks_and_our_own_keys_stay_home():
    records = [
        Record(
            "user",
            [
                {"type": "text", "text": "[Figure 1: cat.png]"},
                {"type": "image_url", "image_url": {"url": PNG}, "meta": {"name": "cat.png"}},
                {"type": "text", "text": "What is this?"},
            ],
            {"createdAt": 1, "imagesSeen": False},
        )
    ]
    body = body_of(anthropic.build_chat_request(PROVIDER, records, stream=True))
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[Figure 1: cat.png]"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
                {"type": "text", "text": "What is this?"},
            ],
        }
    ]


def test_an_attachment_and_its_question_merge_into_one_alternating_user_message():
    records = [
        Record("user", "«page» Attached page text"),
        Record("user", "Summarize it"),
        Record("assistant", "It is about cats."),
        Record("assistant", ""),  # an empty (stopped) answer is never sent
        Record("user", [{"type": "text", "text": ""}]),
        Record("user", "And dogs?"),
    ]
    body = body_of(anthropic.build_chat_request(PROVIDER, records, stream=True))
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in body["messages"][0]["content"]] == [
        "«page» Attached page text",
        "Summarize it",
    ]
    assert body["messages"][2]["content"] == [{"type": "text", "text": "And dogs?"}]


def test_one_cache_breakpoint_ends_the_stable_prefix():
    records = [Record("user", "Q1"), Record("assistant", "A1"), Record("user", "Q2")]
    body = body_of(anthropic.build_chat_request(PROVIDER, records, stream=True))
    marked = [(m["role"], b["text"]) for m in body["messages"] for b in m["content"] if "cache_control" in b]
    assert marked == [("assistant", "A1")]
    assert body["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    # A first question has no earlier prefix to cache.
    first = body_of(anthropic.build_chat_request(PROVIDER, [Record("user", "Q1")], stream=True))
    assert "cache_control" not in json.dumps(first)


def test_the_breakpoint_lands_on_an_attachment_merged_with_the_new_question():
    records = [Record("user", "«page» text"), Record("user", "Question")]
    body = body_of(anthropic.build_chat_request(PROVIDER, records, stream=True))
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "«page» text", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Question"},
    ]


def test_records_are_not_mutated_by_the_breakpoint():
    part = {"type": "text", "text": "A1"}
    records = [Record("user", "Q1"), Record("assistant", [part]), Record("user", "Q2")]
    anthropic.build_chat_request(PROVIDER, records, stream=True)
    assert part == {"type": "text", "text": "A1"}


# -- the stream -------------------------------------------------------------------------------


def test_a_recorded_stream_gives_text_usage_and_stop_reason():
    stream, pieces = run(collect(stream_of(transcript("hello"))))
    assert pieces == ["Hello", ", wörld ✓"]
    assert stream.text == "Hello, wörld ✓"
    assert stream.finish_reason == "end_turn"
    assert stream.usage == {"input": 2360, "cachedInput": 2048, "output": 15}
    assert stream.usage_unsupported is False


def test_the_stream_parses_the_same_split_at_every_character():
    text = transcript("hello")
    for cut in range(len(text) + 1):
        stream, pieces = run(collect(stream_of(text[:cut], text[cut:])))
        assert "".join(pieces) == "Hello, wörld ✓", cut
        assert stream.usage["output"] == 15
    stream, pieces = run(collect(stream_of(*text)))
    assert stream.text == "Hello, wörld ✓"
    assert stream.finish_reason == "end_turn"


def test_the_parser_is_sans_io_and_ignores_pings_and_unknown_events():
    parser = anthropic.StreamParser(PROVIDER)
    decoder = SSEDecoder()
    events = decoder.feed(
        'event: ping\ndata: {"type": "ping"}\n\n'
        'event: future_event\ndata: {"type": "future_event"}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"thinking_delta","thinking":"hmm"}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
        '"delta":{"type":"text_delta","text":"Yes"}}\n\n'
    )
    assert [p for e in events for p in parser.feed(e)] == ["Yes"]
    assert parser.usage is None
    assert not parser.done


def test_an_overloaded_error_event_mid_stream_is_a_clear_sentence_with_the_partial():
    with pytest.raises(Exception) as caught:
        run(collect(stream_of(transcript("overloaded"))))
    error = caught.value
    assert error.code == "provider_down"
    assert "Anthropic is overloaded right now" in error.message
    assert "Try again in a moment" in error.message
    assert error.partial_text == "Half an ans"


def test_a_prompt_too_long_error_event_is_a_context_overflow():
    event = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    with pytest.raises(ContextOverflowError) as caught:
        run(collect(stream_of(f"event: error\ndata: {json.dumps(event)}\n\n")))
    assert caught.value.overflow.excess_tokens == 10000


def test_a_stream_cut_before_message_stop_keeps_the_partial_text():
    text = transcript("hello")
    cut_at = text.index("event: content_block_stop")
    with pytest.raises(Exception) as caught:
        run(collect(stream_of(text[:cut_at])))
    assert caught.value.code == "stream_cut"
    assert caught.value.partial_text == "Hello, wörld ✓"


def test_a_stream_that_is_not_json_is_a_bad_stream():
    with pytest.raises(Exception) as caught:
        run(collect(stream_of("event: message_start\ndata: {not json\n\n")))
    assert caught.value.code == "bad_stream"


def test_a_200_that_is_not_an_event_stream_is_a_bad_stream():
    error = open_error(error_response(200, {"type": "message"}))
    assert error.code == "bad_stream"


# -- errors, from the documented bodies --------------------------------------------------------


def documented(name):
    case = ERRORS[name]
    return error_response(case["status"], case["body"], case.get("headers"))


@pytest.mark.parametrize(
    ("name", "code", "words"),
    [
        ("authentication_error", "bad_key", ["rejected the API key (401)", "invalid x-api-key"]),
        ("permission_error", "bad_key", ["(403)", "does not have permission"]),
        ("not_found_error", "not_found", ["claude-sonnet-4-5", "(404)", "model: claude-nope"]),
        ("rate_limit_error", "rate_limited", ["(429)", "Wait 30 seconds"]),
        ("overloaded_error", "provider_down", ["Anthropic is overloaded right now (529)"]),
        ("api_error", "provider_down", ["(500)", "Internal server error"]),
        ("invalid_request_error", "bad_request", ["(400)", "roles must alternate"]),
    ],
)
def test_documented_error_bodies_map_to_the_shared_codes(name, code, words):
    error = open_error(documented(name))
    assert error.code == code
    for word in words:
        assert word in error.message


@pytest.mark.parametrize("name", ["prompt_too_long", "request_too_large"])
def test_too_long_requests_are_context_overflows(name):
    error = open_error(documented(name))
    assert isinstance(error, ContextOverflowError)
    assert error.code == "context_overflow"
    assert "too long for claude-sonnet-4-5" in error.message


def test_the_prompt_too_long_numbers_are_kept():
    error = open_error(documented("prompt_too_long"))
    assert error.overflow.requested_tokens == 208310
    assert error.overflow.limit_tokens == 200000


# -- test_connection ---------------------------------------------------------------------------

OK_ANSWER = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "OK"}],
    "stop_reason": "max_tokens",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1},
}


def connection(*responses):
    transport = ScriptedTransport(list(responses))
    result = run(
        anthropic.test_connection(memory_platform(transport=transport), normalize_provider(PROVIDER))
    )
    return result, transport


def test_connection_success_sentence_and_a_one_token_non_streaming_request():
    result, transport = connection(error_response(200, OK_ANSWER))
    assert result == {
        "ok": True,
        "message": "Connected to api.anthropic.com: model claude-sonnet-4-5 answered.",
    }
    request = transport.requests[0]
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert "accept" not in request.headers
    assert transport.json_bodies() == [
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1,
            "messages": [{"role": "user", "content": "Reply with OK."}],
        }
    ]


def test_connection_failures_are_the_mapped_sentences():
    result, _ = connection(documented("authentication_error"))
    assert result["ok"] is False
    assert "rejected the API key" in result["message"]
    result, _ = connection(documented("not_found_error"))
    assert "does not know the model “claude-sonnet-4-5”" in result["message"]


def test_connection_to_something_that_is_not_the_anthropic_api():
    result, _ = connection(error_response(200, "<html>hello</html>"))
    assert result["ok"] is False
    assert "not like the Anthropic API" in result["message"]


# -- list_models --------------------------------------------------------------------------------


def models_page(ids, has_more):
    return {
        "data": [
            {"type": "model", "id": i, "display_name": i, "created_at": "2025-02-19T00:00:00Z"} for i in ids
        ],
        "has_more": has_more,
        "first_id": ids[0],
        "last_id": ids[-1],
    }


def test_list_models_follows_the_pages():
    transport = ScriptedTransport(
        [
            error_response(200, models_page(["claude-opus-4-1", "claude-sonnet-4-5"], True)),
            error_response(200, models_page(["claude-3-5-haiku-latest"], False)),
        ]
    )
    names = run(anthropic.list_models(memory_platform(transport=transport), normalize_provider(PROVIDER)))
    assert names == ["claude-opus-4-1", "claude-sonnet-4-5", "claude-3-5-haiku-latest"]
    first, second = transport.requests
    assert first.method == "GET"
    assert first.url == "https://api.anthropic.com/v1/models?limit=1000"
    assert second.url == "https://api.anthropic.com/v1/models?limit=1000&after_id=claude-sonnet-4-5"
    assert first.headers["x-api-key"] == "sk-ant-test"
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert first.body is None


def test_list_models_stops_after_a_few_pages():
    pages = [error_response(200, models_page([f"m{i}"], True)) for i in range(anthropic.MODEL_PAGES + 3)]
    transport = ScriptedTransport(pages)
    names = run(anthropic.list_models(memory_platform(transport=transport), normalize_provider(PROVIDER)))
    assert len(names) == anthropic.MODEL_PAGES == len(transport.requests)


def test_list_models_maps_errors():
    transport = ScriptedTransport([documented("authentication_error")])
    with pytest.raises(Exception) as caught:
        run(anthropic.list_models(memory_platform(transport=transport), normalize_provider(PROVIDER)))
    assert caught.value.code == "bad_key"


def test_usage_merges_message_start_and_delta_and_drops_garbage():
    parser = anthropic.StreamParser(PROVIDER)
    decoder = SSEDecoder()
    events = decoder.feed(
        'event: message_start\ndata: {"type":"message_start","message":{"usage":'
        '{"input_tokens":10,"cache_read_input_tokens":NaN,"cache_creation_input_tokens":5,"output_tokens":1}}}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        '"usage":{"output_tokens":42}}\n\n'
    )
    for event in events:
        parser.feed(event)
    assert parser.usage == {"input": 15, "cachedInput": 0, "output": 42}
