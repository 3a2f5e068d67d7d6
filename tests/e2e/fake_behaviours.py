"""What the fake providers can be scripted to do (tests/e2e/fake_provider.py rules 2, 3 and 6):
error bodies as OpenAI sends them, the behaviours a request can take (a reply, an HTTP error,
garbage, a cut stream, a hang, a tool call), and the context window. fake_provider re-exports
every name, so tests import them from there.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import fake_tool_calls

# --- Provider error bodies, as OpenAI sends them --------------------------------------------

BAD_KEY_BODY = {
    "error": {
        "message": "Incorrect API key provided: sk-wr***ong. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}


def model_not_found_body(model: str) -> dict[str, Any]:
    return {
        "error": {
            "message": f"The model `{model}` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }


RATE_LIMIT_BODY = {
    "error": {
        "message": "Rate limit reached for fake-model in organization org-fake on requests per min "
        "(RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}

SERVER_ERROR_BODY = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}


# Tokens are counted the way providers estimate them for English: about four characters each.
CHARS_PER_TOKEN = 4


def context_overflow_body(limit_tokens: int, requested_tokens: int) -> dict[str, Any]:
    """OpenAI's answer to a request longer than the model's context window."""
    return {
        "error": {
            "message": f"This model's maximum context length is {limit_tokens} tokens. However, your "
            f"messages resulted in {requested_tokens} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


# A summarization request says what it asks for; a turn never does (rule 7). margin.page.summaries'
# instruction says "You compress a web page ... Write a summary of about N characters"; adapt
# here if it is worded differently.
SUMMARY_MARKER = re.compile(
    r"\bcompress (?:a|the|this) (?:web )?page\b|\bwrite a summary\b|\bsummari[sz](?:e|ing)\b",
    re.IGNORECASE,
)

# What an unscripted summarization request gets (it must not match SUMMARY_MARKER itself: it is
# sent to the model in later turns).
DEFAULT_SUMMARY = (
    "In short: the page explains its topic in three steps, with one example for each, and ends "
    "with a list of open questions."
)


# --- Behaviours ---------------------------------------------------------------------------


@dataclass
class Reply:
    """A normal answer: streamed in `chunks` pieces `delay` seconds apart, or one JSON body."""

    text: str
    chunks: int = 4
    delay: float = 0.0
    # The delay before the first chunk (after the role chunk and the headers).
    first_delay: float = 0.0
    applies_to_models: bool = False


@dataclass
class HttpError:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    applies_to_models: bool = True


@dataclass
class Garbage:
    """A 200 stream whose events are not JSON."""

    applies_to_models: bool = False


@dataclass
class Cut:
    """A stream that starts with `text` and is then cut: the connection closes without [DONE]
    and without the end of the chunked body."""

    text: str = "This answer is cut"
    chunks: int = 3
    applies_to_models: bool = False
    # Seconds between the text and the cut: Chromium drops body bytes it has not handed to the
    # reader when the connection breaks at once, so a client that should see the text needs this.
    pause: float = 0.0


@dataclass
class Hang:
    """Never send headers; close the connection after at most `seconds`."""

    seconds: float = 10.0
    applies_to_models: bool = True


def slow_stream(chunks: int = 60, delay: float = 0.1, word: str = "word") -> Reply:
    """A long answer, `chunks` pieces `delay` apart (for Stop tests): "word1 word2 ..."."""
    pieces = [f"{word}{i} " for i in range(1, chunks + 1)]
    return Reply("".join(pieces), chunks=chunks, delay=delay)


def slow_summary(chunks: int = 40, delay: float = 0.15) -> Reply:
    """A summary streamed in many small pieces `delay` apart (for progress and Cancel tests):
    "Point 1 of the page. Point 2 of the page. ..."."""
    pieces = [f"Point {i} of the page. " for i in range(1, chunks + 1)]
    return Reply("".join(pieces).strip(), chunks=chunks, delay=delay)


def context_overflow(limit_tokens: int = 8192, requested_tokens: int = 12000) -> HttpError:
    """One scripted overflow with fixed numbers (`limit_context` derives them from the body)."""
    return HttpError(400, context_overflow_body(limit_tokens, requested_tokens))


def bad_key() -> HttpError:
    return HttpError(401, BAD_KEY_BODY)


def model_not_found(model: str = "fake-model") -> HttpError:
    return HttpError(404, model_not_found_body(model))


def rate_limited(retry_after: int = 20) -> HttpError:
    return HttpError(429, RATE_LIMIT_BODY, {"Retry-After": str(retry_after)})


def server_error() -> HttpError:
    return HttpError(500, SERVER_ERROR_BODY)


Behaviour = Reply | HttpError | Garbage | Cut | Hang | fake_tool_calls.ToolCall


@dataclass(frozen=True)
class ContextLimit:
    """Rule 6: the model's context window, in bytes of request body."""

    max_chars: int
    always: bool = False

    @property
    def limit_tokens(self) -> int:
        return self.max_chars // CHARS_PER_TOKEN

    def overflows(self, size: int) -> bool:
        return self.always or size > self.max_chars

    def requested_tokens(self, size: int) -> int:
        return max(math.ceil(size / CHARS_PER_TOKEN), self.limit_tokens + 1)
