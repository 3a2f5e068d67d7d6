"""The Responses provider: exact requests, the stream from a recorded transcript, errors."""

import json

import pytest
from helpers import run
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.base.sse import SSEDecoder
from margin.providers import PROVIDER_TYPES, normalize_provider, provider_module, responses
from margin.providers.overflow import ContextOverflowError
from margin.storage.history import Record

PROVIDER = {
    "id": "r1",
    "type": "openai-responses",
    "name": "Agent",
    "baseUrl": "https://api.openai.com/v1/",
    "apiKey": "sk-test",
    "model": "gpt-4.1-mini",
}
PNG = "data:image/png;base64,iVBORw0KGgo="
USAGE = {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 8},
    "output_tokens": 7,
    "total_tokens": 43,
}


def event(kind, **data):
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def created(rid="resp_1"):
    return event("response.created", response={"id": rid, "object": "response", "status": "in_progress"})


def completed(rid="resp_1", usage=USAGE):
    return event(
        "response.completed",
        response={"id": rid, "object": "response", "status": "completed", "usage": usage},
    )


TRANSCRIPT = "".join(
    [
        created(),
        event("response.in_progress", response={"id": "resp_1"}),
        event("response.output_item.added", output_index=0, item={"type": "message", "id": "msg_1"}),
        event("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta="Hel"),
        event("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta="lo ✓"),
        event("response.output_text.done", item_id="msg_1", output_index=0, content_index=0, text="Hello ✓"),
        completed(),
    ]
)


def body_of(request):
    return json.loads(request.body)


async def collect(transport, records=None, **kwargs):
    stream = await responses.open_stream(transport, PROVIDER, records or [Record("user", "Hi")], **kwargs)
    pieces = []
    while True:
        got = await stream.read()
        if got is None:
            return stream, pieces
        pieces.extend(got)


def error_response(status, body):
    return ScriptedResponse(
        status=status, chunks=[json.dumps(body)], headers={"content-type": "application/json"}
    )


def forgotten_body(rid="resp_old"):
    return {
        "error": {
            "message": f"Previous response with id '{rid}' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }


# -- the seam -----------------------------------------------------------------------------------


def test_the_type_is_registered_with_its_default_address():
    assert PROVIDER_TYPES["openai-responses"]["module"] == "margin.providers.responses"
    assert provider_module("openai-responses") is responses
    assert normalize_provider(PROVIDER)["type"] == "openai-responses"
    for name in ("build_chat_request", "open_stream", "test_connection", "list_models"):
        assert callable(getattr(responses, name))


# -- the request --------------------------------------------------------------------------------


def test_the_request_sends_text_images_and_instructions_as_input_items():
    provider = {**PROVIDER, "systemPrompt": "Be brief."}
    records = [
        Record(
            "user",
            [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": PNG}}],
        ),
        Record("assistant", "A dot.", {"responseId": "resp_0", "model": "m"}),
        Record("user", "And now?", {"createdAt": 1}),
    ]
    request = responses.build_chat_request(provider, records, stream=True, include_usage=True)
    assert request.method == "POST"
    assert request.url == "https://api.openai.com/v1/responses"
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert body_of(request) == {
        "model": "gpt-4.1-mini",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": PNG},
                ],
            },
            {"role": "assistant", "content": [{"type": "output_text", "text": "A dot."}]},
            {"role": "user", "content": [{"type": "input_text", "text": "And now?"}]},
        ],
        "stream": True,
        "instructions": "Be brief.",
        "store": True,
    }


def test_previous_response_id_is_sent_only_when_given_and_empty_text_never():
    records = [Record("user", "  "), Record("user", "Next")]
    plain = body_of(responses.build_chat_request(PROVIDER, records, stream=True))
    assert "previous_response_id" not in plain and "instructions" not in plain
    assert plain["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Next"}]}]
    chained = body_of(
        responses.build_chat_request(PROVIDER, records, stream=True, previous_response_id="resp_9")
    )
    assert chained["previous_response_id"] == "resp_9"


# -- the stream ---------------------------------------------------------------------------------


def test_the_stream_gives_text_the_new_response_id_and_usage():
    stream, pieces = run(collect(ScriptedTransport([ScriptedResponse(chunks=[TRANSCRIPT])])))
    assert pieces == ["Hel", "lo ✓"]
    assert stream.text == "Hello ✓"
    assert stream.response_id == "resp_1"
    assert stream.usage == {"input": 36, "cachedInput": 8, "output": 7}
    assert stream.finish_reason == "stop"


def test_the_parser_gives_the_same_answer_split_at_every_character():
    data = TRANSCRIPT  # the transport hands text chunks to the decoder
    for cut in range(1, len(data)):
        decoder = SSEDecoder()
        parser = responses.StreamParser(PROVIDER)
        pieces = []
        for chunk in (data[:cut], data[cut:]):
            for ev in decoder.feed(chunk):
                pieces.extend(parser.feed(ev))
        for ev in decoder.close():
            pieces.extend(parser.feed(ev))
        parser.check_end()
        assert "".join(pieces) == "Hello ✓", cut
        assert parser.response_id == "resp_1" and parser.usage == {"input": 36, "cachedInput": 8, "output": 7}


