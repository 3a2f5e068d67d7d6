"""Anthropic's Messages API (Claude): `POST {baseUrl}/messages`, streamed as named SSE events.

Rules:
1. Headers: `x-api-key`, `anthropic-version: 2023-06-01`, and
   `anthropic-dangerous-direct-browser-access: true` (without it the API refuses a request that
   comes from a browser origin). Requests are compact, deterministic JSON, so the prefix of turn
   N+1's body is byte-identical to turn N's.
2. The provider's `systemPrompt` and any system records become the top-level `system`; the
   Messages API has no system role in `messages`.
3. `messages` alternate user / assistant as the API requires: consecutive records of one role
   (an attachment and then the question) are merged into one message with several content
   blocks; empty text is never sent. Images become base64 image source blocks from their data
   URLs (a plain URL becomes a URL source).
4. Prompt caching: one `cache_control: {type: "ephemeral"}` breakpoint on the last block of the
   stable prefix (everything before the newest record), so the next turn reads that prefix from
   Anthropic's cache.
5. The stream parser is sans-IO: `message_start` (input and cache usage), `content_block_delta`
   `text_delta` (text), `message_delta` (stop reason, output usage), `message_stop` (the end);
   `ping` and unknown events are ignored. An `error` event is a `ProviderError` mapped like the
   same error over HTTP; a body that ends before `message_stop` was cut ("stream_cut") and the
   partial text stays on the stream and the error.
6. Usage is reported in `margin.providers.usage`'s shape `{input, cachedInput, output}`: `input` counts
   every prompt token (uncached, cache reads and cache writes), as OpenAI's `prompt_tokens` does.
7. Error bodies are `{type: "error", error: {type, message}}`; the error type picks the code
   (`authentication_error` bad_key, `not_found_error` not_found, `rate_limit_error` rate_limited
   with `retry-after`, `overloaded_error` provider_down, "prompt is too long" context_overflow,
   other `invalid_request_error` bad_request) through the shared `http_error` sentences.
8. Replies are read through `margin.base.wire_json`: unreadable JSON and wrong shapes (an event that
   is not an object, a `delta` that is not an object, `text` or `stop_reason` that is not text, a
   model list item's `id` that is not text) are "provider_bad_reply"; absent fields are fine.
9. With the `run_python` tool offered (`tools`, margin.providers.tool_wire), the body carries `tools` and an
   answer's tool rounds go as `tool_use` / `tool_result` blocks; the stream's `tool_use` blocks
   (`content_block_start`, then `input_json_delta` pieces) are the parser's `tool_calls`.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote as url_quote

from ..base.errors import ProviderError
from ..base.sentences import Sentence, sentence
from ..base.sse import SSEEvent
from ..base.wire_json import NotJSON, decode, decode_or_none, member
from ..images.data_urls import parse_data_url
from ..platform.ports import HttpRequest, Platform, Transport
from ..sandbox.tool_loop import CallPieces, result_text
from ..storage.history import Record
from . import (
    DEFAULT_BASE_URLS,
    extract_error_message,
    host_of,
    http_error,
    normalize_base_url,
    part_text,
    quote,
    streaming,
)
from .tool_wire import Config, Offer, ToolOffer, flatten, object_arguments, rounds_of, text_or_none
from .usage import field, shape, total

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
CACHE_BREAKPOINT = {"type": "ephemeral"}
# `GET /models` pages followed at most (1000 models a page is far more than exist).
MODEL_PAGES = 5
MODEL_PAGE_SIZE = 1000

# HTTP status of each documented error type, for errors that arrive inside a 200 stream.
_STATUS_OF_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "timeout_error": 504,
    "api_error": 500,
    "overloaded_error": 529,
}


def source_of(provider: dict[str, Any]) -> Sentence:
    return sentence("py_error_source_anthropic", host_of(provider.get("baseUrl", "")))


def messages_url(base_url: str) -> str:
    return normalize_base_url(base_url) + "/messages"


def headers_for(provider: dict[str, Any], *, stream: bool) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "anthropic-version": API_VERSION,
        "anthropic-dangerous-direct-browser-access": "true",
    }
    if stream:
        headers["accept"] = "text/event-stream"
    key = (provider.get("apiKey") or "").strip()
    if key:
        headers["x-api-key"] = key
    return headers


# -- the request, sans-IO --------------------------------------------------------------------


def image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:"):
        image = parse_data_url(url)
        return {"type": "image", "source": {"type": "base64", "media_type": image.mime, "data": image.base64}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def content_blocks(record: Record) -> list[dict[str, Any]]:
    """A record's content as Messages API blocks, empty text left out (rule 3)."""
    if isinstance(record.content, str):
        return [{"type": "text", "text": record.content}] if record.content.strip() else []
    blocks: list[dict[str, Any]] = []
    for part in record.content:
        kind = part.get("type")
        if kind == "text" and (text := part_text(part)):
            blocks.append({"type": "text", "text": text})
        elif kind == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            if url:
                blocks.append(image_block(url))
    return blocks


