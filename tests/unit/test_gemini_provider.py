"""The Google Gemini provider: exact requests, the SSE stream at every byte split, real error bodies."""

import json
from pathlib import Path

import pytest
from helpers import run
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.base.errors import ProviderError
from margin.base.sse import SSEDecoder
from margin.providers import gemini, normalize_provider, provider_module
from margin.providers.overflow import ContextOverflowError
from margin.storage.history import Record

TRANSCRIPTS = Path(__file__).parent / "transcripts" / "gemini"
PROVIDER = {
    "id": "g1",
    "type": "gemini",
    "name": "Gemini",
    "baseUrl": "https://generativelanguage.googleapis.com/v1beta/",
    "apiKey": "AIza-test",
    "model": "gemini-2.0-flash",
}
STREAM_URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
)


def transcript(name: str) -> str:
    return (TRANSCRIPTS / name).read_text(encoding="utf-8")


def event(value) -> str:
    return f"data: {json.dumps(value)}\r\n\r\n"


def chunk(text, finish=None, usage=None):
    candidate = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    value = {"candidates": [candidate]}
    if usage:
        value["usageMetadata"] = usage
    return value


def error_response(status, body):
    return ScriptedResponse(
        status=status, chunks=[json.dumps(body)], headers={"content-type": "application/json"}
    )


async def collect(transport, provider=PROVIDER, records=None):
    stream = await gemini.open_stream(transport, provider, records or [Record("user", "Hi")])
    pieces = []
    while True:
        got = await stream.read()
        if got is None:
            return stream, pieces
        pieces.extend(got)


def streamed(*chunks_, provider=PROVIDER):
    return run(collect(ScriptedTransport([ScriptedResponse(chunks=list(chunks_))]), provider))


def failure(*chunks_) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        streamed(*chunks_)
    return caught.value


# -- requests ---------------------------------------------------------------------------------


def test_the_turn_is_stream_generate_content_over_sse_with_the_key_only_in_a_header():
    request = gemini.build_chat_request(PROVIDER, [Record("user", "Hi")], stream=True, include_usage=True)
    assert request.method == "POST"
    assert request.url == STREAM_URL
    assert "AIza-test" not in request.url and "key=" not in request.url
    assert request.headers == {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "x-goog-api-key": "AIza-test",
    }
    assert request.body == '{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}'


def test_images_go_as_inline_data_and_roles_are_user_and_model_merged_when_consecutive():
    records = [
        Record("user", "[Attached page: Cats]\nCats purr.", {"attachment": {"url": "https://x"}}),
        Record(
            "user",
            [
                {"type": "text", "text": "What is this? ✓"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}, "meta": {"n": 1}},
            ],
            {"createdAt": 1},
        ),
        Record("assistant", "A cat.", {"model": "m", "usage": {"prompt_tokens": 3}}),
        Record("assistant", ""),
        Record("user", [{"type": "text", "text": ""}]),
        Record("user", "And this?"),
    ]
    body = json.loads(gemini.build_chat_request(PROVIDER, records, stream=True).body)
    assert body == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "[Attached page: Cats]\nCats purr."},
                    {"text": "What is this? ✓"},
                    {"inline_data": {"mime_type": "image/png", "data": "AAA"}},
                ],
            },
            {"role": "model", "parts": [{"text": "A cat."}]},
            {"role": "user", "parts": [{"text": "And this?"}]},
        ]
    }


def test_the_system_prompt_and_system_records_become_the_system_instruction():
    provider = {**PROVIDER, "systemPrompt": "Answer in French."}
    records = [Record("system", "Summarize."), Record("user", "Text")]
    body = json.loads(gemini.build_chat_request(provider, records, stream=True).body)
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "Text"}]}],
        "systemInstruction": {"parts": [{"text": "Answer in French."}, {"text": "Summarize."}]},
    }
    empty = json.loads(
        gemini.build_chat_request({**PROVIDER, "systemPrompt": "  "}, records[1:], stream=True).body
    )
    assert "systemInstruction" not in empty


def test_no_key_no_key_header_and_the_request_prefix_stays_byte_identical():
    request = gemini.build_chat_request({**PROVIDER, "apiKey": ""}, [Record("user", "Hi")], stream=False)
    assert "x-goog-api-key" not in request.headers
    assert request.url.endswith("/models/gemini-2.0-flash:generateContent")
    turn1 = [Record("user", "One"), Record("assistant", "Two")]
    body1 = gemini.build_chat_request(PROVIDER, turn1, stream=True).body
    body2 = gemini.build_chat_request(PROVIDER, [*turn1, Record("user", "Three")], stream=True).body
    assert body2.startswith(body1[: -len("]}")])


