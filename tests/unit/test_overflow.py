"""Telling a context overflow from any other refusal, in each provider's own words, with its numbers."""

import json

import pytest
from helpers import run
from platform_memory import ScriptedResponse, ScriptedTransport

from margin.providers import http_error, openai
from margin.providers.overflow import ContextOverflowError, Overflow, context_overflow

PROVIDER = {
    "id": "p",
    "type": "openai",
    "baseUrl": "http://localhost:8080/v1",
    "apiKey": "",
    "model": "qwen3",
}


def body(value):
    return json.dumps(value)


# Real-shaped bodies, as the providers send them (from their public issue trackers).
OPENAI = body(
    {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted "
            "in 9123 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)
OPENAI_NEWER = body(
    {
        "error": {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    }
)
OPENAI_COMPLETION_RESERVED = body(
    {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. However, you requested 4130 tokens "
            "(3130 in the messages, 1000 in the completion). Please reduce the length of the messages or "
            "completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)
OPENROUTER = body(
    {
        "error": {
            "message": "This endpoint's maximum context length is 32768 tokens. However, you requested about "
            '42832 tokens (42832 of text input). Please reduce the length of either one, or use the "middle-out" '
            "transform to compress your prompt automatically.",
            "code": 400,
        }
    }
)
ANTHROPIC = body(
    {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
        "request_id": "req_011CWdepJvA2D819tdYYq4h7",
    }
)
GEMINI = body(
    [
        {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                "errors": [
                    {
                        "message": "The input token count (1200000) exceeds the maximum number of tokens allowed "
                        "(1048576).",
                        "domain": "global",
                        "reason": "badRequest",
                    }
                ],
                "status": "INVALID_ARGUMENT",
            }
        }
    ]
)
LLAMA_CPP = body(
    {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 14429,
            "n_ctx": 8192,
        }
    }
)
LLAMA_CPP_OLDER = body(
    {
        "error": {
            "code": 500,
            "message": "input is too large to process. increase the physical batch size",
            "type": "server_error",
        }
    }
)
OLLAMA = body({"error": "prompt too long; exceeded max context length by 4021 tokens"})
OLLAMA_LENGTH = body({"error": "the input length exceeds the context length"})
LM_STUDIO = body(
    {
        "error": "Trying to keep the first 111490 tokens when context the overflows. However, the model is loaded "
        "with context length of only 32768 tokens, which is not enough. Try to load the model with a larger "
        "context length, or provide a shorter input"
    }
)
LM_STUDIO_KEEP = body(
    {
        "error": "The number of tokens to keep from the initial prompt is greater than the context length. Try to "
        "load the model with a larger context length, or provide a shorter input"
    }
)
VLLM = body(
    {
        "object": "error",
        "message": "This model's maximum context length is 8192 tokens. However, you requested 8203 tokens (7691 "
        "in the messages, 512 in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
)
VLLM_NEWER = body(
    {
        "error": {
            "message": "This model's maximum context length is 32768 tokens. However, your request has 40000 input "
            "tokens. Please reduce the length of the input messages.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    }
)


@pytest.mark.parametrize(
    "status, text, expected",
    [
        (400, OPENAI, Overflow(limit_tokens=8192, requested_tokens=9123)),
        (400, OPENAI_NEWER, Overflow()),
        (400, OPENAI_COMPLETION_RESERVED, Overflow(limit_tokens=4096, requested_tokens=4130)),
        (400, OPENROUTER, Overflow(limit_tokens=32768, requested_tokens=42832)),
        (400, ANTHROPIC, Overflow(limit_tokens=200000, requested_tokens=210000)),
        (400, GEMINI, Overflow(limit_tokens=1048576, requested_tokens=1200000)),
        (400, LLAMA_CPP, Overflow(limit_tokens=8192, requested_tokens=14429)),
        (500, LLAMA_CPP, Overflow(limit_tokens=8192, requested_tokens=14429)),  # its first releases said 500
        (500, LLAMA_CPP_OLDER, Overflow()),
        (400, OLLAMA, Overflow(stated_excess_tokens=4021)),
        (400, OLLAMA_LENGTH, Overflow()),
        (400, LM_STUDIO, Overflow(limit_tokens=32768, requested_tokens=111490)),
        (400, LM_STUDIO_KEEP, Overflow()),
        (400, VLLM, Overflow(limit_tokens=8192, requested_tokens=8203)),
        (400, VLLM_NEWER, Overflow(limit_tokens=32768, requested_tokens=40000)),
        (413, "<html><body>413 Request Entity Too Large</body></html>", Overflow()),
        (413, "", Overflow()),
    ],
)
def test_each_providers_overflow_is_recognised_with_its_numbers(status, text, expected):
    assert context_overflow(status, text) == expected


def test_the_excess_is_requested_minus_limit_or_what_the_provider_names():
    assert context_overflow(400, ANTHROPIC).excess_tokens == 10000
    assert context_overflow(400, OLLAMA).excess_tokens == 4021
    assert context_overflow(400, OPENAI_NEWER).excess_tokens is None


def test_only_the_code_is_enough():
    text = body({"error": {"code": "context_length_exceeded", "message": "too long"}})
    assert context_overflow(400, text) == Overflow()


@pytest.mark.parametrize(
    "status, text",
    [
        (400, body({"error": {"message": "context too long " + "x" * 50}})),  # vague: not cut for nothing
        (400, body({"error": {"message": "unknown field stream_options"}})),
        (500, body({"error": "out of memory"})),
        (
            429,
            body(
                {
                    "error": {
                        "message": "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, "
                        "Requested 41000.",
                        "code": "rate_limit_exceeded",
                    }
                }
            ),
        ),
        (401, OPENAI),  # a refused key is a refused key, whatever the words
        (200, OPENAI),
    ],
)
def test_other_refusals_are_not_overflows(status, text):
    assert context_overflow(status, text) is None


def test_numbers_that_do_not_describe_an_overflow_are_dropped():
    text = body(
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens and your request has "
                "100 input tokens."
            }
        }
    )
    assert context_overflow(400, text) == Overflow()


def test_http_error_is_a_context_overflow_error_with_the_numbers_and_a_sentence():
    error = http_error(400, OPENAI, {}, PROVIDER)
    assert isinstance(error, ContextOverflowError)
    assert error.code == "context_overflow"
    assert error.overflow == Overflow(limit_tokens=8192, requested_tokens=9123)
    assert error.message == (
        "This conversation is too long for qwen3. Start a new session, or choose a model with a larger context."
    )
    assert http_error(413, "", {}, PROVIDER).code == "context_overflow"


def test_an_overflow_at_the_start_of_a_200_stream_is_the_same_error():
    # Some llama.cpp builds answer 200 and send the refusal as the stream's first event.
    streamed = ScriptedResponse(chunks=[f"data: {LLAMA_CPP}\n\n"])
    transport = ScriptedTransport([streamed])

    async def go():
        stream = await openai.open_stream(transport, PROVIDER, [])
        await stream.read()

    with pytest.raises(ContextOverflowError) as raised:
        run(go())
    assert raised.value.overflow == Overflow(limit_tokens=8192, requested_tokens=14429)