def system_text(provider: dict[str, Any], records: list[Record]) -> str:
    pieces = [str(provider.get("systemPrompt") or "").strip()]
    for record in records:
        if record.role == "system":
            pieces.extend(b["text"] for b in content_blocks(record) if b["type"] == "text")
    return "\n\n".join(p for p in pieces if p)


def wire_messages(records: list[Record], tools: ToolOffer | None = None) -> list[dict[str, Any]]:
    """Alternating user / assistant messages (rule 3) with the cache breakpoint (rule 4); an
    answer's tool rounds as `tool_use` and `tool_result` blocks when tools are offered (rule 9)."""
    conversation = [r for r in (records if tools is not None else flatten(records)) if r.role != "system"]
    messages: list[dict[str, Any]] = []
    breakpoint_block: dict[str, Any] | None = None
    for position, record in enumerate(conversation):
        turns = anthropic_turns(record) if rounds_of(record) else [(record.role, content_blocks(record))]
        for role, blocks in turns:
            if not streaming.add_turn(messages, role, "content", blocks):
                continue
            if position < len(conversation) - 1:
                breakpoint_block = blocks[-1]
    if breakpoint_block is not None:
        breakpoint_block["cache_control"] = dict(CACHE_BREAKPOINT)
    return messages


def build_chat_request(
    provider: Config, records: list[Record], *, stream: bool, include_usage: bool = True, tools: Offer = None
) -> HttpRequest:
    """`include_usage` is accepted for the common signature: Anthropic always reports usage."""
    body: dict[str, Any] = {"model": provider["model"], "max_tokens": DEFAULT_MAX_TOKENS, "stream": stream}
    system = system_text(provider, records)
    if system:
        body["system"] = system
    if tools is not None:
        body.update(anthropic_tools(tools))
    body["messages"] = wire_messages(records, tools)
    return _post(provider, body, stream=stream)


def _post(provider: dict[str, Any], body: dict[str, Any], *, stream: bool) -> HttpRequest:
    return streaming.post(messages_url(provider["baseUrl"]), headers_for(provider, stream=stream), body)


# -- errors ----------------------------------------------------------------------------------


def _error_object(body: Any) -> dict[str, Any] | None:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]
    return None


def map_error(status: int, body: str, headers: dict[str, str], provider: dict[str, Any]) -> ProviderError:
    """The ProviderError for a failed request, in the shared sentences (rule 7)."""
    error = _error_object(decode_or_none(body))
    kind = str(error.get("type") or "") if error else ""
    if status == 529 or kind == "overloaded_error":
        said = extract_error_message(body)
        tail = sentence("py_error_provider_said", quote(said)) if said else ""
        return ProviderError.said("provider_down", "py_error_anthropic_overloaded", status, tail)
    if kind == "permission_error" or status == 403:
        said = extract_error_message(body)
        tail = sentence("py_error_provider_said", quote(said)) if said else ""
        return ProviderError.said("bad_key", "py_error_key_not_allowed", tail)
    return http_error(status, body, headers, provider)


# -- the stream, sans-IO ---------------------------------------------------------------------


class StreamParser(streaming.ParserBase):
    """SSE events of a Messages stream in, text pieces out (rule 5). `done`: message_stop arrived."""

    NOT_A_STREAM = ("py_error_not_anthropic_stream", DEFAULT_BASE_URLS["anthropic"])

    def __init__(self, provider: dict[str, Any]) -> None:
        super().__init__(source_of(provider))
        self.provider = provider
        self._usage: dict[str, Any] = {}

    @property
    def usage(self) -> dict[str, int] | None:
        """Rule 6; None until the provider reported any usage."""
        return normalize_usage(self._usage)

    def _take_usage(self, usage: Any) -> None:
        """`message_start` brings the input counts, `message_delta` the output: later values win."""
        if isinstance(usage, dict):
            self._usage.update({k: v for k, v in usage.items() if v is not None})

    def feed(self, event: SSEEvent) -> list[str]:
        if self.done or not event.data.strip():
            return []
        data = self.event_object(event.data)
        kind = member(data, "type", str, self.source) or event.event
        if kind == "error" or event.event == "error":
            raise self._stream_error(data)
        if kind == "message_start":
            message = member(data, "message", dict, self.source)
            self._take_usage(message.get("usage") if message else None)
        elif kind == "content_block_start":
            anthropic_block_start(self.calls, data.get("index"), data.get("content_block"))
        elif kind == "content_block_delta":
            delta = member(data, "delta", dict, self.source) or {}
            anthropic_delta(self.calls, data.get("index"), delta)
            if delta.get("type") == "text_delta":
                text = member(delta, "text", str, self.source, "delta")
                if text:
                    self.pieces.append(text)
                    return [text]
        elif kind == "message_delta":
            delta = member(data, "delta", dict, self.source) or {}
            reason = member(delta, "stop_reason", str, self.source, "delta")
            if reason:
                self.finish_reason = reason
            self._take_usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
        return []

    def _stream_error(self, data: dict[str, Any]) -> ProviderError:
        error = _error_object(data) or {}
        status = _STATUS_OF_ERROR_TYPE.get(str(error.get("type") or ""), 500)
        raised = map_error(status, streaming.dumps(data), {}, self.provider)
        raised.partial_text = self.text or None
        return raised