def test_the_provider_type_is_registered_and_normalized():
    assert provider_module("gemini") is gemini
    clean = normalize_provider({**PROVIDER, "baseUrl": " https://generativelanguage.googleapis.com/v1beta/ "})
    assert clean["type"] == "gemini"
    assert clean["baseUrl"] == gemini.DEFAULT_BASE_URL


# -- the stream -------------------------------------------------------------------------------


def test_a_recorded_stream_parses_the_same_split_at_every_byte():
    body = json.loads(transcript("stream_ok.json"))["body"]
    data = body.encode()
    for cut in range(len(data) + 1):
        # Split on bytes, as the wire does; the transport decodes UTF-8 incrementally.
        head = data[:cut].decode("utf-8", errors="ignore")
        tail = body[len(head) :]
        stream, pieces = streamed(*(c for c in (head, tail) if c))
        assert "".join(pieces) == "Bonjour ! Comment ça va ? ✓", cut
        assert stream.finish_reason == "STOP"
        assert stream.usage == {"input": 12, "cachedInput": 4, "output": 9}


def test_the_decoder_sees_the_same_events_for_every_split_of_the_transcript():
    body = json.loads(transcript("stream_ok.json"))["body"]
    whole = SSEDecoder().feed(body)
    for cut in range(len(body) + 1):
        decoder = SSEDecoder()
        assert decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.close() == whole


def test_thought_parts_are_not_answer_text_and_thinking_counts_as_output():
    thought = {
        "candidates": [{"content": {"parts": [{"text": "Let me think", "thought": True}], "role": "model"}}]
    }
    usage = {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 7, "totalTokenCount": 14}
    stream, pieces = streamed(event(thought) + event(chunk("Yes.", "STOP", usage)))
    assert pieces == ["Yes."]
    assert stream.usage == {"input": 5, "cachedInput": 0, "output": 9}


def test_max_tokens_is_an_honest_end():
    stream, pieces = streamed(event(chunk("Long", "MAX_TOKENS")))
    assert pieces == ["Long"] and stream.finish_reason == "MAX_TOKENS"


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
def test_a_withheld_answer_is_refused_content_and_keeps_what_came_before(reason):
    error = failure(event(chunk("Here is ")) + event(chunk("", reason)))
    assert error.code == "content_refused"
    assert reason in error.message and "Rephrase" in error.message
    assert error.partial_text == "Here is "


def test_a_blocked_prompt_is_refused_content():
    blocked = {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []}, "usageMetadata": {}}
    error = failure(event(blocked))
    assert error.code == "content_refused" and "SAFETY" in error.message


def test_a_stream_without_a_finish_reason_was_cut_and_keeps_the_partial_text():
    error = failure(event(chunk("Half an ")), event(chunk("answer")))
    assert error.code == "stream_cut"
    assert error.partial_text == "Half an answer"


