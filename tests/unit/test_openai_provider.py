"""The OpenAI-compatible provider: exact requests, the stream, every error a user can meet."""

import json

import pytest
from helpers import run
from platform_memory import ScriptedResponse, ScriptedTransport, memory_platform

from margin.base.errors import MarginError, ProviderError
from margin.platform.ports import TransportError
from margin.providers import extract_error_message, normalize_provider, openai, provider_module
from margin.settings import options
from margin.storage.history import Record
from margin.storage.keys import UI_LANGUAGE

PROVIDER = {
    "id": "p1",
    "type": "openai",
    "name": "OpenAI",
    "baseUrl": "https://api.openai.com/v1/",
    "apiKey": "sk-test",
    "model": "gpt-4o-mini",
}
LOCAL = {
    "id": "p2",
    "type": "openai",
    "name": "Ollama",
    "baseUrl": "http://localhost:11434/v1",
    "apiKey": "",
    "model": "llama3.2",
}


def sse(*chunks):
    return "".join(f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks)


def delta(text, finish=None):
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


def stream_response(*items, **kwargs):
    return ScriptedResponse(chunks=[sse(*items)], **kwargs)


def error_response(status, body, headers=None):
    return ScriptedResponse(
        status=status, chunks=[body] if body else [], headers=headers or {"content-type": "application/json"}
    )


async def collect(transport, provider=PROVIDER, records=None):
    stream = await openai.open_stream(transport, provider, records or [Record("user", "Hi")])
    pieces = []
    while True:
        got = await stream.read()
        if got is None:
            return stream, pieces
        pieces.extend(got)


# -- requests ---------------------------------------------------------------------------------


def test_streaming_request_is_exact_compact_json_with_bearer_and_accept():
    records = [
        Record("system", "Be brief."),
        Record(
            "user",
            [
                {"type": "text", "text": "What is this? ✓"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,AAA"},
                    "meta": {"name": "cat.png"},
                },
            ],
            {"createdAt": 1, "imagesSeen": False},
        ),
        Record("assistant", "A cat.", {"model": "m", "stopped": True}),
    ]
    request = openai.build_chat_request(PROVIDER, records, stream=True, include_usage=True)
    assert request.method == "POST"
    assert request.url == "https://api.openai.com/v1/chat/completions"
    assert request.headers == {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Authorization": "Bearer sk-test",
    }
    assert request.body == (
        '{"model":"gpt-4o-mini","messages":['
        '{"role":"system","content":"Be brief."},'
        '{"role":"user","content":[{"type":"text","text":"What is this? ✓"},'
        '{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}}]},'
        '{"role":"assistant","content":"A cat."}],'
        '"stream":true,"stream_options":{"include_usage":true}}'
    )


def test_no_authorization_header_without_a_key_and_no_stream_options_when_not_asked():
    request = openai.build_chat_request(LOCAL, [Record("user", "Hi")], stream=True, include_usage=False)
    assert "Authorization" not in request.headers
    assert request.url == "http://localhost:11434/v1/chat/completions"
    assert json.loads(request.body) == {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
    }
    plain = openai.build_chat_request(LOCAL, [Record("user", "Hi")], stream=False, include_usage=True)
    assert "stream_options" not in json.loads(plain.body)
    assert "Accept" not in plain.headers


def test_text_only_parts_go_as_one_string_for_old_local_servers():
    record = Record("user", [{"type": "text", "text": "Look:"}, {"type": "text", "text": "[Figure 1: cat]"}])
    assert openai.wire_message(record) == {"role": "user", "content": "Look:\n[Figure 1: cat]"}


def test_request_prefix_stays_byte_identical_turn_to_turn():
    turn1 = [Record("user", "One"), Record("assistant", "Two")]
    turn2 = [*turn1, Record("user", "Three")]
    body1 = openai.build_chat_request(PROVIDER, turn1, stream=True).body
    body2 = openai.build_chat_request(PROVIDER, turn2, stream=True).body
    prefix = body1[
        : body1.index('{"role":"assistant","content":"Two"}') + len('{"role":"assistant","content":"Two"}')
    ]
    assert body2.startswith(prefix)


# -- the stream -------------------------------------------------------------------------------