def test_an_incomplete_response_ends_the_stream_as_length():
    body = (
        created()
        + event("response.output_text.delta", delta="Long")
        + event(
            "response.incomplete",
            response={
                "id": "resp_1",
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            },
        )
    )
    stream, pieces = run(collect(ScriptedTransport([ScriptedResponse(chunks=[body])])))
    assert pieces == ["Long"] and stream.finish_reason == "length" and stream.response_id == "resp_1"


def test_a_cut_stream_keeps_the_partial_text():
    cut = created() + event("response.output_text.delta", delta="Half an ")
    with pytest.raises(Exception) as raised:
        run(collect(ScriptedTransport([ScriptedResponse(chunks=[cut])])))
    assert raised.value.code == "stream_cut"
    assert raised.value.partial_text == "Half an "


def test_a_failed_response_mid_stream_is_mapped_and_keeps_the_partial_text():
    body = (
        created()
        + event("response.output_text.delta", delta="Par")
        + event(
            "response.failed",
            response={
                "id": "resp_1",
                "status": "failed",
                "error": {"code": "server_error", "message": "boom"},
            },
        )
    )
    with pytest.raises(Exception) as raised:
        run(collect(ScriptedTransport([ScriptedResponse(chunks=[body])])))
    assert raised.value.code == "provider_down"
    assert raised.value.partial_text == "Par"


def test_an_error_event_for_rate_limits_is_rate_limited():
    body = event("error", code="rate_limit_exceeded", message="Rate limit reached", param=None)
    with pytest.raises(Exception) as raised:
        run(collect(ScriptedTransport([ScriptedResponse(chunks=[body])])))
    assert raised.value.code == "rate_limited"


# -- errors over HTTP ---------------------------------------------------------------------------


def test_an_unknown_previous_response_id_is_conversation_forgotten():
    for status in (400, 404):
        transport = ScriptedTransport([error_response(status, forgotten_body())])
        with pytest.raises(Exception) as raised:
            run(collect(transport, previous_response_id="resp_old"))
        assert raised.value.code == "conversation_forgotten"
    terse = {
        "error": {"message": "Previous response with id 'resp_x' not found.", "type": "invalid_request_error"}
    }
    with pytest.raises(Exception) as raised:
        run(collect(ScriptedTransport([error_response(400, terse)])))
    assert raised.value.code == "conversation_forgotten"


def test_other_http_errors_use_the_shared_codes():
    cases = [
        (
            401,
            {
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            "bad_key",
        ),
        (
            404,
            {
                "error": {
                    "message": "The model `x` does not exist",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
            "not_found",
        ),
        (
            429,
            {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
            "rate_limited",
        ),
        (500, {"error": {"message": "server error", "type": "server_error"}}, "provider_down"),
        (
            400,
            {
                "error": {
                    "message": "Invalid value for 'input'",
                    "type": "invalid_request_error",
                    "param": "input",
                }
            },
            "bad_request",
        ),
    ]
    for status, body, code in cases:
        with pytest.raises(Exception) as raised:
            run(collect(ScriptedTransport([error_response(status, body)])))
        assert raised.value.code == code, (status, body)


def test_a_context_overflow_is_a_context_overflow_error():
    body = {
        "error": {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    }
    with pytest.raises(ContextOverflowError):
        run(collect(ScriptedTransport([error_response(400, body)])))


# -- test connection and models -----------------------------------------------------------------


def test_test_connection_and_the_model_list():
    ok = ScriptedResponse(
        chunks=[json.dumps({"id": "resp_t", "object": "response", "status": "completed", "output": []})],
        headers={"content-type": "application/json"},
    )
    models = ScriptedResponse(
        chunks=[json.dumps({"object": "list", "data": [{"id": "gpt-4.1"}, {"id": "gpt-4.1-mini"}]})],
        headers={"content-type": "application/json"},
    )
    transport = ScriptedTransport([ok, models])
    platform = memory_platform({}, transport)
    verdict = run(responses.test_connection(platform, PROVIDER))
    assert verdict["ok"] is True
    assert transport.requests[0].url == "https://api.openai.com/v1/responses"
    assert body_of(transport.requests[0])["store"] is False
    assert run(responses.list_models(platform, PROVIDER)) == ["gpt-4.1", "gpt-4.1-mini"]
    assert transport.requests[1].method == "GET" and transport.requests[1].url.endswith("/v1/models")
    bad = ScriptedTransport([error_response(401, {"error": {"message": "Incorrect API key provided"}})])
    assert run(responses.test_connection(memory_platform({}, bad), PROVIDER))["ok"] is False