def test_an_error_object_mid_stream_is_mapped_and_keeps_the_partial_text():
    overloaded = {
        "error": {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    }
    error = failure(event(chunk("Par")) + event(overloaded))
    assert error.code == "provider_down"
    assert "overloaded" in error.message
    assert error.partial_text == "Par"


def test_a_data_line_that_is_not_json_is_a_bad_stream():
    assert failure("data: {not json\r\n\r\n").code == "bad_stream"


def test_a_200_json_error_instead_of_a_stream_is_mapped():
    body = json.dumps(
        [{"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}]
    )
    response = ScriptedResponse(chunks=[body], headers={"content-type": "application/json"})
    with pytest.raises(ProviderError) as caught:
        run(collect(ScriptedTransport([response])))
    assert caught.value.code == "rate_limited"


# -- errors, from real error bodies ------------------------------------------------------------


def open_error(name: str) -> ProviderError:
    recorded = json.loads(transcript(name))
    transport = ScriptedTransport([error_response(recorded["status"], recorded["body"])])
    with pytest.raises(ProviderError) as caught:
        run(collect(transport))
    return caught.value


def test_an_invalid_key_is_bad_key_even_though_google_says_400():
    error = open_error("error_api_key_invalid.json")
    assert error.code == "bad_key"
    assert "API key" in error.message and "options" in error.message
    assert "API key not valid" in error.message


def test_permission_denied_is_bad_key():
    assert open_error("error_permission_denied.json").code == "bad_key"


def test_an_unknown_model_is_not_found_and_names_it():
    error = open_error("error_model_not_found.json")
    assert error.code == "not_found"
    assert "gemini-2.0-flash" in error.message


def test_a_rate_limit_says_how_long_to_wait_from_retry_info():
    error = open_error("error_resource_exhausted.json")
    assert error.code == "rate_limited"
    assert "Wait 38 seconds" in error.message


@pytest.mark.parametrize("name", ["error_internal.json", "error_unavailable.json"])
def test_server_failures_are_provider_down(name):
    assert open_error(name).code == "provider_down"


def test_the_token_count_message_is_a_context_overflow_with_its_numbers():
    error = open_error("error_token_count.json")
    assert isinstance(error, ContextOverflowError)
    assert error.code == "context_overflow"
    assert error.overflow.requested_tokens == 1_200_000
    assert error.overflow.limit_tokens == 1_048_576


def test_any_other_400_is_a_bad_request_quoting_google():
    error = open_error("error_invalid_argument.json")
    assert error.code == "bad_request"
    assert "User location is not supported" in error.message


# -- Test connection and the model list -------------------------------------------------------


def connection(*responses, provider=PROVIDER):
    platform = memory_platform(transport=ScriptedTransport(list(responses)))
    return run(gemini.test_connection(platform, provider)), platform.transport


def test_connection_is_one_tiny_generate_content_with_the_key_in_a_header():
    answer = json.dumps(chunk("OK", "STOP"))
    result, transport = connection(
        ScriptedResponse(chunks=[answer], headers={"content-type": "application/json"})
    )
    assert result == {
        "ok": True,
        "message": "Connected to generativelanguage.googleapis.com: model gemini-2.0-flash answered.",
    }
    (request,) = transport.requests
    assert request.url.endswith("/v1beta/models/gemini-2.0-flash:generateContent")
    assert request.headers["x-goog-api-key"] == "AIza-test"
    assert json.loads(request.body) == {
        "contents": [{"role": "user", "parts": [{"text": "Reply with OK."}]}],
        "generationConfig": {"maxOutputTokens": 1},
    }


def test_connection_failures_are_the_mapped_sentences():
    bad_key = json.loads(transcript("error_api_key_invalid.json"))
    result, _ = connection(error_response(400, bad_key["body"]))
    assert result["ok"] is False and "rejected the API key" in result["message"]
    result, _ = connection(
        ScriptedResponse(chunks=["<html>hi</html>"], headers={"content-type": "text/html"})
    )
    assert result["ok"] is False and "not like the Gemini API" in result["message"]


def test_list_models_follows_pages_keeps_chat_models_and_drops_the_prefix():
    page1 = {
        "models": [
            {
                "name": "models/gemini-2.0-flash",
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            },
            {"name": "models/text-embedding-004", "supportedGenerationMethods": ["embedContent"]},
        ],
        "nextPageToken": "next-1",
    }
    page2 = {"models": [{"name": "models/gemini-2.5-pro", "supportedGenerationMethods": ["generateContent"]}]}
    transport = ScriptedTransport(
        [
            ScriptedResponse(chunks=[json.dumps(p)], headers={"content-type": "application/json"})
            for p in (page1, page2)
        ]
    )
    models = run(gemini.list_models(memory_platform(transport=transport), PROVIDER))
    assert models == ["gemini-2.0-flash", "gemini-2.5-pro"]
    first, second = transport.requests
    assert first.method == "GET"
    assert first.url == "https://generativelanguage.googleapis.com/v1beta/models?pageSize=1000"
    assert second.url.endswith("&pageToken=next-1")
    assert all(r.headers["x-goog-api-key"] == "AIza-test" and "AIza" not in r.url for r in transport.requests)


def test_list_models_with_a_bad_key_is_the_bad_key_error():
    bad_key = json.loads(transcript("error_api_key_invalid.json"))
    transport = ScriptedTransport([error_response(400, bad_key["body"])])
    with pytest.raises(ProviderError) as caught:
        run(gemini.list_models(memory_platform(transport=transport), PROVIDER))
    assert caught.value.code == "bad_key"