def test_stream_yields_pieces_in_order_and_captures_usage_and_finish_reason():
    transport = ScriptedTransport(
        [
            stream_response(
                delta("Hel"),
                delta("lo"),
                delta("", "stop"),
                {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}},
                "[DONE]",
            )
        ]
    )
    stream, pieces = run(collect(transport))
    assert pieces == ["Hel", "lo"]
    assert stream.finish_reason == "stop"
    assert stream.usage == {"input": 5, "cachedInput": 0, "output": 2}
    assert stream.text == "Hello"


def test_events_after_done_are_ignored():
    transport = ScriptedTransport([ScriptedResponse(chunks=[sse(delta("a"), "[DONE]", delta("zzz"))])])
    _, pieces = run(collect(transport))
    assert pieces == ["a"]


def test_a_stream_with_finish_reason_but_no_done_is_complete():
    transport = ScriptedTransport([stream_response(delta("ok", "stop"))])
    _, pieces = run(collect(transport))
    assert pieces == ["ok"]


def test_a_stream_that_ends_with_neither_done_nor_finish_reason_is_cut_and_keeps_the_partial():
    transport = ScriptedTransport([stream_response(delta("Half an "), delta("answer"))])
    with pytest.raises(ProviderError) as caught:
        run(collect(transport))
    assert caught.value.code == "stream_cut"
    assert caught.value.partial_text == "Half an answer"


def test_a_data_line_that_is_not_json_is_a_bad_stream():
    transport = ScriptedTransport([ScriptedResponse(chunks=["data: <html>Gateway</html>\n\n"])])
    with pytest.raises(ProviderError) as caught:
        run(collect(transport))
    assert caught.value.code == "bad_stream"
    assert "“<html>Gateway</html>”" in caught.value.message


def test_an_error_object_in_the_stream_is_a_provider_error_with_its_message():
    transport = ScriptedTransport([stream_response(delta("a"), {"error": {"message": "Model overloaded"}})])
    with pytest.raises(ProviderError) as caught:
        run(collect(transport))
    assert caught.value.code == "provider_error"
    assert "Model overloaded" in caught.value.message


def test_a_200_that_is_not_an_event_stream_is_a_bad_stream():
    transport = ScriptedTransport(
        [
            ScriptedResponse(
                chunks=['{"choices":[{"message":{"content":"hi"}}]}'],
                headers={"content-type": "application/json"},
            )
        ]
    )
    with pytest.raises(ProviderError) as caught:
        run(collect(transport))
    assert caught.value.code == "bad_stream"
    assert "/v1" in caught.value.message


def test_a_timeout_mid_body_is_a_timeout_error():
    transport = ScriptedTransport(
        [ScriptedResponse(chunks=[sse(delta("a"))], fail_at=1, fail_kind="timeout")]
    )
    with pytest.raises(ProviderError) as caught:
        run(collect(transport))
    assert caught.value.code == "timeout"


def test_a_connection_dying_mid_body_is_a_cut_stream_not_unreachable():
    transport = ScriptedTransport(
        [ScriptedResponse(chunks=[sse(delta("The answer"))], fail_at=1, fail_kind="broken")]
    )
    with pytest.raises(ProviderError) as caught:
        run(collect(transport))
    assert caught.value.code == "stream_cut"
    assert "broke before the answer was finished" in caught.value.message
    assert caught.value.partial_text == "The answer"


# -- errors ------------------------------------------------------------------------------------


def open_error(response_or_error, provider=PROVIDER):
    transport = ScriptedTransport([response_or_error])
    with pytest.raises(ProviderError) as caught:
        run(collect(transport, provider))
    return caught.value


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_key(status):
    error = open_error(error_response(status, '{"error":{"message":"Incorrect API key provided"}}'))
    assert error.code == "bad_key"
    assert error.message.startswith(
        f"The provider rejected the API key ({status}). Check the key in Margin's options."
    )


def test_not_found_names_the_model_and_the_url():
    error = open_error(
        error_response(404, '{"error":"model \\"llama9\\" not found, try pulling it first"}'),
        {**LOCAL, "model": "llama9"},
    )
    assert error.code == "not_found"
    assert "“llama9”" in error.message and "http://localhost:11434/v1" in error.message
    assert "try pulling it first" in error.message  # Ollama's own words