async def open_stream(
    transport: Transport, provider: Config, records: list[Record], *, tools: Offer = None
) -> streaming.SSEChatStream:
    """Send the request; raise the mapped ProviderError unless an event stream is coming."""
    request = build_chat_request(provider, records, stream=True, tools=tools)
    response = await streaming.open_events(transport, request, provider, map_error, _not_a_stream)
    return streaming.SSEChatStream(response, provider, StreamParser(provider))


def _not_a_stream(content_type: str, body: str) -> ProviderError:
    return ProviderError.said(
        "bad_stream", "py_error_not_a_stream_at", content_type, DEFAULT_BASE_URLS["anthropic"]
    )


# -- "Test connection" and the model list ----------------------------------------------------


async def test_connection(platform: Platform, provider: dict[str, Any]) -> dict[str, Any]:
    """One tiny non-streaming request; a sentence the options page shows as it is."""
    body = {
        "model": provider["model"],
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "Reply with OK."}],
    }
    request, where = _post(provider, body, stream=False), DEFAULT_BASE_URLS["anthropic"]
    api, usual = sentence("py_notice_api_anthropic"), sentence("py_notice_usual_is", where)
    return await streaming.connection_test(platform, request, provider, map_error, _is_message, api, usual)


def _is_message(answer: Any) -> bool:
    return isinstance(answer, dict) and answer.get("type") == "message"


def models_request(provider: dict[str, Any], after_id: str | None = None) -> HttpRequest:
    url = f"{normalize_base_url(provider['baseUrl'])}/models?limit={MODEL_PAGE_SIZE}"
    if after_id:
        url += f"&after_id={url_quote(after_id, safe='')}"
    headers = headers_for(provider, stream=False)
    del headers["content-type"]
    return HttpRequest(method="GET", url=url, headers=headers, body=None, timeout=streaming.HEADERS_TIMEOUT)


async def list_models(platform: Platform, provider: dict[str, Any]) -> list[str]:
    """Model ids from `GET /models`, following `has_more` / `last_id` for a few pages."""
    names: list[str] = []
    after_id: str | None = None
    for _ in range(MODEL_PAGES):
        text = await streaming.fetch_text(
            platform.transport, models_request(provider, after_id), provider, map_error, streaming.BODY_LIMIT
        )
        try:
            page = decode(text, source_of(provider))
        except NotJSON:
            page = None
        if not isinstance(page, dict) or not isinstance(page.get("data"), list):
            raise ProviderError.said(
                "bad_response", "py_error_no_model_list_anthropic", host_of(provider["baseUrl"])
            )
        for item in page["data"]:
            found = member(item, "id", str, source_of(provider), "data[]") if isinstance(item, dict) else None
            if found and found not in names:
                names.append(found)
        last_id = page.get("last_id")
        if not page.get("has_more") or not isinstance(last_id, str) or not last_id:
            break
        after_id = last_id
    return names


# -- the run_python tool on this wire (margin.providers.tool_wire, rules 1, 2 and 4) ----------


def anthropic_tools(offer: ToolOffer) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in offer.tools()
        ]
    }
    if offer.forbid:
        body["tool_choice"] = {"type": "none"}
    return body


def anthropic_turns(record: Record) -> list[tuple[str, list[dict[str, Any]]]]:
    """(role, blocks) pairs for the record's rounds and then its text."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for round_ in rounds_of(record):
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": round_["text"]}] if round_["text"].strip() else []
        )
        blocks.extend(
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": object_arguments(c)}
            for c in round_["calls"]
        )
        turns.append(("assistant", blocks))
        results = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": result_text(c)}
            for c in round_["calls"]
        ]
        turns.append(("user", results))
    if record.text.strip():
        turns.append(("assistant", [{"type": "text", "text": record.text}]))
    return turns


def anthropic_block_start(pieces: CallPieces, index: Any, block: Any) -> None:
    if isinstance(block, dict) and block.get("type") == "tool_use":
        pieces.begin(index, text_or_none(block.get("id")), text_or_none(block.get("name")))
        initial = block.get("input")
        if isinstance(initial, dict) and initial:
            pieces.add(index, json.dumps(initial, ensure_ascii=False))


def anthropic_delta(pieces: CallPieces, index: Any, delta: dict[str, Any]) -> None:
    partial = delta.get("partial_json")
    if delta.get("type") == "input_json_delta" and isinstance(partial, str) and pieces.has(index):
        pieces.add(index, partial)


# -- usage (margin.providers.usage, rule 2) ----------------------------------------------------------


def normalize_usage(raw: Any) -> dict[str, int] | None:
    """`input_tokens` counts only the uncached rest: input is it plus the cache's reads and writes."""
    if not isinstance(raw, dict):
        return None
    read = field(raw, "cache_read_input_tokens")
    written = field(raw, "cache_creation_input_tokens")
    fresh = field(raw, "input_tokens")
    return shape(total(fresh, read, written), read, field(raw, "output_tokens"))
