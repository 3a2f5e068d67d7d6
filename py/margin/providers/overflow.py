"""Context overflow: telling, from a provider's error, that the request was too long for the model.

Sans-IO: an HTTP status and a body in, an `Overflow` (with the numbers the provider gave) or None
out. `margin.providers.http_error` turns one into a `ContextOverflowError`; `margin.turn.rescue` uses
its numbers to decide how much of the attached pages to cut (docs/storage-model.md,
"Request-side slimming").

Rules:
1. Only the providers' own ways of saying it count (each one is a unit test with a real-shaped
   body): OpenAI's `code: "context_length_exceeded"` and its "maximum context length is N tokens.
   However, your messages resulted in M tokens" (OpenRouter, LM Studio, vLLM and DeepSeek word it
   alike: "you requested M tokens", "your request has M input tokens"), or "Your input exceeds
   the context window of this model"; Anthropic's "prompt is too long: M tokens > N maximum";
   Gemini's "The input token count (M) exceeds the maximum number of tokens allowed (N)";
   llama.cpp's `type: "exceed_context_size_error"` (`n_prompt_tokens`, `n_ctx`) and its older
   "input is too large to process"; Ollama's "prompt too long; exceeded max context length by K
   tokens"; LM Studio's "Trying to keep the first M tokens when context the overflows"; and any
   HTTP 413. A vague "too long" is not an overflow: guessing would cut pages for nothing.
2. A refused key, a missing model or a rate limit (401, 403, 404, 429) is never an overflow,
   whatever its words: OpenAI's per-minute token limit also names "tokens".
3. Numbers are kept only when they make sense (requested above the limit); `excess_tokens` is
   requested minus limit, or the excess the provider names by itself (Ollama).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..base.errors import ProviderError
from ..base.sentences import Sentence, sentence
from ..base.wire_json import decode_or_none

_NEVER_OVERFLOW = (401, 403, 404, 429)


@dataclass(frozen=True)
class Overflow:
    """What the provider said about the overflow; every number is optional."""

    limit_tokens: int | None = None
    requested_tokens: int | None = None
    stated_excess_tokens: int | None = None

    @property
    def excess_tokens(self) -> int | None:
        if self.limit_tokens is not None and self.requested_tokens is not None:
            return self.requested_tokens - self.limit_tokens
        return self.stated_excess_tokens

    @property
    def has_numbers(self) -> bool:
        return self.excess_tokens is not None


class ContextOverflowError(ProviderError):
    """ProviderError code "context_overflow"; `overflow` holds the numbers the provider gave."""

    def __init__(self, spoken: Sentence, overflow: Overflow):
        super().__init__("context_overflow", spoken.english())
        self.sentence = spoken
        self.overflow = overflow


def too_long_for(model: str) -> Sentence:
    """The sentence when nothing can be shortened (no attached pages to cut)."""
    return sentence("py_error_too_long", model or sentence("py_error_this_model"))


def too_long_even_shortened(model: str) -> Sentence:
    """The sentence when the retry with the attached pages shortened overflowed too."""
    return sentence("py_error_too_long_shortened", model or sentence("py_error_this_model"))


_NUMBER = r"(\d[\d,]*)"
# Each pattern's groups: (limit, requested), (requested, limit) or (excess,); see _numbers_of.
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(pattern, re.S), groups)
    for pattern, groups in (
        # OpenAI, OpenRouter ("This endpoint's ..."), LM Studio, vLLM, DeepSeek.
        (
            rf"maximum context length is {_NUMBER} tokens.*?(?:resulted in|requested(?: about)?|request has)"
            rf" {_NUMBER}(?: input)? tokens",
            "limit,requested",
        ),
        (r"maximum context length is \d[\d,]* tokens", ""),
        (r"input exceeds the context window", ""),
        # Anthropic.
        (rf"prompt is too long: {_NUMBER} tokens > {_NUMBER} maximum", "requested,limit"),
        (r"prompt is too long", ""),
        # Gemini.
        (
            rf"input token count \({_NUMBER}\) exceeds the maximum number of tokens allowed \({_NUMBER}\)",
            "requested,limit",
        ),
        # llama.cpp server (the numbers come in the error object, see _numbers_in_fields).
        (r"exceeds the available context size", ""),
        (r"input is too large to process", ""),
        # Ollama.
        (rf"prompt too long; exceeded max context length by {_NUMBER} tokens", "excess"),
        (r"input length exceeds the context length", ""),
        # LM Studio.
        (
            rf"trying to keep the first {_NUMBER} tokens when context the overflows.*?context length of only"
            rf" {_NUMBER} tokens",
            "requested,limit",
        ),
        (r"tokens to keep from the initial prompt is greater than the context length", ""),
    )
]


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _error_object(body: Any) -> dict[str, Any]:
    """The `error` object of the usual shapes ({"error": {...}}, [{"error": {...}}]), or {}."""
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error: dict[str, Any] = body["error"]
        return error
    return {}


def _numbers_in_fields(error: dict[str, Any]) -> Overflow | None:
    """llama.cpp: `{type: "exceed_context_size_error", n_prompt_tokens, n_ctx}`."""
    requested, limit = error.get("n_prompt_tokens"), error.get("n_ctx")
    if isinstance(requested, int) and isinstance(limit, int):
        return _checked(Overflow(limit_tokens=limit, requested_tokens=requested))
    return None


def _checked(overflow: Overflow) -> Overflow:
    """Rule 3: numbers that do not describe an overflow are dropped."""
    excess = overflow.excess_tokens
    return overflow if excess is None or excess > 0 else Overflow()


def _numbers_of(match: re.Match[str], groups: str) -> Overflow:
    if not groups:
        return Overflow()
    values = dict(zip(groups.split(","), (_int(g) for g in match.groups()), strict=True))
    return _checked(
        Overflow(
            limit_tokens=values.get("limit"),
            requested_tokens=values.get("requested"),
            stated_excess_tokens=values.get("excess"),
        )
    )


def _in_words(text: str) -> Overflow | None:
    lowered = text.lower()
    for pattern, groups in _PATTERNS:
        match = pattern.search(lowered)
        if match:
            return _numbers_of(match, groups)
    return None


def context_overflow(status: int, body_text: str) -> Overflow | None:
    """Rule 1: the Overflow the provider reported with `status` and `body_text`, or None."""
    if status in _NEVER_OVERFLOW or status < 400:
        return None
    text = body_text or ""
    error = _error_object(decode_or_none(text))
    marked = (
        error.get("code") == "context_length_exceeded" or error.get("type") == "exceed_context_size_error"
    )
    worded = _in_words(text)
    if worded is not None and worded.has_numbers:
        return worded
    fields = _numbers_in_fields(error) if marked else None
    if fields is not None:
        return fields
    if marked or worded is not None or status == 413:
        return worded or Overflow()
    return None