def test_rate_limited_mentions_retry_after():
    error = open_error(error_response(429, "", {"Retry-After": "12"}))
    assert error.code == "rate_limited"
    assert "Wait 12 seconds" in error.message
    error = open_error(error_response(429, '{"error":{"message":"You exceeded your current quota"}}'))
    assert "Wait a little" in error.message and "exceeded your current quota" in error.message


def test_bad_request_quotes_the_provider_and_truncates_long_text():
    error = open_error(
        error_response(400, json.dumps({"error": {"message": "context too long " + "x" * 500}}))
    )
    assert error.code == "bad_request"
    assert "context too long" in error.message
    quoted = error.message[error.message.index("“") : error.message.index("”") + 1]
    assert len(quoted) <= 202


@pytest.mark.parametrize(
    "status, body",
    [
        (
            400,
            '{"error":{"message":"This model\'s maximum context length is 128000 tokens. However, your messages '
            'resulted in 131000 tokens. Please reduce the length of the messages.","type":"invalid_request_error",'
            '"param":"messages","code":"context_length_exceeded"}}',
        ),
        (413, ""),
    ],
)
def test_a_context_overflow_names_the_model_and_what_to_do(status, body):
    error = open_error(error_response(status, body))
    assert error.code == "context_overflow"
    assert error.message == (
        "This conversation is too long for gpt-4o-mini. Start a new session, or choose a model with a larger "
        "context."
    )
    assert status == 413 or (error.overflow.limit_tokens, error.overflow.requested_tokens) == (128000, 131000)


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_failures_are_provider_down(status):
    error = open_error(error_response(status, "<html>Bad gateway</html>", {"content-type": "text/html"}))
    assert error.code == "provider_down"
    assert "api.openai.com" in error.message and "<html>" not in error.message


def test_unreachable_names_the_host_and_suggests_the_server():
    error = open_error(TransportError("connect", "Failed to fetch"), LOCAL)
    assert error.code == "unreachable"
    assert "localhost:11434" in error.message and "ollama serve" in error.message


def test_timeout_before_headers():
    assert open_error(TransportError("timeout")).code == "timeout"


def test_aborted_is_reported_as_aborted_not_a_failure_code():
    assert open_error(TransportError("aborted")).code == "aborted"


@pytest.mark.parametrize(
    "body, message",
    [
        ('{"error":{"message":"OpenAI says no","type":"invalid_request_error"}}', "OpenAI says no"),
        ('{"error":"Ollama says no"}', "Ollama says no"),
        (
            '{"error":{"code":400,"message":"llama.cpp says no","type":"invalid_request_error"}}',
            "llama.cpp says no",
        ),
        ('{"object":"error","message":"vLLM says no","code":400}', "vLLM says no"),
        ('[{"error":{"code":400,"message":"Gemini says no"}}]', "Gemini says no"),
        ("plain words", "plain words"),
        ("<html><body>nginx</body></html>", None),
        ("", None),
    ],
)
def test_error_messages_are_extracted_from_every_usual_shape(body, message):
    assert extract_error_message(body) == message


# -- include_usage fallback ----------------------------------------------------------------------


def test_a_400_about_stream_options_is_retried_once_without_it_and_reported():
    transport = ScriptedTransport(
        [
            error_response(
                400, '{"error":{"message":"Unrecognized request argument supplied: stream_options"}}'
            ),
            stream_response(delta("ok", "stop"), "[DONE]"),
        ]
    )
    stream, pieces = run(collect(transport))
    assert pieces == ["ok"]
    assert stream.usage_unsupported is True
    first, second = transport.json_bodies()
    assert first["stream_options"] == {"include_usage": True}
    assert "stream_options" not in second


def test_a_provider_known_not_to_support_usage_is_not_asked():
    transport = ScriptedTransport([stream_response(delta("ok", "stop"))])
    stream, _ = run(collect(transport, {**LOCAL, "supportsUsage": False}))
    assert "stream_options" not in transport.json_bodies()[0]
    assert stream.usage_unsupported is False


def test_any_other_400_is_not_retried():
    transport = ScriptedTransport([error_response(400, '{"error":{"message":"bad model"}}')])
    with pytest.raises(ProviderError):
        run(collect(transport))
    assert len(transport.requests) == 1


# -- test_connection ---------------------------------------------------------------------------

OK_ANSWER = '{"choices":[{"index":0,"message":{"role":"assistant","content":"OK"},"finish_reason":"length"}]}'


def connection(*responses, provider=PROVIDER):
    transport = ScriptedTransport(list(responses))
    result = run(openai.test_connection(memory_platform(transport=transport), normalize_provider(provider)))
    return result, transport


def test_connection_success_sentence_and_minimal_non_streaming_request():
    result, transport = connection(error_response(200, OK_ANSWER))
    assert result == {"ok": True, "message": "Connected to api.openai.com: model gpt-4o-mini answered."}
    assert transport.json_bodies() == [
        {
            "model": "gpt-4o-mini",
            "stream": False,
            "max_tokens": 1,
            "messages": [{"role": "user", "content": "Reply with OK."}],
        }
    ]


def test_connection_retries_once_without_max_tokens_when_the_model_refuses_it():
    refusal = (
        '{"error":{"message":"Unsupported parameter: \'max_tokens\' is not supported with this model. '
        "Use 'max_completion_tokens' instead.\"}}"
    )
    result, transport = connection(error_response(400, refusal), error_response(200, OK_ANSWER))
    assert result["ok"] is True
    assert "max_tokens" not in transport.json_bodies()[1]


def test_connection_failures_are_the_mapped_sentences():
    result, _ = connection(error_response(401, '{"error":{"message":"Incorrect API key"}}'))
    assert result["ok"] is False
    assert result["message"].startswith("The provider rejected the API key (401).")
    result, _ = connection(TransportError("connect"), provider=LOCAL)
    assert result["ok"] is False and "localhost:11434" in result["message"]


def test_connection_to_something_that_is_not_an_openai_api():
    result, _ = connection(
        ScriptedResponse(chunks=["<html>welcome</html>"], headers={"content-type": "text/html"})
    )
    assert result["ok"] is False and "/v1" in result["message"]


# -- provider configs ----------------------------------------------------------------------------


def test_normalize_provider_cleans_and_fills():
    clean = normalize_provider(
        {
            "type": "openai",
            "baseUrl": " http://localhost:1234/v1/chat/completions ",
            "model": " qwen ",
            "apiKey": " sk-x\n",
            "junk": 1,
        }
    )
    assert clean["baseUrl"] == "http://localhost:1234/v1"
    assert clean["model"] == "qwen" and clean["apiKey"] == "sk-x"
    assert clean["name"] == "qwen at localhost" and clean["id"]
    assert "junk" not in clean


@pytest.mark.parametrize(
    "change, field",
    [
        ({"baseUrl": "ftp://x"}, "Base URL"),
        ({"baseUrl": "localhost:11434"}, "Base URL"),
        ({"baseUrl": ""}, "Base URL"),
        ({"model": "  "}, "Model"),
        ({"type": "carrier-pigeon"}, "type"),
        ({"apiKey": 42}, "API key"),
    ],
)
def test_normalize_provider_names_the_bad_field(change, field):
    with pytest.raises(MarginError) as caught:
        normalize_provider({**PROVIDER, **change})
    assert caught.value.code == "invalid_options"
    assert field in caught.value.message


def test_provider_module_finds_openai_and_refuses_unknown_types():
    assert provider_module("openai") is openai
    with pytest.raises(MarginError):
        provider_module("nope")


# -- the system prompt and the model list -------------------------------------------------------


def test_normalize_keeps_a_trimmed_system_prompt_and_drops_an_empty_one():
    assert normalize_provider({**PROVIDER, "systemPrompt": "  Be brief.\n"})["systemPrompt"] == "Be brief."
    assert "systemPrompt" not in normalize_provider({**PROVIDER, "systemPrompt": "   "})
    assert "systemPrompt" not in normalize_provider({**PROVIDER, "systemPrompt": None})


@pytest.mark.parametrize("bad", [42, ["a"], {"text": "x"}, "x" * 20_001])
def test_normalize_names_a_bad_system_prompt(bad):
    with pytest.raises(MarginError) as caught:
        normalize_provider({**PROVIDER, "systemPrompt": bad})
    assert caught.value.code == "invalid_options"
    assert "System prompt" in caught.value.message


def test_a_system_prompt_of_exactly_the_limit_is_accepted():
    assert len(normalize_provider({**PROVIDER, "systemPrompt": "y" * 20_000})["systemPrompt"]) == 20_000


def test_the_system_prompt_is_the_leading_system_message():
    provider = normalize_provider({**PROVIDER, "systemPrompt": "Answer in French."})
    request = openai.build_chat_request(provider, [Record("user", "Hi")], stream=True)
    messages = json.loads(request.body)["messages"]
    assert messages == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hi"},
    ]


def test_no_system_prompt_sends_no_system_message():
    request = openai.build_chat_request(normalize_provider(PROVIDER), [Record("user", "Hi")], stream=True)
    assert [m["role"] for m in json.loads(request.body)["messages"]] == ["user"]


def models_response(*ids, status=200):
    body = {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}
    return ScriptedResponse(
        status=status, chunks=[json.dumps(body)], headers={"content-type": "application/json"}
    )


def test_list_models_gets_the_models_route_and_reads_data_ids():
    transport = ScriptedTransport([models_response("gpt-4o", "gpt-4o-mini", "gpt-4o")])
    ids = run(openai.list_models(memory_platform(transport=transport), normalize_provider(PROVIDER)))
    assert ids == ["gpt-4o", "gpt-4o-mini"]
    (request,) = transport.requests
    assert request.method == "GET"
    assert request.url == "https://api.openai.com/v1/models"
    assert request.headers.get("Authorization") == "Bearer sk-test"
    assert request.body is None


def test_list_models_from_a_local_server_sends_no_key():
    transport = ScriptedTransport([models_response("llama3.2:latest")])
    ids = run(openai.list_models(memory_platform(transport=transport), normalize_provider(LOCAL)))
    assert ids == ["llama3.2:latest"]
    assert "Authorization" not in transport.requests[0].headers
    assert transport.requests[0].url == "http://localhost:11434/v1/models"


def test_list_models_with_a_bad_key_is_the_bad_key_error():
    body = json.dumps({"error": {"message": "Incorrect API key provided"}})
    transport = ScriptedTransport([ScriptedResponse(status=401, chunks=[body], headers={})])
    with pytest.raises(ProviderError) as caught:
        run(openai.list_models(memory_platform(transport=transport), normalize_provider(PROVIDER)))
    assert caught.value.code == "bad_key"


def test_list_models_that_is_not_a_list_says_so():
    transport = ScriptedTransport([ScriptedResponse(chunks=["<html>hi</html>"], headers={})])
    with pytest.raises(ProviderError) as caught:
        run(openai.list_models(memory_platform(transport=transport), normalize_provider(PROVIDER)))
    assert caught.value.code == "bad_models"
    assert "model" in caught.value.message


def test_stream_usage_is_normalized_with_the_cached_prompt_tokens():
    usage = {
        "prompt_tokens": 1234,
        "completion_tokens": 56,
        "total_tokens": 1290,
        "prompt_tokens_details": {"cached_tokens": 1000},
    }
    transport = ScriptedTransport(
        [stream_response(delta("Hi", "stop"), {"choices": [], "usage": usage}, "[DONE]")]
    )
    stream, _ = run(collect(transport))
    assert stream.usage == {"input": 1234, "cachedInput": 1000, "output": 56}


def test_a_stream_without_a_usage_chunk_has_no_usage():
    stream, _ = run(collect(ScriptedTransport([stream_response(delta("Hi", "stop"), "[DONE]")])))
    assert stream.usage is None


@pytest.mark.parametrize(
    ("language", "name"),
    [
        ("en", "qwen at localhost"),
        ("ja", "localhostのqwen"),
        ("ru", "qwen на localhost"),
        ("es", "qwen en localhost"),
    ],
)
def test_a_provider_saved_without_a_name_is_named_in_the_users_language(language, name):
    platform = memory_platform({UI_LANGUAGE: language})
    provider = {"id": "p", "type": "openai", "baseUrl": "http://localhost:1234/v1", "model": "qwen"}
    saved = run(options.handle_save(platform, {"providers": [provider], "activeProviderId": "p"}))
    assert saved["providers"][0]["name"] == name
